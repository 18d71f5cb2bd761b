// DCP decisions, per-step statistics, the adaptive threshold and its checkpoint state.
#include "rl/dcp.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace leap::rl {

namespace {

// Thresholds are products like 0.3 * 10 = 3.0000000000000004: compare with a little slack so
// that "fewer than 30% of 10" means fewer than 3.
constexpr double kSlack = 1e-9;

double max_easy_below(const DcpOptions& o) {
  return std::min(1.0, o.hopeless_at);
}

}  // namespace

std::string_view dcp_label_name(DcpLabel label) {
  switch (label) {
    case DcpLabel::kNone:
      return "none";
    case DcpLabel::kEasy:
      return "easy";
    case DcpLabel::kHopeless:
      return "hopeless";
    case DcpLabel::kExpanded:
      return "expanded";
  }
  return "none";
}

std::string_view dcp_mode_name(DcpMode mode) {
  switch (mode) {
    case DcpMode::kStatic:
      return "static";
    case DcpMode::kOff:
      return "off";
    case DcpMode::kAdaptive:
      return "adaptive";
  }
  return "static";
}

void DcpStepStats::add_group(const DcpDecision& d, std::span<const Trajectory> final_group) {
  ++n_groups;
  switch (d.label) {
    case DcpLabel::kNone:
      ++n_none;
      break;
    case DcpLabel::kEasy:
      ++n_easy;
      break;
    case DcpLabel::kHopeless:
      ++n_hopeless;
      break;
    case DcpLabel::kExpanded:
      ++n_expanded;
      break;
  }
  for (const auto& t : final_group) {
    sandbox_jobs += t.num_turns();
    if (t.num_turns() >= 2) ++samples_expanded;
  }
}

DcpController::DcpController(DcpOptions opts) : opts_(opts), easy_below_(opts.easy_below) {
  LEAP_CHECK(opts_.hopeless_at > 0 && opts_.hopeless_at <= 1, "hopeless_at " << opts_.hopeless_at);
  LEAP_CHECK(opts_.easy_below >= 0 && opts_.easy_below <= 1, "easy_below " << opts_.easy_below);
  LEAP_CHECK(opts_.max_turns >= 1, "max_turns " << opts_.max_turns);
  LEAP_CHECK(opts_.mode != DcpMode::kAdaptive || opts_.budget > 0, "adaptive DCP needs a budget");
  easy_below_ = std::min(easy_below_, max_easy_below(opts_));
}

DcpDecision DcpController::decide(std::span<const Trajectory> group) const {
  int n_fail = 0, n_valid = 0;
  for (const auto& t : group) {
    LEAP_CHECK(t.num_turns() <= 1, "DCP decides after turn 1, got " << t.num_turns() << " turns");
    // A sample with no turn (its prompt did not fit the context) counts neither way, as a void one.
    if (t.num_turns() == 0 || t.is_void()) continue;
    ++n_valid;
    if (!t.succeeded()) ++n_fail;
  }
  return judge(n_fail, n_valid, static_cast<int>(group.size()));
}

bool DcpController::expansion_forced(int n_fail, int n_valid, int pending) const {
  // Each pending sample may still pass, fail or be void: every count of them must expand.
  for (int v = 0; v <= pending; ++v)
    for (int f = 0; f <= v; ++f)
      if (judge(n_fail + f, n_valid + v, 0).label != DcpLabel::kExpanded) return false;
  return true;
}

bool DcpController::expansion_possible(int n_fail, int n_valid, int pending) const {
  for (int v = 0; v <= pending; ++v)
    for (int f = 0; f <= v; ++f)
      if (judge(n_fail + f, n_valid + v, 0).label == DcpLabel::kExpanded) return true;
  return false;
}

