// When a run writes a checkpoint: every `every` steps, or when `minutes` have passed since the
// last one (or since the start), whichever comes first; and always after the last step. The
// decision is made at a step boundary, after the step, so a crash loses at most `every` steps,
// or `minutes` plus the step in flight. The clock is injected, so the rule is testable without
// waiting; the run passes a steady clock. Only rank 0 asks: the others have nothing to save.
#pragma once

#include <cstdint>
#include <functional>

namespace leap::io {

class CheckpointSchedule {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic
  // every: steps between checkpoints (0: no step rule); minutes: the most time between two
  // checkpoints (0: no time rule). The time is counted from construction.
  CheckpointSchedule(int every, double minutes, Clock now_s);
  // After `step` (0-based) finished: is a checkpoint of it due? `last` marks the run's final step.
  bool due(int64_t step, bool last) const;
  // A checkpoint was written now: the time rule counts from here.
  void saved();
  // A steady_clock reading in seconds, for the run.
  static double steady_seconds();

 private:
  int every_;
  double minutes_;
  Clock now_s_;
  double last_saved_s_;
};

}  // namespace leap::io
