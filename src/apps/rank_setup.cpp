// Device probe, rank layout, policy construction and the agreed exit, shared by train and eval.
#include <optional>

#include "apps/rank_setup.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <thread>

#include "backend/blas_kernels.h"
#include "common/cpu_cores.h"
#include "cuda/device_probe.h"
#include "leap/version.h"
#include "model/checkpoint.h"
#include "model/generation_config.h"
#include "mpi/agree.h"
#include "rl/prompt_builder.h"
#include "sandbox/confinement.h"
#include "tokenizer/model_tokenizer.h"

namespace leap::app {

namespace {

// The backend (backend.name, on this rank's GPU for cuda) and the model, with a flat gradient
// only where one is used: training with replicas or ZeRO stage 1 (stage 2 streams it into shards).
Status build_model(const TrainConfig& c, int threads, int device, PolicyUse use, PolicyState* p) {
  const model::GradientBuffer gradient = use == PolicyUse::kTrain && c.optim.zero_stage < 2
                                             ? model::GradientBuffer::kFlat
                                             : model::GradientBuffer::kNone;
  if (c.model.path.empty())
    return invalid_input(
        "model.path is empty: give the policy folder (config.json + model.safetensors), "
        "e.g. --model models/demo");
  LEAP_ASSIGN_OR_RETURN(PolicyBackend be, make_policy_backend(c.app.run.backend, threads, device));
#ifdef LEAP_HAVE_CUDA
  p->cuda = std::move(be.cuda);
#endif
  p->backend = std::move(be.backend);
  // optim.master_weights = optimizer: the matrices in bf16 only, the fp32 masters in AdamW's
  // shard. An evaluation follows the same setting (it has no masters: its weights are bf16).
  const model::WeightStorage storage = c.optim.masters_in_optimizer()
                                           ? model::WeightStorage::kBf16Matrices
                                           : model::WeightStorage::kFp32;
  if (c.train.random_init) {
    LEAP_ASSIGN_OR_RETURN(auto cfg, model::read_folder_config(c.model.path));
    p->model = std::make_unique<model::Transformer>(cfg, *p->backend, gradient, storage);
    p->model->init_random(static_cast<uint64_t>(c.app.run.seed));
  } else {
    LEAP_ASSIGN_OR_RETURN(p->model,
                          model::load_model(c.model.path, *p->backend, gradient, storage));
  }
  p->model->set_logits_chunk_bytes(static_cast<size_t>(c.model.logits_chunk_mib) << 20);
  p->model->set_activation_checkpointing(c.train.activation_checkpointing);
  LEAP_ASSIGN_OR_RETURN(p->tokenizer, tokenizer::load_model_tokenizer(c.model.path));
  LEAP_RETURN_IF_ERROR(
      tokenizer::check_vocab_fits(p->model->config().vocab_size, *p->tokenizer, c.model.path));
  LEAP_ASSIGN_OR_RETURN(p->eos_ids, model::read_eos_ids(c.model.path, p->tokenizer->eos_id()));
  // The model's template's end of turn ends an answer too (a base model's EOS may not be it),
  // with stop strings or without: they end an answer earlier, never let it run past its turn.
  if (rl::resolve_chat_template(c.rl.prompt.chat_template, c.model.path) == "model") {
    const auto eot = rl::model_template_end_of_turn(c.model.path, *p->tokenizer);
    if (eot && std::find(p->eos_ids.begin(), p->eos_ids.end(), *eot) == p->eos_ids.end()) p->eos_ids.push_back(*eot);
  }
  return Status::ok();
}


// The template's end-of-turn strings that sampler.stop does not list. They end an answer beside
// the user's stop strings, never instead of them: without them a built-in template's turn
// ("### End", or chatml's <|im_end|> written as text) ran on into an invented next turn whenever
// sampler.stop was set.
std::vector<std::string> template_stops_not_given(const TrainConfig& c) {
  const std::vector<std::string> given = c.sampler.stop_strings();
  std::vector<std::string> out;
  for (const auto& s : rl::template_stop_strings(rl::resolve_chat_template(c.rl.prompt.chat_template, c.model.path)))
    if (std::find(given.begin(), given.end(), s) == given.end()) out.push_back(s);
  return out;
}

}  // namespace

Expected<mpi::Topology> lay_out_ranks(TrainConfig& c, const Logger& log) {
  auto dev = cuda::probe_devices();
  if (Status st = mpi::agree(dev.status(), MPI_COMM_WORLD); !st) return st;
  // sandbox.device = gpu without a GPU is an error here; auto stays auto for the layout, which
  // gives each sandbox rank a GPU of its own while there is one (placement.h).
  auto device = sandbox::resolve_device(c.sandbox.device, dev->count, dev->reason);
  if (Status st = mpi::agree(device.status(), MPI_COMM_WORLD); !st) return st;
  c.app.mpi.sandbox_device = c.sandbox.device;
  const bool cuda_policy = c.app.run.backend == "cuda";
  if (Status st = mpi::agree(check_backend_choice(c.app.run.backend, *dev), MPI_COMM_WORLD); !st)
    return st;
  auto topo = mpi::make_topology(MPI_COMM_WORLD, c.app.mpi, dev->count, cuda_policy);
  if (!topo) return topo.status();
  // The sandbox's workers time kernels on the GPU the layout gave this rank. Without sandbox
  // ranks, rank 0 verifies in-process on its own GPU (or the resolved device).
  const mpi::RankInfo& me = topo->self();
  if (me.role == mpi::Role::kSandbox) {
    c.sandbox.device = me.device >= 0 ? "gpu" : "cpu";
    c.sandbox.gpu_index = std::max(0, me.device);
  } else {
    c.sandbox.device = *device;
    c.sandbox.gpu_index = std::max(0, me.device);
  }
  log.info("leap {} (commit {}); {}", LEAP_VERSION, LEAP_GIT_COMMIT, cuda::describe(*dev));
  log.info("{}", mpi::format_layout(*topo));
  for (const auto& w : topo->warnings) log.warn("{}", w);
  log.info("sandbox workers: confinement {} (this node: {})", c.sandbox.confine,
           sandbox::probe_confinement().describe());
  // The sandbox's PTX interpreter does not use BLAS; the policy's CPU backend is GEMMs.
  if (c.app.run.backend == "cpu") {
    const std::string blas = backend::blas_kernel_warning();
    if (!blas.empty()) log.warn("{}", blas);
  }
  return topo;
}

int threads_per_rank(const TrainConfig& c, const mpi::Topology& topo) {
  if (c.app.run.threads > 0) return c.app.run.threads;
  // The ranks of this node by shared memory, not by hostname: containers often share one.
  int ranks_here = 0;
  for (const auto& r : topo.ranks) ranks_here += r.node == topo.self().node;
  return cores_for_rank(ranks_here);
}

namespace {

// How the policy ranks sum the gradient: a reducer (replicas), or ZeRO's collectives and, for
// stage 2, the shards the model's gradient streams into, or stage 1's overlap with the backward.
Status build_gradient_sum(const TrainConfig& c, const mpi::Topology& topo, PolicyState* p) {
  // optim.grad_comm_dtype; NCCL's bf16 staging holds one layer's gradient.
  const mpi::GradComm grad_comm = mpi::grad_comm(c.optim.grad_comm_dtype, p->model->layout().layer_floats());
  if (!p->zero) {
    LEAP_ASSIGN_OR_RETURN(
        p->reducer, mpi::make_grad_reducer(*p->backend, topo.role_comm, c.app.run.nccl_timeout_s, grad_comm));
  } else {
    // ZeRO sums through its own collectives (NCCL on cuda), never through a gradient reducer: an
    // armed reducer would all-reduce every layer once more. Stage 2 streams the gradient.
    LEAP_ASSIGN_OR_RETURN(p->shard_comm,
                          mpi::make_shard_collectives(*p->backend, topo.role_comm, c.app.run.nccl_timeout_s,
                                                      grad_comm));
    p->zero_shard = {p->zero.get(), p->shard_comm.get()};
    if (c.optim.zero_stage == 2) {
      p->sharded_grads =
          std::make_unique<mpi::ShardedGradients>(*p->zero, p->model->layout(), *p->backend, *p->shard_comm);
      p->model->set_gradient_stream(p->sharded_grads.get());
    } else {
      p->zero1_overlap = std::make_unique<mpi::Zero1Overlap>(*p->zero, p->model->layout(), *p->shard_comm);
      p->zero_shard.overlap = p->zero1_overlap.get();
    }
  }
  return Status::ok();
}

}  // namespace

Status build_policy(const TrainConfig& c, int threads, const mpi::Topology& topo, Status ready,
                    PolicyState* p, PolicyUse use) {
  if (ready) ready = build_model(c, threads, topo.self().device, use, p);
  if (ready && use == PolicyUse::kTrain) {
    // ZeRO stage 1: this rank keeps the moments of its shard only; stage 2: and of the gradient.
    std::optional<std::vector<std::pair<size_t, size_t>>> shard;
    if (c.optim.zero_stage >= 1) {
      int rank = 0, size = 1;
      MPI_Comm_rank(topo.role_comm, &rank);
      MPI_Comm_size(topo.role_comm, &size);
      p->zero = std::make_unique<mpi::ZeroPlan>(mpi::make_zero_plan(p->model->layout(), rank, size));
      shard = p->zero->owned();
    }
    p->optimizer = std::make_unique<model::AdamW>(c.optim, *p->model, shard);
  }
  LEAP_RETURN_IF_ERROR(mpi::agree(ready, topo.role_comm));
  if (use == PolicyUse::kTrain) LEAP_RETURN_IF_ERROR(build_gradient_sum(c, topo, p));
  mpi::PolicyReplicaOptions ro;
  ro.reducer = p->reducer.get();
  ro.sampler = c.sampler;
  for (const auto& s : template_stops_not_given(c)) ro.sampler.stop += (ro.sampler.stop.empty() ? "" : "||") + s;
  ro.eos_ids = p->eos_ids;
  ro.loss = c.rl.rl.loss_options(c.sampler.max_new_tokens);
  ro.micro_batch_seqs = c.train.micro_batch_seqs;
  ro.context_tokens = static_cast<int>(c.longest_sequence(p->model->config().max_position_embeddings));
  ro.zero = p->zero ? &p->zero_shard : nullptr;
  p->replica = std::make_unique<mpi::PolicyReplica>(*p->model, *p->tokenizer, p->optimizer.get(), ro);
  return Status::ok();
}

std::string describe_policy_state(const PolicyState& p) {
  const char* gradient = p.model->grads() ? "flat"
                         : p.model->gradient_stream() ? "streamed into ZeRO stage 2's shards"
                                                      : "none";
  const char* optimizer = !p.optimizer ? "none" : p.zero ? "this rank's shard" : "all";
  const char* weights =
      p.model->weight_storage() == model::WeightStorage::kBf16Matrices
          ? (p.optimizer ? "bf16 matrices, fp32 masters in the optimizer state" : "bf16 matrices")
          : "fp32";
  return fmt::format("{} parameters, weights {}, gradient {}, optimizer state {}",
                     p.model->num_params(), weights, gradient, optimizer);
}

Status build_prompt_format(const TrainConfig& c, const nlohmann::json& resume_state,
                           PolicyState* p, const Logger& log) {
  int64_t now = c.rl.prompt.now;
  if (now <= 0 && resume_state.is_object() && resume_state.contains("prompt_now")) {
    if (!resume_state["prompt_now"].is_number_integer())
      return invalid_input("the checkpoint's state.json: field 'prompt_now' must be an integer "
                           "(UTC seconds); set --prompt.now to override it");
    now = resume_state["prompt_now"].get<int64_t>();
  }
  if (now <= 0) now = static_cast<int64_t>(std::time(nullptr));
  LEAP_ASSIGN_OR_RETURN(
      rl::PromptFormat format,
      rl::make_prompt_format(c.rl.prompt.chat_template, c.model.path, *p->tokenizer, p->eos_ids,
                             rl::parse_multi_turn(c.rl.prompt.multi_turn), now));
  p->prompt_format = std::make_unique<rl::PromptFormat>(std::move(format));
  // An answer's stop is where the sampler stopped: sampler.stop when it is set, with the
  // template's end of turn beside it (as the replica's sampler has it).
  if (!c.sampler.stop.empty()) {
    std::vector<std::string> stops = c.sampler.stop_strings();
    for (auto& s : template_stops_not_given(c)) stops.push_back(std::move(s));
    p->prompt_format->set_stop_strings(std::move(stops));
  }
  log.info("prompts: {}", p->prompt_format->describe());
  if (p->prompt_format->options().multi_turn == rl::MultiTurn::kAppend) {
    if (auto d = p->prompt_format->append_difference())
      log.warn("prompts: this chat template renders earlier turns otherwise than they were sampled ({}); a "
               "later turn's prompt keeps them as sampled (prompt.multi_turn = append); prompt.multi_turn = "
               "rerender gives the template's own rendering instead",
               *d);
  }
  return Status::ok();
}

Status check_prompts_fit(const TrainConfig& c, const PolicyState& p, const tasks::Suite& suite,
                         const std::vector<int>& tasks, const std::string& what, const Logger& log) {
  const int64_t context = p.model->config().max_position_embeddings;
  const int64_t answer = c.sampler.max_new_tokens, limit = c.rl.prompt.max_prompt_tokens;
  const std::string model = "the model's context of " + std::to_string(context) +
                            " positions (max_position_embeddings in " + c.model.path + "/config.json)";
  if (answer > context - 64)
    return invalid_input(fmt::format("option 'sampler.max_new_tokens' = {} leaves no room for a prompt in {}: "
                                     "lower it to at most {} (half the context, {}, leaves as much for the prompt)",
                                     answer, model, context - 64, context / 2));
  if (limit >= context)
    return invalid_input(fmt::format("option 'prompt.max_prompt_tokens' = {} is not below {}: the sampler refuses a "
                                     "prompt that fills the context; lower it, or set 0 (the context less "
                                     "sampler.max_new_tokens)",
                                     limit, model));
  if (limit > 0 && limit + answer > context)
    log.warn("prompt.max_prompt_tokens {} + sampler.max_new_tokens {} exceed {}: an answer to a prompt longer than {} "
             "tokens is cut at the context",
             limit, answer, model, context - answer);
  if (tasks.empty())
    return invalid_input("the suite " + suite.path + " has no " + what + ": give a suite that has some (--tasks.suite)");
  const int64_t budget = mpi::prompt_budget(context, answer);
  const rl::PromptBuilder prompts(c.rl.prompt.options(budget), *p.prompt_format);
  int unfit = 0;
  size_t shortest = SIZE_MAX;
  std::string example;
  for (int i : tasks) {
    LEAP_ASSIGN_OR_RETURN(rl::BuiltPrompt built, prompts.build(suite.tasks[static_cast<size_t>(i)], {}));
    if (built.fits) continue;
    ++unfit;
    shortest = std::min(shortest, built.ids.size());
    if (example.empty()) example = suite.tasks[static_cast<size_t>(i)].id;
  }
  if (unfit == 0) return Status::ok();
  const std::string counts = fmt::format(
      "{} of the {} {} of {} have a turn-1 prompt longer than the prompt budget of {} tokens ({}, e.g. {})", unfit,
      tasks.size(), what, suite.path, prompts.options().max_prompt_tokens,
      limit > 0 ? "prompt.max_prompt_tokens" : "the context less sampler.max_new_tokens", example);
  // With prompt.max_prompt_tokens set, the budget is that limit; else the context less the answer.
  const std::string fix = limit > 0 ? fmt::format("raise prompt.max_prompt_tokens (at most {}, the context less "
                                                  "sampler.max_new_tokens, or answers are cut) or set it to 0",
                                                  context - answer)
                                    : "lower sampler.max_new_tokens";
  if (unfit == static_cast<int>(tasks.size()))
    return invalid_input(fmt::format("{}: no sample could start; the shortest needs {} tokens: {}", counts, shortest, fix));
  log.warn("{}: {} (to keep them: {})", counts,
           c.train.mode == "sft" ? "SFT leaves them out of its material" : "their samples stop before turn 1", fix);
  return Status::ok();
}

void record_prompt_now(const PolicyState& p, nlohmann::json* state) {
  if (p.prompt_format && p.prompt_format->options().render.now_unix_seconds)
    (*state)["prompt_now"] = *p.prompt_format->options().render.now_unix_seconds;
}

int finish_ranks(const Status& st, const Logger& log) {
  if (!st.is_ok() && log.rank() == 0) log.error("{}", st.message());
  MPI_Finalize();
  return st.exit_code();
}

}  // namespace leap::app
