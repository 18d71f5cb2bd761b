// Verifier: the protocol of design.md, Verification, in the supervisor. Trial seeds are fixed by
// (sandbox.seed, round, trial) so reference outputs are shared by every candidate of a task;
// a re-verification round (after an implausible speedup) uses new seeds, hence fresh inputs.
#include "sandbox/verifier.h"

#include <fmt/format.h>

#include <exception>
#include <future>
#include <mutex>

#include "sandbox/compare.h"
#include "sandbox/nvrtc_compiler.h"

namespace leap::sandbox {

namespace {

std::string trial_text(const tasks::Task& task, const TrialSpec& t) {
  std::string sizes;
  for (const auto& [k, v] : tasks::params_for(task, t.sizes))
    if (std::holds_alternative<int64_t>(v))
      sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ", ", k, std::get<int64_t>(v));
  return fmt::format("trial {} ({})", t.trial + 1, sizes);
}

}  // namespace

std::string bound_feedback(std::string text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  static constexpr std::string_view kCut = " [...]";
  size_t keep = max_bytes > kCut.size() ? max_bytes - kCut.size() : 0;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  text.resize(keep);
  return text + std::string(kCut.substr(0, max_bytes - keep));
}

Verifier::Verifier(JobChannel& channel, const SandboxConfig& config)
    : channel_(channel),
      config_(config),
      cache_(static_cast<size_t>(config.reference_cache_mb) << 20),
      results_(static_cast<size_t>(config.result_cache_entries)) {}

std::vector<TrialSpec> Verifier::trials_for(uint64_t round) const {
  std::vector<TrialSpec> trials;
  for (int i = 0; i < config_.trials; ++i) {
    TrialSpec t;
    t.seed = static_cast<uint64_t>(config_.seed) + round * 0x9E3779B97F4A7C15ull;
    t.trial = static_cast<uint64_t>(i);
    // On a GPU the last trial uses the interpreter's ragged sizes, so bugs only they show are
    // caught there too.
    t.sizes =
        channel_.on_gpu() && i + 1 < config_.trials ? tasks::SizeSet::kGpu : tasks::SizeSet::kCpu;
    trials.push_back(t);
  }
  return trials;
}

ExecOutcome Verifier::reference_outputs(const tasks::Task& task,
                                        const std::vector<TrialSpec>& trials,
                                        std::vector<std::shared_ptr<const Outputs>>* out, bool* ran) {
  out->assign(trials.size(), nullptr);
  bool all_cached = true;
  for (size_t i = 0; i < trials.size(); ++i) {
    (*out)[i] = cache_.find(ReferenceCache::key(task, trials[i]));
    all_cached = all_cached && (*out)[i];
  }
  if (all_cached) return {};
  // Candidates of one task arrive together (a group's G samples), one per slot: the first runs
  // the reference, the others wait for its outputs instead of running it again.
  std::string key = task.id + "|" + std::to_string(std::hash<std::string>{}(task.reference));
  for (const auto& t : trials) key += fmt::format("|{}:{}:{}", static_cast<int>(t.sizes), t.seed, t.trial);
  std::promise<ReferenceRun> mine;
  {
    std::unique_lock lock(inflight_mutex_);
    if (auto it = inflight_.find(key); it != inflight_.end()) {
      std::shared_future<ReferenceRun> theirs = it->second;
      lock.unlock();
      const ReferenceRun& r = theirs.get();
      if (r.outcome.ok()) *out = r.outputs;
      return r.outcome;
    }
    inflight_.emplace(key, mine.get_future().share());
  }
  ReferenceRun run;
  try {
    run.outcome = run_reference(task, trials, out, ran);
  } catch (...) {
    // Those waiting on this run get the exception too, and the next candidate runs it afresh
    // (an entry left behind would hand every later one a broken promise).
    mine.set_exception(std::current_exception());
    std::lock_guard lock(inflight_mutex_);
    inflight_.erase(key);
    throw;
  }
  run.outputs = *out;
  mine.set_value(run);
  std::lock_guard lock(inflight_mutex_);
  inflight_.erase(key);
  return run.outcome;
}

ExecOutcome Verifier::run_reference(const tasks::Task& task, const std::vector<TrialSpec>& trials,
                                    std::vector<std::shared_ptr<const Outputs>>* out, bool* ran) {
  JobRequest req;
  std::vector<size_t> missing;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!(*out)[i]) {
      missing.push_back(i);
      req.trials.push_back(trials[i]);
    }
  }
  if (ran) *ran = true;
  auto code = extract_code_block(task.reference);
  if (!code)
    return {Verdict::kSandboxError,
            "task " + task.id + " has no usable reference: " + code.status().message()};
  req.task = task;
  req.code = *code;
  req.limits = config_.plan_limits();
  JobReport report = channel_.run(req);
  if (!report.outcome.ok())
    return {Verdict::kSandboxError,
            fmt::format("the reference of task {} failed ({}): {}", task.id,
                        verdict_name(report.outcome.verdict), report.outcome.message)};
  for (size_t k = 0; k < missing.size(); ++k) {
    auto outputs = std::make_shared<const Outputs>(std::move(report.outputs[k]));
    cache_.insert(ReferenceCache::key(task, trials[missing[k]]), outputs);
    (*out)[missing[k]] = std::move(outputs);
  }
  return {};
}

