// The progress line rank 0 prints after every RL step, and the summary at the end of a run:
// pass rates, DCP classes, sandbox jobs (with what expanding every group would have cost),
// tokens per second, the split of time and an ETA; and the line after each checkpoint.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "mpi/coordinator.h"

namespace leap::app {

// "42s", "3m07s", "2h05m": durations in progress lines (also `leap eval`'s).
std::string format_duration(double s);

// The line after a checkpoint: where, how big, how long, and by how many policy ranks (`policy`).
void log_checkpoint(const Logger& log, const std::string& run_dir, int64_t step, MPI_Comm policy, double seconds);

class TrainProgress {
 public:
  // `label` ends every progress line (empty: nothing), e.g. what a benchmark-only option changed.
  TrainProgress(int total_steps, int max_turns, const Logger& log, std::string label = "")
      : total_(total_steps), max_turns_(max_turns), log_(log), label_(std::move(label)) {}
  void add(const mpi::StepReport& report);
  void summary() const;

 private:
  int total_;
  int max_turns_;
  const Logger& log_;
  std::string label_;
  std::vector<mpi::StepReport> steps_;
  double elapsed_ = 0;
};

}  // namespace leap::app
