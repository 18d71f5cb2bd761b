// MpiBf16Sum (see bf16_sum.h).
#include "mpi/bf16_sum.h"

#include <algorithm>

#include "common/bf16.h"
#include "common/check.h"

namespace leap::mpi {
namespace {

// MPI_User_function: inout[i] = bf16(in[i] + inout[i]), the sum taken in fp32.
void add_bf16(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}

}  // namespace

MpiBf16Sum::MpiBf16Sum() { MPI_CHECK(MPI_Op_create(&add_bf16, /*commute=*/1, &op_)); }

MpiBf16Sum::~MpiBf16Sum() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && op_ != MPI_OP_NULL) MPI_Op_free(&op_);
}

void MpiBf16Sum::allreduce(float* data, size_t n, MPI_Comm comm, size_t chunk) const {
  LEAP_CHECK(chunk > 0 && chunk <= static_cast<size_t>(INT32_MAX), "bf16 all-reduce chunk " << chunk);
  std::vector<uint16_t> bits(std::min(n, chunk));
  for (size_t off = 0; off < n; off += chunk) {
    const size_t count = std::min(chunk, n - off);
    f32_to_bf16(data + off, count, bits.data());
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bits.data(), static_cast<int>(count), MPI_UINT16_T, op_, comm));
    bf16_to_f32(bits.data(), count, data + off);
  }
}

}  // namespace leap::mpi
