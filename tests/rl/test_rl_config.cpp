// The [rl], [dcp] and [prompt] sections: defaults, ranges and choices enforced by the parser,
// the cross-option checks of validate(), conversions to typed options, and the help text.
#include <gtest/gtest.h>

#include "rl/rl_config.h"

namespace leap::rl {
namespace {

Status parse(RlSections& s, const std::vector<std::string>& args) {
  OptionSet o;
  s.declare(o);
  LEAP_RETURN_IF_ERROR(o.parse(args));
  return s.validate();
}

TEST(RlConfig, DefaultsAreValidAndConvert) {
  RlSections s;
  ASSERT_TRUE(parse(s, {}).is_ok());
  EXPECT_EQ(s.rl.group_size, 8);
  EXPECT_EQ(s.rl.reward_options().mode, RewardMode::kRank);
  EXPECT_EQ(s.rl.advantage_options().credit, Credit::kTrajectory);
  auto loss = s.rl.loss_options(512);
  EXPECT_EQ(loss.loss_norm_tokens, 512);  // 0 means the sampler's max new tokens
  EXPECT_EQ(loss.aggregation, LossAggregation::kTokenMean);
  EXPECT_EQ(loss.kl_beta, 0);
  auto dcp = s.dcp.options(s.rl.max_turns);
  EXPECT_EQ(dcp.mode, DcpMode::kStatic);
  EXPECT_EQ(dcp.easy_below, 0.5);
  EXPECT_EQ(dcp.hopeless_at, 1.0);
  EXPECT_EQ(dcp.max_turns, 3);
  EXPECT_EQ(s.prompt.options(1000).max_prompt_tokens, 1000u);
}

TEST(RlConfig, CommandLineSetsEverySection) {
  RlSections s;
  ASSERT_TRUE(parse(s, {"--rl.reward=score", "--rl.credit=discounted", "--rl.gamma=0.4",
                        "--rl.loss_agg=seq-mean-token-sum-norm", "--rl.loss_norm_tokens=300",
                        "--rl.dual_clip=3", "--dcp.mode=adaptive", "--dcp.budget=64",
                        "--prompt.chat_template=chatml", "--prompt.max_prompt_tokens=900"})
                  .is_ok());
  EXPECT_EQ(s.rl.reward_options().mode, RewardMode::kScore);
  EXPECT_EQ(s.rl.advantage_options().credit, Credit::kDiscounted);
  auto loss = s.rl.loss_options(512);
  EXPECT_EQ(loss.aggregation, LossAggregation::kSeqMeanTokenSumNorm);
  EXPECT_EQ(loss.loss_norm_tokens, 300);
  EXPECT_EQ(loss.dual_clip, 3);
  EXPECT_EQ(s.dcp.options(3).mode, DcpMode::kAdaptive);
  EXPECT_EQ(s.prompt.chat_template, "chatml");
  EXPECT_EQ(s.prompt.options(1000).max_prompt_tokens, 900u);
}

TEST(RlConfig, RollingAheadIsOffByDefaultAndTakesTheStreamPipeline) {
  RlSections s;
  ASSERT_TRUE(parse(s, {}).is_ok());
  EXPECT_FALSE(s.rl.rollout_ahead);
  ASSERT_TRUE(parse(s, {"--rl.rollout_ahead=true"}).is_ok());
  EXPECT_TRUE(s.rl.rollout_ahead);
  EXPECT_EQ(s.rl.pipeline, "stream");
}

TEST(RlConfig, RejectsOutOfRangeAndInconsistentValues) {
  const std::vector<std::vector<std::string>> bad = {
      {"--rl.group_size=1"},
      {"--rl.gamma=1.5"},
      {"--rl.max_turns=0"},
      {"--rl.reward=pairwise"},
      {"--rl.loss_agg=sum"},
      {"--rl.dual_clip=0.5"},
      {"--dcp.easy_below=1.2"},
      {"--dcp.hopeless_at=0"},
      {"--dcp.mode=sometimes"},
      {"--dcp.mode=adaptive"},  // no budget
      {"--dcp.easy_below=0.8", "--dcp.hopeless_at=0.6"},
      {"--prompt.chat_template=llama"},
      {"--rl.rollout_ahead=true", "--rl.pipeline=sync"},
      {"--rl.rollout_ahead=true", "--rl.resample_zero_variance=true"},
  };
  for (const auto& args : bad) {
    RlSections s;
    auto st = parse(s, args);
    EXPECT_FALSE(st.is_ok()) << args[0];
    EXPECT_EQ(st.exit_code(), 2) << args[0];
  }
}

// No failure count of a whole group in [easy_below x G, hopeless_at x G): no debugging turn
// ever. Refused for multi-turn static DCP only (validate() accepts it: eval and SFT use no DCP);
// a gap holding one failure count is enough.
TEST(RlConfig, ThresholdsWithoutAGapAreRefusedOnlyForMultiTurnStaticDcp) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--dcp.easy_below=0.7", "--dcp.hopeless_at=0.7", "--rl.max_turns=1"},
           {"--dcp.easy_below=0.7", "--dcp.hopeless_at=0.7", "--dcp.mode=off"},
           {"--rl.group_size=4", "--dcp.easy_below=0.6", "--dcp.hopeless_at=0.8"}}) {
    RlSections s;
    ASSERT_TRUE(parse(s, args).is_ok());
    EXPECT_TRUE(s.validate_dcp_expands().is_ok()) << args[0] << " " << args[1] << " " << args[2];
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--dcp.easy_below=0.7", "--dcp.hopeless_at=0.7"},
           {"--rl.group_size=4", "--dcp.easy_below=0.6", "--dcp.hopeless_at=0.7"}}) {
    RlSections s;
    ASSERT_TRUE(parse(s, args).is_ok());
    auto st = s.validate_dcp_expands();
    ASSERT_FALSE(st.is_ok()) << args[0] << " " << args[1];
    EXPECT_EQ(st.exit_code(), 2);
    EXPECT_NE(st.message().find("dcp.easy_below"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("rl.max_turns = 1"), std::string::npos) << st.message();
  }
}

TEST(RlConfig, HelpSaysWhatEachOptionDoes) {
  OptionSet o;
  RlSections s;
  s.declare(o);
  const auto help = o.help_text();
  for (const char* key : {"rl.group_size", "rl.noise_band", "rl.loo", "rl.kl_beta", "rl.ppo_epochs",
                          "rl.mini_batches", "dcp.mode", "dcp.budget", "dcp.dead_band",
                          "dcp.adaptive_step", "prompt.chat_template"})
    EXPECT_NE(help.find(key), std::string::npos) << key;
  EXPECT_NE(help.find("hopeless"), std::string::npos);
}

}  // namespace
}  // namespace leap::rl
