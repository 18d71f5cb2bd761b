// One RL step's groups, scored: what the coordinator computes after the last turn (docs/design.md,
// step 5) and what it writes to /steps and /samples. Pure bookkeeping over rewards.h,
// advantages.h and dcp.h, so the distributed loop only has to move trajectories around.
//
// Invariants: groups keep their order; a skipped group (all advantages zero) yields no training
// item; every turn of every non-void sample of a kept group yields exactly one item, even with
// advantage 0 (its tokens still carry the KL term and count in the token normaliser).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "rl/advantages.h"
#include "rl/dcp.h"
#include "rl/rewards.h"
#include "rl/trajectory.h"

namespace leap::rl {

// A group after its last turn, with the DCP decision taken after its turn 1.
struct GroupRecord {
  std::vector<Trajectory> trajectories;
  DcpDecision decision;
};

// One turn-sample to train on.
struct TrainItem {
  int32_t group = 0, sample = 0, turn = 1;  // turn is 1-based
  double advantage = 0;
};

struct StepScores {
  std::vector<GroupAdvantages> groups;  // aligned with the input groups
  DcpStepStats dcp;
  int64_t n_dropped_groups = 0;  // groups skipped for all-zero advantages
  int64_t n_samples = 0;         // valid samples (void ones and ones with no turn excluded)
  int64_t n_turn_samples = 0;    // turns of the valid samples
  // Fractions of the valid samples that passed at turn 1 and at any turn; NaN when no sample is
  // valid (a step with nothing to judge has no pass rate, and pandas' means skip NaN where a
  // 0 would pull them down).
  double pass_turn1 = std::numeric_limits<double>::quiet_NaN();
  double pass_final = std::numeric_limits<double>::quiet_NaN();
  std::vector<TrainItem> train_items;
};

StepScores score_step(std::span<const GroupRecord> groups, const RewardOptions& reward_opts,
                      const AdvantageOptions& adv_opts);

}  // namespace leap::rl
