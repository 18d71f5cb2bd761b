// `leap_gpu_check ops --ref=DIR`: the CUDA backend's ops against PyTorch (float64 on this
// machine, from benchmarks/gpu/op_reference.py); the comparisons and their bounds are in
// op_parity.h, which a CPU test also runs on the CPU backend.
#include "cuda/check/checks.h"
#include "cuda/check/op_parity.h"
#include "cuda/check/reference_dir.h"
#include "cuda/cuda_backend.h"

namespace leap::cuda::check {

Expected<JsonRecord> run_ops(const CheckArgs& args) {
  LEAP_ASSIGN_OR_RETURN(auto ref, ReferenceDir::load(args.str("ref")));
  LEAP_ASSIGN_OR_RETURN(auto ctx, CudaContext::create(0, size_t{32} << 20));
  CudaBackend be(*ctx);
  JsonRecord r;
  OpComparison cmp{&r};
  LEAP_RETURN_IF_ERROR(compare_ops(ref, be, cmp));
  r.set("reference", "PyTorch float64 (benchmarks/gpu/op_reference.py)");
  if (!cmp.all_pass)
    r.mark_failed();
  else
    r.set("pass", true);
  return r;
}

}  // namespace leap::cuda::check
