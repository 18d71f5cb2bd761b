// The table of checks: name, help, options (declared once; see check_args.h) and function.
#include "cuda/check/checks.h"

namespace leap::cuda::check {

std::vector<CheckSpec> all_checks() {
  std::vector<CheckSpec> out;
  out.push_back(
      {"info", "device, driver, libraries, peak figures, what this build has", {}, run_info});
  out.push_back({"ops",
                 "CUDA backend ops against PyTorch's float64 (benchmarks/gpu/op_reference.py)",
                 {{"ref", "", "folder op_reference.py wrote"}},
                 run_ops});
  out.push_back({"nccl",
                 "a one-rank NCCL communicator: grouped in-place sums and ZeRO's reduce-scatter and all-gather, their time",
                 {{"floats", "124000000", "gradient size (floats)"}},
                 run_nccl});
  out.push_back({"gemm",
                 "cuBLASLt bf16 GEMM throughput on the ~124M model's layer shapes",
                 {{"tokens", "8192", "rows N = B*T"}},
                 run_gemm});
#ifdef LEAP_CHECK_HAS_MODEL
  out.push_back(
      {"train",
       "training step of a ~124M-parameter (or 1.5B) model: time, tokens/s, MFU, memory against "
       "leap plan",
       {{"config", "", "a model's config.json (random weights); empty: the ~124M benchmark model"},
        {"batch", "8", "sequences B"},
        {"seq", "1024", "sequence length T"},
        {"steps", "5", "timed steps (after one warm-up)"},
        {"peak_tflops", "989", "dense bf16 peak of the GPU (H100/H200 SXM: 989)"},
        {"masters", "replica",
         "replica (fp32 weights) or optimizer (bf16 matrices, fp32 masters apart)"}},
       run_train});
  out.push_back({"decode",
                 "KV-cache decode at batch 64: time per token, against the HBM bound",
                 {{"batch", "64", "sequences decoded together"},
                  {"prompt", "128", "prompt tokens per sequence"},
                  {"tokens", "128", "decode steps timed"},
                  {"hbm_tb_s", "4.8", "HBM bandwidth of the GPU in TB/s (H200: 4.8)"}},
                 run_decode});
#endif
#ifdef LEAP_CHECK_HAS_SANDBOX
  const std::vector<ArgSpec> references = {{"suite", "tasks/level1.jsonl", "task suite (JSONL)"},
                                            {"tasks", "8", "how many tasks of the suite"}};
  out.push_back({"executor", "the sandbox's GPU executor: verify and time level-1 references",
                 references, run_executor});
  out.push_back({"executor_confined",
                 "the same in a process confined as a GPU sandbox worker (Landlock, seccomp, user)",
                 references, run_executor_confined});
#endif
  return out;
}

std::vector<AbsentCheck> absent_checks() {
  std::vector<AbsentCheck> out;
#ifndef LEAP_CHECK_HAS_MODEL
  const char* model =
      "this build has no model library (the model tier needs nlohmann_json: "
      "stage it with scripts/stage_gpu_deps.sh)";
  out.push_back({"train", model});
  out.push_back({"decode", model});
#endif
#ifndef LEAP_CHECK_HAS_SANDBOX
  const char* sandbox =
      "this build has no sandbox (the sandbox tier needs nlohmann_json and "
      "Boost.program_options: stage them with scripts/stage_gpu_deps.sh)";
  out.push_back({"executor", sandbox});
  out.push_back({"executor_confined", sandbox});
#endif
  return out;
}

}  // namespace leap::cuda::check
