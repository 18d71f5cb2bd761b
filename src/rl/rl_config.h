// The [rl], [dcp] and [prompt] sections of the config, declared once each (common/config.h) and
// turned into the typed options of rewards.h, advantages.h, grpo_loss.h, dcp.h and
// prompt_builder.h. Per-option ranges and choices are checked by OptionSet::parse; validate()
// adds the checks that involve two options. After both return OK the conversions cannot fail.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "rl/advantages.h"
#include "rl/dcp.h"
#include "rl/grpo_loss.h"
#include "rl/prompt_builder.h"
#include "rl/rewards.h"

namespace leap::rl {

struct RlConfig {
  int group_size = 8;
  int max_turns = 3;
  std::string reward = "rank";
  double noise_band = 0.05;
  bool failure_severity = false;
  bool token_tiebreak = true;
  std::string credit = "trajectory";
  double gamma = 0.4;
  bool std_normalize = true;
  double std_floor = 1e-2;
  bool loo = false;
  double clip_eps_low = 0.2;
  double clip_eps_high = 0.28;
  double dual_clip = 0;
  std::string loss_agg = "token-mean";
  int64_t loss_norm_tokens = 0;  // 0: the sampler's max new tokens, resolved by the caller
  double kl_beta = 0;
  std::string kl_reference;  // "": the run's initial weights
  std::string kl_reference_dtype = "auto";  // auto | fp32 | bf16 (model/reference_policy.h)
  int ppo_epochs = 1;
  int mini_batches = 1;
  bool train_trajectory_once = true;
  bool resample_zero_variance = false;
  int resample_max_groups = 0;  // 0: train.batch_tasks
  std::string pipeline = "stream";  // stream | sync (mpi/stream_runner.h, mpi/turn_runner.h)
  bool overlap_training = true;  // stream only: train finished groups during the rollout
  bool speculative_turns = true;  // stream only: idle ranks start turn 2 before DCP decides
  bool rollout_ahead = false;  // stream only: idle ranks start the next step's turn 1

  void declare(OptionSet& opts);
  Status validate() const;
  RewardOptions reward_options() const;
  AdvantageOptions advantage_options() const;
  // max_new_tokens stands in for loss_norm_tokens when that is 0.
  LossOptions loss_options(int64_t max_new_tokens) const;
};

struct DcpConfig {
  std::string mode = "static";
  double easy_below = 0.5;
  double hopeless_at = 1.0;
  int64_t budget = 0;
  double dead_band = 0.1;
  double adaptive_step = 0.1;

  void declare(OptionSet& opts);
  Status validate() const;
  DcpOptions options(int max_turns) const;
};

struct PromptConfig {
  std::string chat_template = "auto";
  std::string multi_turn = "append";
  int64_t now = 0;  // strftime_now's time (UTC seconds); 0: the run's start, recorded
  std::string system_text;
  std::string format_text;
  int64_t max_prompt_tokens = 0;  // 0: the model's context minus the max new tokens
  int64_t max_feedback_chars = 2048;
  bool show_param_values = true;

  void declare(OptionSet& opts);
  // context_budget stands in for max_prompt_tokens when that is 0.
  PromptOptions options(int64_t context_budget) const;
};

// The three sections together, as the `leap` command composes them.
struct RlSections {
  RlConfig rl;
  DcpConfig dcp;
  PromptConfig prompt;
  void declare(OptionSet& opts);
  Status validate() const;
  // For RL training only (eval and SFT use no DCP): static thresholds must leave some failure
  // count of a whole group between easy and hopeless when rl.max_turns > 1.
  Status validate_dcp_expands() const;
};

RewardMode parse_reward_mode(const std::string& name);
Credit parse_credit(const std::string& name);
LossAggregation parse_loss_aggregation(const std::string& name);
DcpMode parse_dcp_mode(const std::string& name);
MultiTurn parse_multi_turn(const std::string& name);

}  // namespace leap::rl