DcpDecision DcpController::judge(int n_fail, int n_valid, int group_size) const {
  DcpDecision d;
  d.group_size = group_size;
  d.easy_below = easy_below_;
  d.hopeless_at = opts_.hopeless_at;
  d.n_fail = n_fail;
  d.n_valid = n_valid;
  const double g = d.n_valid;
  const std::string counts = fmt::format("{} of {} failed", d.n_fail, d.n_valid);
  if (opts_.max_turns == 1) {
    d.label = DcpLabel::kNone;
    d.reason = counts + "; single-turn (max_turns = 1)";
  } else if (d.n_valid == 0) {
    d.label = DcpLabel::kNone;
    d.reason = "no valid sample (sandbox errors only)";
  } else if (d.n_fail == 0) {
    d.label = DcpLabel::kEasy;
    d.reason = counts + "; nothing to debug";
  } else if (opts_.mode == DcpMode::kOff) {
    d.label = DcpLabel::kExpanded;
    d.reason = counts + "; dcp off expands every group";
  } else if (d.n_fail >= opts_.hopeless_at * g - kSlack) {
    d.label = DcpLabel::kHopeless;
    d.reason = fmt::format("{} >= hopeless_at {} * {}", counts, opts_.hopeless_at, d.n_valid);
  } else if (d.n_fail < easy_below_ * g - kSlack) {
    d.label = DcpLabel::kEasy;
    d.reason = fmt::format("{} < easy_below {} * {}", counts, easy_below_, d.n_valid);
  } else {
    d.label = DcpLabel::kExpanded;
    d.reason = fmt::format("{}, between easy_below {} and hopeless_at {}", counts, easy_below_,
                           opts_.hopeless_at);
  }
  return d;
}

bool DcpController::continues(const DcpDecision& decision, const Trajectory& t) const {
  return decision.label == DcpLabel::kExpanded && !t.succeeded() && !t.is_void() &&
         t.num_turns() < opts_.max_turns;
}

std::vector<size_t> DcpController::continuing_samples(const DcpDecision& decision,
                                                      std::span<const Trajectory> group) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < group.size(); ++i)
    if (continues(decision, group[i])) out.push_back(i);
  return out;
}

void DcpController::update(const DcpStepStats& step) {
  ++updates_;
  if (opts_.mode != DcpMode::kAdaptive) return;
  const double budget = static_cast<double>(opts_.budget);
  last_error_ = (static_cast<double>(step.samples_expanded) - budget) / budget;
  if (std::abs(last_error_) <= opts_.dead_band) return;
  // Too many expanded samples -> raise easy_below, so more groups count as easy.
  easy_below_ =
      std::clamp(easy_below_ + opts_.adaptive_step * last_error_, 0.0, max_easy_below(opts_));
}

nlohmann::json DcpController::state_json() const {
  return {{"mode", dcp_mode_name(opts_.mode)},
          {"easy_below", easy_below_},
          {"hopeless_at", opts_.hopeless_at},
          {"updates", updates_},
          {"last_error", last_error_}};
}

Status DcpController::load_state_json(const nlohmann::json& s) {
  if (!s.is_object() || !s.contains("mode") || !s.contains("easy_below") || !s.contains("updates"))
    return invalid_input("DCP state: expected an object with mode, easy_below and updates");
  try {
    const auto mode = s.at("mode").get<std::string>();
    const double eb = s.at("easy_below").get<double>();
    const int64_t updates = s.at("updates").get<int64_t>();
    if (mode != "static" && mode != "off" && mode != "adaptive")
      return invalid_input("DCP state: unknown mode '" + mode + "'");
    if (!(eb >= 0 && eb <= 1))
      return invalid_input(fmt::format("DCP state: easy_below {} not in [0, 1]", eb));
    if (updates < 0) return invalid_input("DCP state: negative update count");
    updates_ = updates;
    last_error_ = s.value("last_error", 0.0);
    if (mode == "adaptive" && opts_.mode == DcpMode::kAdaptive)
      easy_below_ = std::min(eb, max_easy_below(opts_));
  } catch (const nlohmann::json::exception& e) {
    return invalid_input(std::string("DCP state: ") + e.what());
  }
  return Status::ok();
}

}  // namespace leap::rl
