// What every rank of a distributed `leap` command (train, eval) does before its loop: find the
// devices and lay out the ranks (policy and sandbox groups), build the policy replica on the
// policy ranks, and end with an exit code every rank agrees on. Each step fails on every rank
// with the same message, so no rank is left waiting in a collective.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "apps/train_config.h"
#include "common/log.h"
#include "common/status.h"
#include "mpi/topology.h"

namespace leap::app {

// After MPI_Init: probes the devices, resolves `sandbox.device` (written back into c), checks
// the backend choice, splits the ranks and prints the layout on rank 0. Collective over
// MPI_COMM_WORLD; an error is the same on every rank.
Expected<mpi::Topology> lay_out_ranks(TrainConfig& c, const Logger& log);

// Threads per rank: backend.threads, or this node's cores shared among its ranks.
int threads_per_rank(const TrainConfig& c, const mpi::Topology& topo);

// What a policy rank is built for: training (the model's gradient, the optimizer and the
// gradient's collectives) or sampling only (leap eval: the weights, and none of those, which at
// 7B in fp32 with ZeRO stage 0 are 28 GiB of gradient and 57 GiB of AdamW moments).
enum class PolicyUse { kTrain, kSample };

// Collective over the policy ranks (`ready` is what came before on this rank): the model, then,
// once every policy rank has one and `use` is kTrain, the gradient reducer or ZeRO's collectives
// (NCCL's setup is collective), then the replica that samples (and trains) it.
Status build_policy(const TrainConfig& c, int threads, const mpi::Topology& topo, Status ready,
                    PolicyState* p, PolicyUse use);

// What a built policy rank holds besides its weights, read from what build_policy made (for the
// start-up log): "gradient none|flat|streamed into ZeRO stage 2's shards, optimizer state
// none|all|this rank's shard".
std::string describe_policy_state(const PolicyState& p);

// Rank 0: how conversations become prompt ids (prompt.chat_template, prompt.multi_turn) with the
// policy's tokenizer. strftime_now's time is prompt.now, else the one `resume_state` recorded
// (prompt_now), else now; record_prompt_now() puts it into a checkpoint's state.
Status build_prompt_format(const TrainConfig& c, const nlohmann::json& resume_state,
                           PolicyState* p, const Logger& log);
void record_prompt_now(const PolicyState& p, nlohmann::json* state);

// Rank 0, after build_prompt_format: whether prompts and answers fit the model's context, so that
// a config that can never give a sample is refused at the start (exit 2), not after a run of
// dropped samples or a sampler's refusal minutes in:
//  - sampler.max_new_tokens must leave room for a prompt (mpi::prompt_budget's 64 positions);
//  - prompt.max_prompt_tokens must be below the context (the sampler refuses a prompt that fills
//    it); with the answers above the context, answers are cut there (a warning);
//  - the turn-1 prompts of `tasks` (`what` names them: "train tasks", "heldout tasks"): none
//    fitting the prompt budget, or no task at all, is an error; some not fitting, a warning
//    (their samples stop before turn 1).
Status check_prompts_fit(const TrainConfig& c, const PolicyState& p, const tasks::Suite& suite,
                         const std::vector<int>& tasks, const std::string& what, const Logger& log);

// Ends the run with a status every rank agrees on: rank 0 says it once, every rank exits with
// its code.
int finish_ranks(const Status& st, const Logger& log);

}  // namespace leap::app
