// See checkpoint_schedule.h.
#include "io/checkpoint_schedule.h"

#include <chrono>
#include <utility>

namespace leap::io {

CheckpointSchedule::CheckpointSchedule(int every, double minutes, Clock now_s)
    : every_(every), minutes_(minutes), now_s_(std::move(now_s)), last_saved_s_(now_s_()) {}

bool CheckpointSchedule::due(int64_t step, bool last) const {
  if (last) return true;
  if (every_ > 0 && (step + 1) % every_ == 0) return true;
  return minutes_ > 0 && now_s_() - last_saved_s_ >= minutes_ * 60.0;
}

void CheckpointSchedule::saved() {
  last_saved_s_ = now_s_();
}

double CheckpointSchedule::steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace leap::io
