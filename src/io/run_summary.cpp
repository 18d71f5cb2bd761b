// Aggregation behind `leap analyze`; the definitions are in run_summary.h.
#include "io/run_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace leap::io {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kOk = static_cast<int>(sandbox::Verdict::kOk);
constexpr int kSandboxError = static_cast<int>(sandbox::Verdict::kSandboxError);

// One (group, sample) of a step, folded over its turn rows.
struct Trajectory {
  int last_turn = 0, last_verdict = 0;
  int first_ok_turn = std::numeric_limits<int>::max();
  int reward_turn = std::numeric_limits<int>::max();
  double reward = 0;  // the same on every turn row of a sample; taken from its earliest turn
};

LengthStats length_stats(std::vector<double> values) {
  LengthStats s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) {
    s.mean = s.min = s.p10 = s.p25 = s.p50 = s.p75 = s.p90 = s.max = kNaN;
    return s;
  }
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  s.min = values.front();
  s.max = values.back();
  s.p10 = quantile_sorted(values, 0.10);
  s.p25 = quantile_sorted(values, 0.25);
  s.p50 = quantile_sorted(values, 0.50);
  s.p75 = quantile_sorted(values, 0.75);
  s.p90 = quantile_sorted(values, 0.90);
  return s;
}

double mean_of(double sum, int64_t n) {
  return n ? sum / static_cast<double>(n) : kNaN;
}

}  // namespace

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double h = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::string config_value(const std::string& config_ini, const std::string& section, const std::string& key) {
  const auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \t\r"));
    s.erase(s.find_last_not_of(" \t\r") + 1);
    return s;
  };
  std::istringstream in(config_ini);
  std::string line, current;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      current = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t eq = line.find('=');
    if (current == section && eq != std::string::npos && trim(line.substr(0, eq)) == key)
      return trim(line.substr(eq + 1));
  }
  return "";
}

int configured_max_turns(const std::string& config_ini) {
  try {
    return std::max(0, std::stoi(config_value(config_ini, "rl", "max_turns")));
  } catch (...) {
    return 0;
  }
}

RunSummary summarize_run(const std::vector<StepRow>& steps, const std::vector<SampleRow>& samples,
                         double time_s_before, int configured_turns) {
  RunSummary out;
  out.turns = std::max(1, configured_turns);
  for (const SampleRow& s : samples) out.turns = std::max(out.turns, s.turn);
  const size_t turns = static_cast<size_t>(out.turns);
  out.verdicts_by_turn.assign(turns, VerdictCounts{});
  std::vector<double> prompt_all, completion_all;
  std::vector<std::vector<double>> completion_by_turn(turns);

  double wall = time_s_before;
  size_t at = 0;  // next sample row: each step's rows follow it in order
  for (const StepRow& row : steps) {
    StepSummary st;
    st.row = row;
    wall += row.time_s;
    st.wall_s = wall;
    std::map<std::pair<int32_t, int32_t>, Trajectory> trajectories;
    double prompt_sum = 0, completion_sum = 0;
    int64_t n_rows = 0;
    for (; at < samples.size() && samples[at].step == row.step; ++at, ++n_rows) {
      const SampleRow& s = samples[at];
      const int verdict = s.verdict;
      const size_t turn = static_cast<size_t>(s.turn - 1);
      ++st.verdicts[static_cast<size_t>(verdict)];
      ++out.verdicts[static_cast<size_t>(verdict)];
      ++out.verdicts_by_turn[turn][static_cast<size_t>(verdict)];
      prompt_sum += s.prompt_tokens;
      completion_sum += s.completion_tokens;
      prompt_all.push_back(s.prompt_tokens);
      completion_all.push_back(s.completion_tokens);
      completion_by_turn[turn].push_back(s.completion_tokens);
      Trajectory& t = trajectories[{s.group, s.sample}];
      if (s.turn >= t.last_turn) {
        t.last_turn = s.turn;
        t.last_verdict = verdict;
      }
      if (verdict == kOk) t.first_ok_turn = std::min(t.first_ok_turn, s.turn);
      if (s.turn < t.reward_turn) {
        t.reward_turn = s.turn;
        t.reward = s.reward;
      }
    }
    st.mean_prompt_tokens = mean_of(prompt_sum, n_rows);
    st.mean_completion_tokens = mean_of(completion_sum, n_rows);

    std::vector<int64_t> passed_by(turns, 0);
    double reward_sum = 0;
    for (const auto& [key, t] : trajectories) {
      reward_sum += t.reward;
      if (t.last_verdict == kSandboxError) {
        ++st.void_trajectories;
        continue;
      }
      for (size_t k = 0; k < turns; ++k)
        passed_by[k] += t.first_ok_turn <= static_cast<int>(k + 1) ? 1 : 0;
    }
    st.trajectories = static_cast<int64_t>(trajectories.size());
    const int64_t counted = st.trajectories - st.void_trajectories;
    for (size_t k = 0; k < turns; ++k)
      st.pass_by_turn.push_back(mean_of(static_cast<double>(passed_by[k]), counted));
    st.reward_mean = mean_of(reward_sum, st.trajectories);
    double sq = 0;
    for (const auto& [key, t] : trajectories)
      sq += (t.reward - st.reward_mean) * (t.reward - st.reward_mean);
    st.reward_std = st.trajectories ? std::sqrt(sq / static_cast<double>(st.trajectories)) : kNaN;

    out.time_s += row.time_s;
    out.gen_s += row.gen_s;
    out.sandbox_s += row.sandbox_s;
    out.train_s += row.train_s;
    out.policy_busy_s += row.policy_busy_s;
    out.policy_wait_s += row.policy_wait_s;
    out.policy_drain_s += row.policy_drain_s;
    out.policy_idle_s += row.policy_idle_s;
    out.sandbox_busy_s += row.sandbox_busy_s;
    out.sandbox_idle_s += row.sandbox_idle_s;
    out.sandbox_jobs += row.n_sandbox_jobs;
    out.tokens_generated += row.tokens_generated;
    out.prefill_tokens += row.prefill_tokens;
    out.kv_reused_tokens += row.kv_reused_tokens;
    out.jobs_overlapped += row.n_jobs_overlapped;
    out.train_sequences += row.train_sequences;
    out.train_sequences_early += row.train_sequences_early;
    out.speculative += row.n_speculative;
    out.speculative_dropped += row.n_speculative_dropped;
    out.rollout_ahead += row.n_rollout_ahead;
    out.samples += n_rows;
    out.trajectories += st.trajectories;
    out.groups += row.n_groups;
    out.easy += row.n_easy;
    out.hopeless += row.n_hopeless;
    out.expanded += row.n_expanded;
    out.dropped_groups += row.n_dropped_groups;
    out.steps.push_back(std::move(st));
  }
  out.prompt_tokens = length_stats(std::move(prompt_all));
  out.completion_tokens = length_stats(std::move(completion_all));
  for (auto& v : completion_by_turn)
    out.completion_tokens_by_turn.push_back(length_stats(std::move(v)));
  return out;
}

}  // namespace leap::io
