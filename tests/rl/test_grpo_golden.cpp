// The GRPO loss against PyTorch autograd: grpo_loss_golden.py writes each case (inputs, loss and
// d loss / d logp from float64 autograd) for every aggregation mode with the PPO clip and the
// dual clip active on some tokens; this test recomputes each case and compares, printing the
// largest difference. The file's path comes from LEAP_RL_GOLDEN (set by ctest).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "rl/grpo_loss.h"
#include "rl/rl_config.h"

namespace leap::rl {
namespace {

nlohmann::json load_golden() {
  const char* path = std::getenv("LEAP_RL_GOLDEN");
  if (path == nullptr) return nullptr;
  std::ifstream f(path);
  if (!f) return nullptr;
  return nlohmann::json::parse(f);
}

std::vector<float> floats(const nlohmann::json& j) {
  std::vector<float> v;
  for (double x : j) v.push_back(static_cast<float>(x));
  return v;
}

TEST(GrpoGolden, MatchesPyTorchAutograd) {
  auto golden = load_golden();
  ASSERT_FALSE(golden.is_null()) << "LEAP_RL_GOLDEN must name the golden file";
  ASSERT_EQ(golden.at("version"), 1);
  const auto& cases = golden.at("cases");
  ASSERT_EQ(cases.size(), 6u);
  std::set<std::string> modes;
  for (const auto& c : cases) {
    const std::string mode = c.at("aggregation");
    modes.insert(mode);
    auto logp = floats(c.at("logp")), old = floats(c.at("old_logp")),
         ref = floats(c.at("ref_logp"));
    auto mask = floats(c.at("mask")), adv = floats(c.at("advantages"));
    std::vector<int64_t> offsets{0};
    for (int len : c.at("lens")) offsets.push_back(offsets.back() + len);
    LossInputs in{logp, old, ref, mask, adv, offsets};
    LossOptions o{.clip_eps_low = c.at("clip_eps_low"),
                  .clip_eps_high = c.at("clip_eps_high"),
                  .dual_clip = c.at("dual_clip"),
                  .aggregation = parse_loss_aggregation(mode),
                  .loss_norm_tokens = c.at("loss_norm_tokens"),
                  .kl_beta = c.at("kl_beta")};
    auto out = grpo_loss(in, o, loss_normaliser(in, o.aggregation));
    const double want_loss = c.at("loss");
    EXPECT_NEAR(out.loss, want_loss, 1e-9 * std::max(1.0, std::abs(want_loss))) << mode;
    const auto& want = c.at("dlogp");
    ASSERT_EQ(want.size(), out.dlogp.size());
    double max_diff = 0;
    for (size_t i = 0; i < out.dlogp.size(); ++i) {
      const double w = want[i];
      max_diff = std::max(max_diff, std::abs(out.dlogp[i] - w));
      EXPECT_NEAR(out.dlogp[i], w, 1e-6 * std::max(1.0, std::abs(w))) << mode << " token " << i;
    }
    EXPECT_EQ(out.stats.clipped + out.stats.dual_clipped, c.at("clipped_tokens").get<double>())
        << mode;
    EXPECT_GT(out.stats.clipped, 0) << mode;
    // The /steps kl column: k3 averaged over the masked tokens (0 without a reference).
    const double want_kl = c.at("kl_mean");
    EXPECT_NEAR(out.stats.kl_mean(), want_kl, 1e-9 * std::max(1.0, want_kl)) << mode;
    if (o.kl_beta > 0) {
      EXPECT_GT(want_kl, 1e-3) << mode;
    }
    if (o.dual_clip > 1) {
      EXPECT_GT(out.stats.dual_clipped, 0) << mode;
    }
    std::printf("%s dual_clip=%g kl=%g: loss diff %.3g, max grad diff %.3g\n", mode.c_str(),
                o.dual_clip, o.kl_beta, std::abs(out.loss - want_loss), max_diff);
  }
  EXPECT_EQ(modes.size(), 3u);
}

}  // namespace
}  // namespace leap::rl