void Verifier::run_and_compare(const tasks::Task& task, const Answer& answer,
                               const std::vector<TrialSpec>& trials, bool time,
                               VerifyResult* result, JobReport* report) {
  std::vector<std::shared_ptr<const Outputs>> refs;
  ExecOutcome ref = reference_outputs(task, trials, &refs, &result->reference_ran);
  if (!ref.ok()) {
    result->verdict = ref.verdict;
    result->feedback = ref.message;
    return;
  }
  JobRequest req;
  req.task = task;
  req.code = answer.source;
  req.trials = trials;
  req.limits = config_.plan_limits();
  req.time = time;
  *report = channel_.run(req);
  result->compile_ms += report->compile_ms;
  result->exec_ms += report->exec_ms;
  if (!report->outcome.ok()) {
    result->verdict = report->outcome.verdict;
    if (result->verdict == Verdict::kCompileError) {
      result->feedback = "compilation failed:\n" + bound_compile_log(report->outcome.message,
                                                                     config_.compile_error_lines,
                                                                     config_.feedback_bytes);
    } else {
      // The worker's report is checked before it is used: an index out of range names no trial.
      const bool named = report->failed_trial >= 0 && static_cast<size_t>(report->failed_trial) < trials.size();
      std::string where = named ? trial_text(task, trials[static_cast<size_t>(report->failed_trial)]) + ": "
                                : std::string();
      result->feedback = where + report->outcome.message;
    }
    return;
  }
  if (report->outputs.size() != trials.size()) {  // a worker's report without every trial passes none
    result->verdict = Verdict::kWrongAnswer;
    result->feedback = fmt::format("internal: the worker reported {} trials' outputs of {}", report->outputs.size(),
                                   trials.size());
    return;
  }
  for (size_t t = 0; t < trials.size(); ++t) {
    // The first trial's values are shown to the policy, the others' never: every trial's inputs are
    // the same throughout a run (the sandbox's seed), so a small output's expected values, shown
    // for every trial, could be learnt and written out instead of computed.
    Comparison c = compare_outputs(task, tasks::params_for(task, trials[t].sizes),
                                   report->outputs[t], *refs[t], /*show_values=*/t == 0);
    result->max_abs_err = std::max(result->max_abs_err, c.max_abs_err);
    if (!c.ok) {
      result->verdict = Verdict::kWrongAnswer;
      result->feedback = trial_text(task, trials[t]) + ": " + c.message;
      return;
    }
  }
  result->verdict = Verdict::kOk;
}

VerifyResult Verifier::verify(const tasks::Task& task, std::string_view completion) {
  VerifyResult result;
  auto answer = parse_answer(completion);
  if (!answer) {
    result.verdict = Verdict::kFormatError;
    result.feedback = bound_feedback(answer.status().message(), config_.feedback_bytes);
    return result;
  }
  const std::string cache_key = ResultCache::key(task, answer->source);
  if (auto cached = results_.find(cache_key)) {
    cached->reference_ran = false;  // judged from the verdict cache: nothing ran now
    return *cached;
  }
  const std::vector<TrialSpec> trials = trials_for(0);
  // Launch lines are checked over every size set before any worker is asked.
  for (const auto& t : trials) {
    auto plan =
        make_launch_plan(*answer, task, tasks::params_for(task, t.sizes), config_.plan_limits());
    if (!plan) {
      result.verdict = Verdict::kLaunchError;
      result.feedback = bound_feedback(trial_text(task, t) + ": " + plan.status().message(),
                                       config_.feedback_bytes);
      return result;
    }
  }
  JobReport report;
  run_and_compare(task, *answer, trials, channel_.on_gpu(), &result, &report);
  if (result.verdict == Verdict::kOk && report.candidate_ms && report.reference_ms &&
      *report.candidate_ms > 0) {
    double speedup = *report.reference_ms / *report.candidate_ms;
    if (speedup > config_.reverify_speedup) {
      // Too good to believe: new inputs, all trials again, before the speedup counts.
      JobReport again;
      run_and_compare(task, *answer, trials_for(1), false, &result, &again);
      if (result.verdict != Verdict::kOk)
        result.feedback = "re-verification with new inputs: " + result.feedback;
    }
    if (result.verdict == Verdict::kOk) {
      result.speedup = speedup;
      // Inside the noise band the two are equally fast; the policy should not chase noise.
      const char* verdict_on_speed = speedup > 1 + config_.noise_band ? "faster than the reference"
                                     : speedup < 1 - config_.noise_band
                                         ? "slower than the reference"
                                         : "as fast as the reference (within noise)";
      result.feedback = fmt::format(
          "passed {} trials; time {:.4g} ms, reference {:.4g} ms, speedup {:.2f}x: {}",
          trials.size(), *report.candidate_ms, *report.reference_ms, speedup, verdict_on_speed);
    }
  } else if (result.verdict == Verdict::kOk) {
    result.feedback = fmt::format("passed {} trials (CPU interpreter: not timed)", trials.size());
  }
  result.feedback = bound_feedback(std::move(result.feedback), config_.feedback_bytes);
  results_.insert(cache_key, result);
  return result;
}

}  // namespace leap::sandbox
