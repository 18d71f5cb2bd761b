// Declarations, cross-option validation and conversions of the [rl], [dcp] and [prompt] sections.
#include "rl/rl_config.h"

#include <fmt/format.h>

#include "common/check.h"
#include "rl/dcp.h"
#include "rl/trajectory.h"

namespace leap::rl {

RewardMode parse_reward_mode(const std::string& n) {
  if (n == "rank") return RewardMode::kRank;
  if (n == "binary") return RewardMode::kBinary;
  LEAP_CHECK(n == "score", "reward mode '" << n << "' passed validation");
  return RewardMode::kScore;
}

Credit parse_credit(const std::string& n) {
  if (n == "trajectory") return Credit::kTrajectory;
  LEAP_CHECK(n == "discounted", "credit '" << n << "' passed validation");
  return Credit::kDiscounted;
}

LossAggregation parse_loss_aggregation(const std::string& n) {
  if (n == "token-mean") return LossAggregation::kTokenMean;
  if (n == "seq-mean-token-mean") return LossAggregation::kSeqMeanTokenMean;
  LEAP_CHECK(n == "seq-mean-token-sum-norm", "loss aggregation '" << n << "' passed validation");
  return LossAggregation::kSeqMeanTokenSumNorm;
}

DcpMode parse_dcp_mode(const std::string& n) {
  if (n == "static") return DcpMode::kStatic;
  if (n == "off") return DcpMode::kOff;
  LEAP_CHECK(n == "adaptive", "dcp mode '" << n << "' passed validation");
  return DcpMode::kAdaptive;
}

MultiTurn parse_multi_turn(const std::string& n) {
  if (n == "rerender") return MultiTurn::kRerender;
  LEAP_CHECK(n == "append", "multi-turn mode '" << n << "' passed validation");
  return MultiTurn::kAppend;
}

void RlConfig::declare(OptionSet& o) {
  o.add("rl.group_size", &group_size, 8, "Samples per task (G): the group that rewards compare.",
        {.min = 2, .max = 4096});
  o.add("rl.max_turns", &max_turns, 3,
        "Turns per sample at most; later turns show the previous answer and the sandbox's "
        "feedback. 1 is single-turn GRPO.",
        {.min = 1, .max = 64});
  o.add("rl.reward", &reward, std::string("rank"),
        "Reward: rank (pairwise tournament in the group, LEAP), binary (1 for success) or score "
        "(0.3*correct + speedup*correct, Kevin).",
        {.choices = {"rank", "binary", "score"}});
  o.add("rl.noise_band", &noise_band, 0.05,
        "Rank reward: speedups whose ratio is within 1 + noise_band count as equal.",
        {.min = 0.0, .max = 10.0});
  o.add("rl.failure_severity", &failure_severity, false,
        "Rank reward: order failures (wrong answer > runtime error > compile error > format "
        "error) instead of drawing them.");
  o.add("rl.token_tiebreak", &token_tiebreak, true,
        "Rank reward: between successes of the same turn that speed does not separate, fewer "
        "tokens win (the paper's rule). false makes them draw, so a group where every sample "
        "passes untimed (the CPU interpreter times nothing) has no gradient, as with binary "
        "rewards, instead of one towards shorter answers.");
  o.add("rl.credit", &credit, std::string("trajectory"),
        "Credit of turn t of a trajectory with advantage A and last turn T: trajectory (A) or "
        "discounted (gamma^(T - t) * A).",
        {.choices = {"trajectory", "discounted"}});
  o.add("rl.gamma", &gamma, 0.4, "Discount per turn for rl.credit=discounted (Kevin used 0.4).",
        {.min = 0.0, .max = 1.0});
  o.add("rl.std_normalize", &std_normalize, true,
        "binary/score rewards: divide by the group's std after subtracting its mean (rank "
        "rewards are never rescaled).");
  o.add("rl.std_floor", &std_floor, 1e-2,
        "Smallest std divided by, so near-constant groups do not explode.",
        {.min = 1e-8, .max = 1e6});
  o.add("rl.loo", &loo, false,
        "Turn-level leave-one-out baseline: turn t is compared with the other samples of its "
        "group that reached turn t (Dr. Kernel's TRLOO).");
  o.add("rl.clip_eps_low", &clip_eps_low, 0.2, "PPO clip: the ratio's lower bound is 1 - eps_low.",
        {.min = 0.0, .max = 0.99});
  o.add("rl.clip_eps_high", &clip_eps_high, 0.28,
        "PPO clip: the ratio's upper bound is 1 + eps_high (above eps_low: DAPO's clip-higher).",
        {.min = 0.0, .max = 10.0});
  o.add("rl.dual_clip", &dual_clip, 0.0,
        "Dual-clip constant c > 1: for negative advantages the loss is capped at -A*c. 0 is off.",
        {.min = 0.0, .max = 100.0});
  o.add("rl.loss_agg", &loss_agg, std::string("token-mean"),
        "Loss aggregation: token-mean (DAPO), seq-mean-token-mean (GRPO) or "
        "seq-mean-token-sum-norm (Dr. GRPO, divides by rl.loss_norm_tokens).",
        {.choices = {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"}});
  o.add("rl.loss_norm_tokens", &loss_norm_tokens, int64_t{0},
        "Constant divisor of seq-mean-token-sum-norm; 0 means the sampler's max new tokens.",
        {.min = 0.0});
  o.add("rl.kl_beta", &kl_beta, 0.0,
        "Weight of the per-token k3 KL to a frozen reference policy; 0 loads no reference. The "
        "reference costs one more copy of the weights on each policy rank and one more forward per "
        "update micro-batch.",
        {.min = 0.0, .max = 100.0});
  o.add("rl.kl_reference", &kl_reference, std::string(""),
        "The KL reference policy's folder (config.json + safetensors, the policy's shape); empty: the "
        "run's initial weights (model.path, or the random init of run.seed). Checkpoints record its "
        "path and hash; a resumed run must have the same reference.");
  o.add("rl.kl_reference_dtype", &kl_reference_dtype, std::string("auto"),
        "Storage of the KL reference's weights: bf16 halves it (the forward widens one layer at a "
        "time; a Hugging Face model shipped in bf16 loses nothing); auto = bf16 on "
        "backend.name = cuda, fp32 on cpu.",
        {.choices = {"auto", "fp32", "bf16"}});
  o.add("rl.ppo_epochs", &ppo_epochs, 1, "Passes over each step's samples.",
        {.min = 1, .max = 100});
  o.add(
      "rl.mini_batches", &mini_batches, 1,
      "Optimizer updates per pass; with one update in all, the ratio is 1 and clipping never acts.",
      {.min = 1, .max = 4096});
  o.add("rl.train_trajectory_once", &train_trajectory_once, true,
        "Train a multi-turn sample as one sequence (its last prompt and answer, the loss on each "
        "turn's sampled tokens with that turn's advantage) where its prompts were appended and "
        "the loss is token-mean with one mini-batch (rl.mini_batches = 1); otherwise, and when "
        "false, every turn is its own sequence.");
  o.add("rl.resample_zero_variance", &resample_zero_variance, false,
        "Dynamic sampling: replace groups whose advantages are all zero (every sample passed, or "
        "every one failed alike) with freshly drawn tasks, in further rounds of the same step, up "
        "to rl.resample_max_groups per step; /steps counts them (n_resampled).");
  o.add("rl.resample_max_groups", &resample_max_groups, 0,
        "The most groups dynamic sampling draws in one step; 0 means train.batch_tasks.",
        {.min = 0, .max = 1 << 20});
  o.add("rl.pipeline", &pipeline, std::string("stream"),
        "How a step's turns run: stream overlaps generation, verification and DCP (each sample goes "
        "to the sandbox as it is generated, each group is classified as its turn-1 verdicts arrive); "
        "sync runs them turn by turn with a barrier after each phase, and its trajectories are "
        "reproducible bit for bit (stream's are equal in distribution).",
        {.choices = {"stream", "sync"}});
  o.add("rl.overlap_training", &overlap_training, true,
        "With rl.pipeline = stream: a group's sequences are trained (forward and backward into the "
        "gradient) by policy ranks with nothing to generate as soon as the group's last verdict is "
        "in, while other groups are still generated or verified; the loss normaliser, known only "
        "at the end, is applied at the optimizer step. Takes effect with one update a step "
        "(rl.ppo_epochs = rl.mini_batches = 1) and optim.zero_stage below 2 (stage 2 reduces "
        "during every backward); otherwise, and when false, all training waits for the rollout.");
  o.add("rl.speculative_turns", &speculative_turns, true,
        "With rl.pipeline = stream: a policy rank with nothing else to do while turn-1 verdicts are "
        "still coming in generates turn 2 of the failed samples of groups DCP may still expand, "
        "before it decides. A kept turn is the one the decision would have started (same seed); "
        "one DCP does not keep is dropped unverified and never reaches the trajectory file "
        "(/steps n_speculative, n_speculative_dropped, speculative_dropped_tokens).");
  o.add("rl.rollout_ahead", &rollout_ahead, false,
        "With rl.pipeline = stream: a policy rank with nothing of the step left to generate or "
        "train while its last verdicts come in starts the next step's turn 1, with this step's "
        "weights. Those samples are one update off the policy (the PPO ratio's old log-probs are "
        "the sampler's, so clipping bounds the lag), which changes what is trained: off by "
        "default. /steps n_rollout_ahead counts a step's turn-1 samples generated during the step "
        "before. A resumed run generates them again with the checkpoint's weights, so such a "
        "run resumes equal in distribution, not bit for bit. Needs rl.resample_zero_variance = "
        "false.");
}

Status RlConfig::validate() const {
  if (dual_clip != 0 && dual_clip <= 1)
    return invalid_input(
        fmt::format("option 'rl.dual_clip' = {} must be 0 (off) or above 1", dual_clip));
  if (rollout_ahead && pipeline != "stream")
    return invalid_input(fmt::format(
        "option 'rl.rollout_ahead' = true needs rl.pipeline = stream (it is {}): set one or the other", pipeline));
  // Dynamic sampling draws further tasks within a step, after the next step's would be drawn.
  if (rollout_ahead && resample_zero_variance)
    return invalid_input(
        "options 'rl.rollout_ahead' and 'rl.resample_zero_variance' cannot both be true: dynamic sampling draws "
        "tasks within a step, after the next step's were drawn ahead; turn one of them off");
  return Status::ok();
}

RewardOptions RlConfig::reward_options() const {
  return {.mode = parse_reward_mode(reward),
          .noise_band = noise_band,
          .failure_severity = failure_severity,
          .token_tiebreak = token_tiebreak};
}

AdvantageOptions RlConfig::advantage_options() const {
  return {.mode = parse_reward_mode(reward),
          .std_normalize = std_normalize,
          .std_floor = std_floor,
          .loo = loo,
          .credit = parse_credit(credit),
          .gamma = gamma};
}

LossOptions RlConfig::loss_options(int64_t max_new_tokens) const {
  const int64_t norm = loss_norm_tokens > 0 ? loss_norm_tokens : max_new_tokens;
  LEAP_CHECK(norm > 0, "loss_norm_tokens unresolved: pass the sampler's max new tokens");
  return {.clip_eps_low = clip_eps_low,
          .clip_eps_high = clip_eps_high,
          .dual_clip = dual_clip,
          .aggregation = parse_loss_aggregation(loss_agg),
          .loss_norm_tokens = static_cast<double>(norm),
          .kl_beta = kl_beta};
}

void DcpConfig::declare(OptionSet& o) {
  o.add("dcp.mode", &mode, std::string("static"),
        "Difficulty-Conditioned Pruning after turn 1: static (thresholds below), off (every group "
        "with a failure gets more turns) or adaptive (easy_below follows dcp.budget).",
        {.choices = {"static", "off", "adaptive"}});
  o.add("dcp.easy_below", &easy_below, 0.5,
        "A group is easy (no more turns) when its failures are fewer than easy_below * G; the "
        "starting value in adaptive mode.",
        {.min = 0.0, .max = 1.0});
  o.add("dcp.hopeless_at", &hopeless_at, 1.0,
        "A group is hopeless (no more turns) when its failures are at least hopeless_at * G; "
        "1.0 means every sample failed.",
        {.min = 1e-9, .max = 1.0});
  o.add("dcp.budget", &budget, int64_t{0},
        "Adaptive mode: expanded samples (those given a second turn) wanted per step; required "
        "there.",
        {.min = 0.0});
  o.add("dcp.dead_band", &dead_band, 0.1,
        "Adaptive mode: easy_below stays put while |expanded - budget| / budget is within this.",
        {.min = 0.0, .max = 10.0});
  o.add("dcp.adaptive_step", &adaptive_step, 0.1,
        "Adaptive mode: change of easy_below per unit of relative error (expanded - budget) / "
        "budget.",
        {.min = 0.0, .max = 1.0});
}

Status DcpConfig::validate() const {
  if (easy_below > hopeless_at)
    return invalid_input(
        fmt::format("option 'dcp.easy_below' = {} is above 'dcp.hopeless_at' = {}: "
                    "lower easy_below or raise hopeless_at",
                    easy_below, hopeless_at));
  if (mode == "adaptive" && budget <= 0)
    return invalid_input(
        "option 'dcp.mode' = adaptive needs 'dcp.budget' > 0 (expanded samples per step)");
  return Status::ok();
}

DcpOptions DcpConfig::options(int max_turns) const {
  return {.mode = parse_dcp_mode(mode),
          .easy_below = easy_below,
          .hopeless_at = hopeless_at,
          .budget = budget,
          .dead_band = dead_band,
          .adaptive_step = adaptive_step,
          .max_turns = max_turns};
}

void PromptConfig::declare(OptionSet& o) {
  o.add("prompt.chat_template", &chat_template, std::string("auto"),
        "Chat template: auto (the model folder's own, from chat_template.jinja or tokenizer_config.json, "
        "when it has one, else plain), model, plain (role headers as text, for the demo policies, which have none "
        "of their own) or chatml (<|im_start|> turns, for Qwen-family base models).",
        {.choices = {"auto", "model", "plain", "chatml"}});
  o.add("prompt.multi_turn", &multi_turn, std::string("append"),
        "How a debugging turn's prompt is built: append (the previous prompt's ids, the sampled "
        "ids exactly as generated, then the template's text after them) or rerender (the whole "
        "conversation rendered and encoded again, as apply_chat_template does).",
        {.choices = {"append", "rerender"}});
  o.add("prompt.now", &now, int64_t{0},
        "The time a chat template's strftime_now() prints (UTC seconds since 1970); 0 pins the "
        "run's start and records it in the checkpoints, so a resumed run renders the same date.",
        {.min = 0.0});
  o.add("prompt.system_text", &system_text, std::string(""),
        "System text opening every prompt; empty uses the built-in one.");
  o.add("prompt.format_text", &format_text, std::string(""),
        "Description of the answer format with an example; empty uses the built-in one.");
  o.add("prompt.max_prompt_tokens", &max_prompt_tokens, int64_t{0},
        "Longest prompt in tokens: older turns are shortened, then dropped, to fit. 0 means the "
        "model's context minus the max new tokens.",
        {.min = 0.0});
  o.add("prompt.max_feedback_chars", &max_feedback_chars, int64_t{2048},
        "Longest sandbox feedback shown for one turn, in bytes.", {.min = 64.0, .max = 1 << 20});
  o.add("prompt.show_param_values", &show_param_values, true,
        "Show the task's sizes next to its parameter names.");
}

PromptOptions PromptConfig::options(int64_t context_budget) const {
  const int64_t budget = max_prompt_tokens > 0 ? max_prompt_tokens : context_budget;
  LEAP_CHECK(budget > 0, "prompt budget unresolved: pass the model's context minus max new tokens");
  return {.system_text = system_text,
          .format_text = format_text,
          .max_prompt_tokens = static_cast<size_t>(budget),
          .max_feedback_chars = static_cast<size_t>(max_feedback_chars),
          .show_param_values = show_param_values};
}

void RlSections::declare(OptionSet& o) {
  rl.declare(o);
  dcp.declare(o);
  prompt.declare(o);
}

Status RlSections::validate() const {
  LEAP_RETURN_IF_ERROR(rl.validate());
  return dcp.validate();
}

Status RlSections::validate_dcp_expands() const {
  // Static thresholds that leave no failure count of a whole group between easy and hopeless never
  // give a debugging turn: a multi-turn config would run as single-turn without a word.
  if (dcp.mode == "static" && rl.max_turns > 1) {
    const DcpController controller(dcp.options(rl.max_turns));
    for (int failed = 1; failed <= rl.group_size; ++failed) {
      std::vector<Trajectory> group(static_cast<size_t>(rl.group_size));
      for (int i = 0; i < rl.group_size; ++i)
        group[static_cast<size_t>(i)].turns.push_back(
            {i < failed ? sandbox::Verdict::kWrongAnswer : sandbox::Verdict::kOk, std::nullopt, 1});
      if (controller.decide(group).label == DcpLabel::kExpanded) return Status::ok();
    }
    return invalid_input(fmt::format(
        "options 'dcp.easy_below' = {} and 'dcp.hopeless_at' = {} leave no number of failures of a group of "
        "rl.group_size = {} between easy (fewer than easy_below x {}) and hopeless (at least hopeless_at x {}): no "
        "group would ever get a debugging turn; widen the gap, or set rl.max_turns = 1 for single-turn RL",
        dcp.easy_below, dcp.hopeless_at, rl.group_size, rl.group_size, rl.group_size));
  }
  return Status::ok();
}

}  // namespace leap::rl
