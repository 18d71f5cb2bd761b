// The GPU check's op parity (cuda/check/op_parity.h) on the CPU backend, against the reference
// benchmarks/gpu/op_reference.py makes with Debian's PyTorch (a ctest fixture). The CPU backend
// defines what every op means, so this checks, without a GPU, that the reference follows the
// interface's conventions (RoPE's rotate-half tables, the KV-cache layout, AdamW's update, ...)
// and that every comparison passes where it should: on a GPU only the CUDA backend can differ.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/cpu_backend.h"
#include "cuda/check/op_parity.h"

namespace leap::cuda::check {
namespace {

TEST(OpParityOnCpu, EveryOpMatchesPyTorchsReference) {
  const char* dir = std::getenv("LEAP_OP_REFERENCE_DIR");
  ASSERT_NE(dir, nullptr) << "LEAP_OP_REFERENCE_DIR is set by ctest (fixture op_reference)";
  auto ref = ReferenceDir::load(dir);
  ASSERT_TRUE(ref.has_value()) << ref.status().message();
  backend::CpuBackend cpu(2);
  JsonRecord record;
  OpComparison cmp{&record};
  Status st = compare_ops(*ref, cpu, cmp);
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::printf("%s\n", record.str().c_str());
  EXPECT_TRUE(cmp.all_pass) << record.str();
  // Every op family reported (a case silently skipped would pass too).
  for (const char* op : {"matmul_forward", "rmsnorm_dweight", "swiglu_dinp", "attention_dq",
                         "logprob_dlogits", "logprob_dlogits_tempered", "rope_dinp", "embedding_dwte",
                         "adamw_param_update", "sum_squares", "kv_cache_write_k", "attention_decode"}) {
    EXPECT_NE(record.str().find(std::string("\"") + op + "\""), std::string::npos) << op;
  }
}

}  // namespace
}  // namespace leap::cuda::check
