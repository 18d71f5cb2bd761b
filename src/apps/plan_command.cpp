// `leap plan`: the memory one policy rank of a `leap train` run needs, by kind, and whether it
// fits one device, before any job is submitted. It reads the run's config (the same INI as
// `leap train`) and the model folder's config.json only, so it runs on any machine, for any
// model size. The figures come from model::plan_policy_rank (memory_plan.h), which follows the
// allocations the code makes; the sandbox ranks are listed apart, with the largest task's
// buffers, since their memory is one job per worker and not the policy's. When the plan does not
// fit, it lists the memory settings the run does not use yet, what each would save and what all
// of them together would give.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/subcommands.h"
#include "apps/train_config.h"
#include "model/checkpoint.h"
#include "model/memory_plan.h"
#include "model/reference_policy.h"
#include "mpi/coordinator.h"
#include "tasks/inputs.h"
#include "tasks/suite.h"

namespace leap::app {
namespace {

constexpr const char* kUsage =
    "[--config FILE.ini] --model.path DIR [--for train|eval] [--ranks N] [--gpu-memory-gib G] "
    "[--format table|json]";

struct PlanOptions {
  std::string use = "train";
  int ranks = 1;
  double gpu_memory_gib = 79;
  std::string format = "table";
  void declare(OptionSet& o) {
    o.add("plan.for", &use, std::string("train"),
          "What the policy ranks run: train (leap train, with the config's train.mode) or eval "
          "(leap eval: the weights, the prefill of a micro-batch of prompts, the KV cache and "
          "workspace; no gradient, optimizer state or KL reference).",
          {.choices = {"train", "eval"}, .alias = "for"});
    o.add("plan.ranks", &ranks, 1,
          "Policy ranks of the job: with optim.zero_stage = 1 each keeps 1/N of AdamW's moments, "
          "with 2 also 1/N of the gradient; weights are full replicas on every rank.",
          {.min = 1, .max = 1000000, .alias = "ranks"});
    o.add("plan.gpu_memory_gib", &gpu_memory_gib, 79.0,
          "Memory of one policy rank's device in GiB (a GPU's, or what a CPU rank may use): the "
          "plan fits when its total is at most this. nvidia-smi's total, less a little for the CUDA "
          "context: an 80 GB H100 shows 81559 MiB (79.6 GiB), an H200 143771 MiB (140.4 GiB).",
          {.min = 0.0, .max = 1e6, .alias = "gpu-memory-gib"});
    o.add("plan.format", &format, std::string("table"), "table or json.",
          {.choices = {"table", "json"}, .alias = "format"});
  }
};

// The largest task of the suite: the bytes of its buffers at the sizes the sandbox runs
// (GPU sizes on a GPU sandbox, interpreter sizes on a CPU one).
struct LargestTask {
  std::string id;
  uint64_t bytes = 0;
};

Expected<LargestTask> largest_task(const std::string& suite_path, bool gpu) {
  LEAP_ASSIGN_OR_RETURN(auto suite, tasks::load_suite(suite_path));
  LargestTask best;
  for (const auto& task : suite.tasks) {
    const auto& params = tasks::params_for(task, gpu ? tasks::SizeSet::kGpu : tasks::SizeSet::kCpu);
    uint64_t bytes = 0;
    for (const auto& b : task.buffers) {
      LEAP_ASSIGN_OR_RETURN(int64_t n, tasks::buffer_elements(b, params));
      bytes += static_cast<uint64_t>(n) * tasks::dtype_size(b.dtype);
    }
    if (bytes > best.bytes) best = {task.id, bytes};
  }
  return best;
}

std::string gib(uint64_t bytes) { return fmt::format("{:.2f}", bytes / 1073741824.0); }
// What going from `before` to `after` bytes saves, in GiB, negative if it costs more.
std::string gib_saved(uint64_t before, uint64_t after) {
  return fmt::format("{:.2f}", (static_cast<double>(before) - static_cast<double>(after)) / 1073741824.0);
}

// A setting that lowers the plan, as the option a user passes, and its change to a plan input.
struct Remedy {
  std::string option, value;
  std::function<void(model::PlanInput&)> apply;
  uint64_t total = 0;  // the plan's total with this remedy alone
};

// The memory settings the run does not use yet, each applied alone to `in`: what a user can
// change without touching the model, the sequences or the training itself (rl.kl_beta) when the
// plan does not fit.
uint64_t mib(int64_t n) { return static_cast<uint64_t>(std::max<int64_t>(0, n)) << 20; }

// A sandbox rank's caches at their bounds (docs/design.md, the sandbox's Cache): the supervisor's
// reference outputs and each worker's trial inputs, host memory beside the worker processes.
uint64_t sandbox_cache_bytes(const sandbox::SandboxConfig& s) {
  return mib(s.reference_cache_mb) + static_cast<uint64_t>(std::max(0, s.workers)) * mib(s.input_cache_mb);
}

std::vector<Remedy> remedies(const model::PlanInput& in) {
  std::vector<Remedy> out;
  const uint64_t now = model::plan_policy_rank(in).total;
  auto add = [&](std::string option, std::string value, std::function<void(model::PlanInput&)> apply) {
    model::PlanInput changed = in;
    apply(changed);
    const uint64_t total = model::plan_policy_rank(changed).total;
    // Not every setting lowers every plan: ZeRO-2's two layer buffers can outweigh a small
    // model's shard, and a bf16 reference's fp32 scratch a small model's copy.
    if (total < now)
      out.push_back({std::move(option), std::move(value), std::move(apply), total});
  };
  if (in.trains && in.zero_stage < 2 && in.policy_ranks > 1)
    add("optim.zero_stage", "2", [](model::PlanInput& x) { x.zero_stage = 2; });
  if (!in.masters_in_optimizer && in.backend == "cuda")
    add("optim.master_weights", "optimizer",
        [](model::PlanInput& x) { x.masters_in_optimizer = true; });
  if (!in.activation_checkpointing)
    add("train.activation_checkpointing", "true", [](model::PlanInput& x) { x.activation_checkpointing = true; });
  if (in.micro_batch_seqs > 1)
    add("train.micro_batch_seqs", "1", [](model::PlanInput& x) { x.micro_batch_seqs = 1; });
  if (in.generates && in.generation_batch_seqs > std::max(1, in.micro_batch_seqs))
    add("sampler.batch_seqs", "0", [](model::PlanInput& x) { x.generation_batch_seqs = 0; });
  if (in.kl_reference && !in.kl_reference_bf16 && model::bf16_storable(model::ParameterLayout(in.model)))
    add("rl.kl_reference_dtype", "bf16", [](model::PlanInput& x) { x.kl_reference_bf16 = true; });
  if (!in.generates) return out;  // the rest is the sampler's
  if (!in.kv_bf16) add("sampler.kv_cache_dtype", "bf16", [](model::PlanInput& x) { x.kv_bf16 = true; });
  if (in.kv_keep_sequences > 0)
    add("sampler.kv_keep_sequences", "0", [](model::PlanInput& x) { x.kv_keep_sequences = 0; });
  return out;
}

}  // namespace

int run_plan(const std::vector<std::string>& args) {
  OptionSet opts;
  TrainConfig c;
  c.declare(opts);
  PlanOptions p;
  p.declare(opts);
  if (int rc = parse_or_exit("plan", kUsage, args, opts); rc >= 0) return rc;
  if (c.model.path.empty())
    return report_error("plan", invalid_input("model.path is not set: pass --model.path DIR (a folder "
                                              "with config.json; the weights are not read)"));
  auto mc = model::read_folder_config(c.model.path);
  if (!mc) return report_error("plan", mc.status());

  // The longest sequences a run makes: prompts fill the budget train's prompt builder gets
  // (the same call as `leap train`), then the answer follows.
  const int64_t context = mc->max_position_embeddings, new_tokens = c.sampler.max_new_tokens;
  const int64_t prompt = c.longest_prompt(context);
  model::PlanInput in;
  in.model = *mc;
  in.backend = c.app.run.backend;
  in.micro_batch_seqs = c.train.micro_batch_seqs;
  in.generation_batch_seqs = c.sampler.batch_seqs;
  in.prompt_tokens = prompt;
  in.max_new_tokens = new_tokens;
  in.kv_block_tokens = c.sampler.kv_block_tokens;
  in.kv_keep_sequences = c.sampler.reuse_kv ? c.sampler.kv_keep_sequences : 0;
  in.kv_bf16 = model::kv_cache_dtype(c.sampler, in.backend == "cuda") == backend::KvDtype::kBf16;
  in.train_tokens = std::min(context, prompt + new_tokens);
  // SFT samples nothing and loads no KL reference (train_command.cpp): neither is counted. An
  // evaluation samples and trains nothing.
  in.trains = p.use == "train";
  in.generates = !in.trains || c.train.mode != "sft";
  in.kl_reference = in.trains && in.generates && c.rl.rl.kl_beta > 0;
  in.kl_reference_bf16 =
      model::reference_dtype(c.rl.rl.kl_reference_dtype, in.backend == "cuda") == model::ReferenceDtype::kBf16 &&
      model::bf16_storable(model::ParameterLayout(in.model));
  in.logits_chunk_bytes = static_cast<uint64_t>(c.model.logits_chunk_mib) << 20;
  in.activation_checkpointing = c.train.activation_checkpointing;
  in.zero_stage = in.trains ? c.optim.zero_stage : 0;  // an evaluation builds no shard
  in.policy_ranks = p.ranks;
  in.grad_comm_bf16 = c.optim.grad_comm_dtype == "bf16";
  // As rank_setup.cpp builds it: an evaluation keeps the weights as training would.
  in.masters_in_optimizer = c.optim.masters_in_optimizer();
  const model::MemoryPlan plan = model::plan_policy_rank(in);
  const int generation_batch = std::max(1, in.generation_batch_seqs > 0 ? in.generation_batch_seqs : in.micro_batch_seqs);
  const uint64_t limit = static_cast<uint64_t>(p.gpu_memory_gib * 1073741824.0);
  const bool fits = plan.total <= limit;

  // When it does not fit: what each unused memory setting would save, and all of them together.
  const std::vector<Remedy> fixes = fits ? std::vector<Remedy>{} : remedies(in);
  model::PlanInput all = in;
  for (const Remedy& r : fixes) r.apply(all);
  const uint64_t all_total = model::plan_policy_rank(all).total;

  const bool sandbox_gpu = c.sandbox.device == "gpu";
  auto largest = largest_task(c.tasks.suite, sandbox_gpu);

  if (p.format == "json") {
    nlohmann::ordered_json j;
    j["model"] = {{"path", c.model.path}, {"model_type", mc->model_type}, {"parameters", plan.parameters}};
    j["for"] = p.use;
    j["backend"] = in.backend;
    j["policy_ranks"] = p.ranks;
    // An evaluation builds no ZeRO shard and trains no sequence: what only training has is left
    // out, rather than reported with values no evaluation uses.
    if (in.trains) j["zero_stage"] = in.zero_stage;
    j["master_weights"] = in.masters_in_optimizer ? "optimizer" : "replica";
    j["activation_checkpointing"] = in.activation_checkpointing;  // the prefill's arena too
    j["micro_batch_seqs"] = in.micro_batch_seqs;
    j["generation_batch_seqs"] = generation_batch;
    if (in.trains) j["train_tokens"] = in.train_tokens;
    j["prompt_tokens"] = in.prompt_tokens;
    j["max_new_tokens"] = in.max_new_tokens;
    nlohmann::ordered_json per_rank;
    for (const auto& item : plan.items) per_rank[item.kind] = item.bytes;
    per_rank["total"] = plan.total;
    j["per_rank"] = per_rank;
    j["device_bytes"] = limit;
    j["fits"] = fits;
    if (!fits) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const Remedy& r : fixes)
        list.push_back({{"option", r.option}, {"value", r.value}, {"total", r.total},
                        {"saves", static_cast<int64_t>(plan.total) - static_cast<int64_t>(r.total)}, {"fits", r.total <= limit}});
      j["remedies"] = list;
      j["with_all_remedies"] = {{"total", all_total},
                                {"saves", static_cast<int64_t>(plan.total) - static_cast<int64_t>(all_total)},
                                {"fits", all_total <= limit}};
    }
    nlohmann::ordered_json sb = {{"ranks", c.app.mpi.sandbox_ranks},
                                 {"per_node", c.app.mpi.sandbox_per_node},
                                 {"workers_per_rank", c.sandbox.workers},
                                 {"device", c.sandbox.device}};
    sb["cache_bytes"] = sandbox_cache_bytes(c.sandbox);
    if (largest) sb["largest_task"] = {{"id", largest->id}, {"buffer_bytes", largest->bytes}};
    else sb["largest_task_error"] = largest.status().message();  // the table prints it too
    j["sandbox"] = sb;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  if (in.trains)
    std::printf(
        "memory plan of one policy rank: %s (%s, %llu parameters), backend %s, %d policy "
        "rank(s), ZeRO stage %d, fp32 master weights %s\n",
        c.model.path.c_str(), mc->model_type.c_str(),
        static_cast<unsigned long long>(plan.parameters), in.backend.c_str(), p.ranks,
        in.zero_stage,
        in.masters_in_optimizer ? "in the optimizer state" : "as the weights (a replica)");
  else
    std::printf("memory plan of one policy rank of leap eval: %s (%s, %llu parameters), backend %s\n",
                c.model.path.c_str(), mc->model_type.c_str(),
                static_cast<unsigned long long>(plan.parameters), in.backend.c_str());
  std::printf("sequences: micro-batches of %d, decoding batches of %d, up to %lld tokens (prompts up to "
              "%lld, answers up to %lld)\n\n",
              in.micro_batch_seqs, generation_batch, static_cast<long long>(in.train_tokens),
              static_cast<long long>(in.prompt_tokens), static_cast<long long>(in.max_new_tokens));
  std::printf("  %-16s %16s %10s  %s\n", "kind", "bytes", "GiB", "what");
  for (const auto& item : plan.items)
    std::printf("  %-16s %16llu %10s  %s\n", item.kind.c_str(), static_cast<unsigned long long>(item.bytes),
                gib(item.bytes).c_str(), item.note.c_str());
  std::printf("  %-16s %16llu %10s\n\n", "total", static_cast<unsigned long long>(plan.total),
              gib(plan.total).c_str());
  if (in.backend == "cuda")
    std::printf("not counted: the CUDA context and loaded kernels, and NCCL's own buffers (set up outside "
                "LEAP's allocations; not measured here, about a GiB or two): keep that margin below the device's "
                "memory in --gpu-memory-gib\n");
  if (in.zero_stage >= 1 && in.backend != "cpu")
    std::printf("note: optim.zero_stage = %d on backend.name = %s uses NCCL's reduce-scatter and all-gather, "
                "which have run on one GPU only, one rank (the same steps are checked over MPI on the CPU)\n",
                in.zero_stage, in.backend.c_str());
  if (in.masters_in_optimizer && in.backend != "cpu")
    std::printf(
        "note: optim.master_weights = optimizer on backend.name = %s keeps the matrices in bf16 "
        "only (CUDA virtual memory), which has not run on a GPU (the same steps are checked on "
        "the CPU)\n",
        in.backend.c_str());
  if (fits)
    std::printf("fits: yes, %s of %s GiB per device\n", gib(plan.total).c_str(), gib(limit).c_str());
  else
    std::printf("fits: NO, %s GiB over the %s GiB of a device (--gpu-memory-gib)\n",
                gib(plan.total - limit).c_str(), gib(limit).c_str());
  if (!fits && !fixes.empty()) {
    std::printf("settings that lower it (GiB per rank; each alone, then all together):\n");
    for (const Remedy& r : fixes)
      std::printf("  --%-38s saves %8s  -> %8s%s\n", (r.option + " " + r.value).c_str(),
                  gib_saved(plan.total, r.total).c_str(), gib(r.total).c_str(), r.total <= limit ? "  fits" : "");
    std::printf("  %-40s saves %8s  -> %8s  %s\n", "all of them", gib_saved(plan.total, all_total).c_str(),
                gib(all_total).c_str(),
                all_total <= limit ? "fits" : fmt::format("still {} GiB over", gib(all_total - limit)).c_str());
  }
  if (!fits && (fixes.empty() || all_total > limit))
    std::printf("%s: %sshorter sequences (prompt.max_prompt_tokens, sampler.max_new_tokens)%s or a device "
                "with more memory\n",
                fixes.empty() ? "no memory setting of the run is left to lower it; what would" : "beyond these",
                in.trains ? "more policy ranks (with optim.zero_stage 2), " : "",
                in.trains ? ", rl.kl_beta 0 (no KL reference)" : "");
  // mpi.sandbox_per_node, when set, places that many on every node (sandbox_ranks is then unused).
  const std::string sandbox_ranks = c.app.mpi.sandbox_per_node > 0
                                        ? fmt::format("{} rank(s) per node", c.app.mpi.sandbox_per_node)
                                        : fmt::format("{} rank(s)", c.app.mpi.sandbox_ranks);
  std::printf("sandbox: %s x %d worker(s) on %s, apart from the policy's devices", sandbox_ranks.c_str(),
              c.sandbox.workers, c.sandbox.device.c_str());
  if (largest)
    std::printf("; the largest task (%s) has %s MiB of buffers per job\n", largest->id.c_str(),
                fmt::format("{:.1f}", largest->bytes / 1048576.0).c_str());
  else
    std::printf(" (suite %s not read: %s)\n", c.tasks.suite.c_str(), largest.status().message().c_str());
  std::printf("sandbox host memory: up to %s GiB a sandbox rank for caches: reference outputs %s GiB "
              "(sandbox.reference_cache_mb), its workers' trial inputs %d x %s GiB (sandbox.input_cache_mb)\n",
              gib(sandbox_cache_bytes(c.sandbox)).c_str(), gib(mib(c.sandbox.reference_cache_mb)).c_str(),
              c.sandbox.workers, gib(mib(c.sandbox.input_cache_mb)).c_str());
  return 0;
}

}  // namespace leap::app
