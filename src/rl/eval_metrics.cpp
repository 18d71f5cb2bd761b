// Counting an evaluation's records into pass@k, Acc@t and fast_p.
#include "rl/eval_metrics.h"

#include <map>

#include "common/check.h"

namespace leap::rl {

double pass_at_k(int n, int c, int k) {
  LEAP_CHECK(n >= 1 && c >= 0 && c <= n && k >= 1 && k <= n,
             "pass_at_k(n=" << n << ", c=" << c << ", k=" << k << ")");
  // Every draw of k samples holds a correct one when fewer than k are wrong.
  if (n - c < k) return 1.0;
  // pass@1 is c/n; said directly so that it equals Acc@1 to the last bit.
  if (k == 1) return static_cast<double>(c) / static_cast<double>(n);
  // C(n-c, k) / C(n, k) = prod_{i=n-c+1..n} (1 - k/i).
  double all_wrong = 1.0;
  for (int i = n - c + 1; i <= n; ++i)
    all_wrong *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - all_wrong;
}

std::vector<TaskTally> tally_tasks(const std::vector<int>& tasks,
                                   const std::vector<EvalRecord>& records, const EvalSpec& spec) {
  const size_t T = static_cast<size_t>(spec.turns);
  std::map<int, size_t> slot;
  std::vector<TaskTally> out(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    slot[tasks[i]] = i;
    out[i].task = tasks[i];
    out[i].correct_by_turn.assign(T, 0);
    out[i].fast_by_turn.assign(spec.ps.size(), std::vector<int>(T, 0));
    out[i].verdicts_by_turn.assign(T, VerdictCounts{});
    out[i].stopped_before_turn.assign(T, 0);
  }
  std::map<std::pair<int, int>, const EvalRecord*> last;  // (task, sample) -> its last turn's record
  for (const auto& r : records) {
    auto it = slot.find(r.task);
    if (it == slot.end()) continue;
    LEAP_CHECK(
        r.sample >= 0 && r.sample < spec.samples && r.turn >= 1 && r.turn <= spec.turns,
        "eval record of task " << r.task << " has sample " << r.sample << " turn " << r.turn);
    TaskTally& t = out[it->second];
    const EvalRecord*& latest = last[{r.task, r.sample}];
    if (latest == nullptr || r.turn > latest->turn) latest = &r;
    t.verdicts_by_turn[static_cast<size_t>(r.turn - 1)][static_cast<size_t>(r.verdict)]++;
    ++t.turn_samples;
    t.completion_tokens += r.completion_tokens;
    if (r.verdict != sandbox::Verdict::kOk) continue;
    // A sample stops at its first OK, so each sample adds here at most once.
    for (size_t u = static_cast<size_t>(r.turn - 1); u < T; ++u) {
      t.correct_by_turn[u]++;
      for (size_t p = 0; p < spec.ps.size(); ++p)
        if (r.speedup && *r.speedup > spec.ps[p]) t.fast_by_turn[p][u]++;
    }
  }
  for (TaskTally& t : out) {
    for (int sample = 0; sample < spec.samples; ++sample) {
      auto it = last.find({t.task, sample});
      if (it == last.end()) {
        t.stopped_before_turn[0]++;
      } else {
        const EvalRecord& r = *it->second;
        if (r.verdict != sandbox::Verdict::kOk && r.verdict != sandbox::Verdict::kSandboxError && r.turn < spec.turns)
          t.stopped_before_turn[static_cast<size_t>(r.turn)]++;
      }
    }
  }
  for (const auto& t : out)
    for (int c : t.correct_by_turn)
      LEAP_CHECK(c <= spec.samples,
                 "task " << t.task << " has " << c << " correct of " << spec.samples << " samples");
  return out;
}

EvalSummary summarize(const std::vector<const TaskTally*>& tasks, const EvalSpec& spec) {
  const size_t T = static_cast<size_t>(spec.turns);
  EvalSummary s;
  s.tasks = static_cast<int>(tasks.size());
  s.samples = static_cast<int64_t>(tasks.size()) * spec.samples;
  s.pass_at_k.assign(spec.ks.size(), std::vector<double>(T, 0.0));
  s.acc.assign(T, 0.0);
  if (spec.timed) s.fast_p.assign(spec.ps.size(), std::vector<double>(T, 0.0));
  s.verdicts.assign(T, VerdictCounts{});
  s.stopped.assign(T, 0);
  int64_t tokens = 0;
  const double n = static_cast<double>(spec.samples);
  for (const TaskTally* t : tasks) {
    for (size_t u = 0; u < T; ++u) {
      for (size_t k = 0; k < spec.ks.size(); ++k)
        s.pass_at_k[k][u] += pass_at_k(spec.samples, t->correct_by_turn[u], spec.ks[k]);
      s.acc[u] += t->correct_by_turn[u] / n;
      for (size_t p = 0; p < s.fast_p.size(); ++p) s.fast_p[p][u] += t->fast_by_turn[p][u] / n;
      for (size_t v = 0; v < s.verdicts[u].size(); ++v)
        s.verdicts[u][v] += t->verdicts_by_turn[u][v];
      s.stopped[u] += t->stopped_before_turn[u];
    }
    s.turn_samples += t->turn_samples;
    tokens += t->completion_tokens;
  }
  if (!tasks.empty()) {
    const double m = static_cast<double>(tasks.size());
    for (auto& row : s.pass_at_k)
      for (auto& x : row) x /= m;
    for (auto& x : s.acc) x /= m;
    for (auto& row : s.fast_p)
      for (auto& x : row) x /= m;
  }
  s.mean_completion_tokens =
      s.turn_samples > 0 ? static_cast<double>(tokens) / static_cast<double>(s.turn_samples) : 0;
  return s;
}

}  // namespace leap::rl
