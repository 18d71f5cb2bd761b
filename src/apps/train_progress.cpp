// Formatting of the per-step progress line, the checkpoint line and the end-of-run summary.
#include "apps/train_progress.h"

#include <fmt/format.h>

#include "io/checkpoint_dir.h"

namespace leap::app {

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02d}m", static_cast<int>(s) / 3600, static_cast<int>(s) % 3600 / 60);
}

void log_checkpoint(const Logger& log, const std::string& run_dir, int64_t step, MPI_Comm policy, double seconds) {
  int ranks = 1;
  MPI_Comm_size(policy, &ranks);
  log.info("checkpoint {} written in {:.1f} s by {} policy rank(s)", io::describe_checkpoint(run_dir, step), seconds,
           ranks);
}

namespace {
double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }
}  // namespace

void TrainProgress::add(const mpi::StepReport& report) {
  steps_.push_back(report);
  const io::StepRow& r = report.row;
  elapsed_ += r.time_s;
  const double per_step = elapsed_ / static_cast<double>(steps_.size());
  // Steps are numbered within the whole run (a resumed run starts past 0), and so is the total.
  const double eta = per_step * static_cast<double>(total_ - static_cast<int>(r.step) - 1);
  const double policy_s = r.policy_busy_s + r.policy_wait_s + r.policy_idle_s;
  // Generation speed counts the speculative turns DCP dropped too: gen_s includes their time.
  const double generated = static_cast<double>(r.tokens_generated + r.speculative_dropped_tokens);
  log_.info(
      "step {}/{} | pass t1 {:.2f} final {:.2f} | easy {} hopeless {} expanded {} | sandbox jobs {} (unpruned {}) | "
      "{:.0f} tok/s | gen {:.1f}s sandbox {:.1f}s train {:.1f}s{} | policy wait {:.0f}% idle {:.0f}%, sandbox idle {:.0f}%{}{} | "
      "loss {:+.4f} | ETA {}{}",
      r.step + 1, total_, r.pass_turn1, r.pass_final, r.n_easy, r.n_hopeless, r.n_expanded, r.n_sandbox_jobs,
      report.jobs_if_unpruned, r.gen_s > 0 ? generated / r.gen_s : 0.0, r.gen_s,
      r.sandbox_s, r.train_s,
      // train_s is after the rollout; what trained during it (rl.overlap_training) is counted.
      r.train_sequences_early > 0
          ? fmt::format(" ({} of {} seqs during the rollout)", r.train_sequences_early, r.train_sequences)
          : std::string(),
      percent(r.policy_wait_s, policy_s), percent(r.policy_idle_s, policy_s),
      percent(r.sandbox_idle_s, r.sandbox_busy_s + r.sandbox_idle_s),
      // Turns started before DCP decided their group (rl.speculative_turns), and those it dropped.
      r.n_speculative > 0
          ? fmt::format(", {} turns speculative ({} dropped)", r.n_speculative, r.n_speculative_dropped)
          : std::string(),
      // Turn-1 samples generated during the step before, one update off the policy (rl.rollout_ahead).
      r.n_rollout_ahead > 0 ? fmt::format(", {} turn-1 samples from the step before", r.n_rollout_ahead)
                            : std::string(),
      r.loss, format_duration(eta), label_);
  // Void samples are the infrastructure's failures and train nothing: a sandbox rank whose GPU or
  // workers broke answers every job it pulls at once with SANDBOX_ERROR, so it takes far more
  // than its share and the run would go on learning from little.
  if (report.void_samples * 10 > report.samples)
    log_.warn("step {}: {} of {} samples are void (SANDBOX_ERROR after the retries), trained on nothing: the sandbox "
              "is failing, not the policy; the sandbox ranks' log lines (\"retrying\") name the failing ones",
              r.step + 1, report.void_samples, report.samples);
}

void TrainProgress::summary() const {
  if (steps_.empty()) {
    log_.info("summary: no steps were run");
    return;
  }
  int64_t easy = 0, hopeless = 0, expanded = 0, jobs = 0, unpruned = 0, reference_runs = 0;
  for (const auto& s : steps_) {
    reference_runs += s.reference_runs;
    easy += s.row.n_easy;
    hopeless += s.row.n_hopeless;
    expanded += s.row.n_expanded;
    jobs += s.row.n_sandbox_jobs;
    unpruned += s.jobs_if_unpruned;
  }
  const auto& first = steps_.front().row;
  const auto& last = steps_.back().row;
  log_.info("summary after {} steps in {}:", steps_.size(), format_duration(elapsed_));
  log_.info("  pass rate turn 1: first step {:.2f}, last step {:.2f}; final (up to {} turns): {:.2f} -> {:.2f}",
            first.pass_turn1, last.pass_turn1, max_turns_, first.pass_final, last.pass_final);
  log_.info("  groups by DCP class: easy {}, hopeless {}, expanded {}", easy, hopeless, expanded);
  log_.info("  sandbox jobs: {} run; expanding every group with a failure would have run {} ({:.0f}% saved)", jobs,
            unpruned, unpruned > 0 ? 100.0 * static_cast<double>(unpruned - jobs) / static_cast<double>(unpruned) : 0.0);
  // A task's reference runs when its outputs for the trials are not in the sandbox rank's cache:
  // once per task and rank when they fit, again after each eviction when they do not.
  log_.info("  task references run: {} (once per task and sandbox rank while their outputs fit "
            "sandbox.reference_cache_mb)",
            reference_runs);
}

}  // namespace leap::app
