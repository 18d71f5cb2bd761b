// Difficulty-Conditioned Pruning (DCP): which groups get debugging turns.
//
// Once per group, after turn 1, the group is judged by its number of failures N_fail among its
// valid samples G (void samples, trajectory.h, count neither way):
// - hopeless if N_fail >= hopeless_at * G (default 1.0: every sample failed);
// - easy     if N_fail <  easy_below  * G (default 0.5);
// - expanded otherwise: its failed samples get turn 2, 3, ... until their first success or
//   max_turns. Hopeless is tested first, so a group is never both.
// Mode `off` expands every group with a failure (the unpruned multi-turn baseline); a group
// without failures is easy in every mode. max_turns = 1 labels every group `none` (single-turn
// GRPO). Mode `adaptive` moves easy_below after each step to hold the number of expanded samples
// near `budget`: easy_below += step * (expanded - budget) / budget, but only when that relative
// error is outside +-dead_band, so decisions settle instead of oscillating; easy_below stays in
// [0, min(1, hopeless_at)] because beyond hopeless_at it would change no decision (no windup).
// The controller's state is a few numbers, serialised to JSON for checkpoints (state.json).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rl/trajectory.h"

namespace leap::rl {

enum class DcpMode { kStatic, kOff, kAdaptive };
// The `dcp` field of /samples in HDF5: none / easy / hopeless / expanded.
enum class DcpLabel { kNone = 0, kEasy, kHopeless, kExpanded };
std::string_view dcp_label_name(DcpLabel label);
std::string_view dcp_mode_name(DcpMode mode);

struct DcpOptions {
  DcpMode mode = DcpMode::kStatic;
  double easy_below = 0.5;     // initial value in adaptive mode
  double hopeless_at = 1.0;    // in (0, 1]
  int64_t budget = 0;          // adaptive: target number of expanded samples per step (> 0)
  double dead_band = 0.1;      // adaptive: relative error within which easy_below stays put
  double adaptive_step = 0.1;  // adaptive: change of easy_below per unit of relative error
  int max_turns = 3;           // from rl.max_turns
};

struct DcpDecision {
  DcpLabel label = DcpLabel::kNone;
  int n_fail = 0;         // failed valid samples after turn 1
  int n_valid = 0;        // samples with an outcome (not void)
  int group_size = 0;     // all samples, void included
  double easy_below = 0;  // thresholds in force when decided
  double hopeless_at = 0;
  std::string reason;  // one line for logs: why this label
};

// Per-step counts for /steps in HDF5 and for the adaptive controller.
struct DcpStepStats {
  int64_t n_groups = 0, n_none = 0, n_easy = 0, n_hopeless = 0, n_expanded = 0;
  int64_t samples_expanded = 0;  // samples that got a second turn
  int64_t sandbox_jobs = 0;      // candidates judged by the sandbox: every turn of every sample
  // Adds one group: its decision and its trajectories after the last turn.
  void add_group(const DcpDecision& decision, std::span<const Trajectory> final_group);
};

class DcpController {
 public:
  explicit DcpController(DcpOptions opts);

  // Judges a group from its turn-1 trajectories (each with exactly one turn so far).
  DcpDecision decide(std::span<const Trajectory> group) const;
  // Whether the group is sure to be expanded with n_fail failures among n_valid valid samples
  // already verified and `pending` samples still unverified (each may pass, fail or be void):
  // the streaming pipeline then starts the failed samples' turn 2 before the rest are in.
  bool expansion_forced(int n_fail, int n_valid, int pending) const;
  // Whether some way the pending samples can end expands the group: while it is possible but not
  // forced, the streaming pipeline may generate a failed sample's turn 2 speculatively.
  bool expansion_possible(int n_fail, int n_valid, int pending) const;
  // Whether this sample of a group so decided gets another turn now.
  bool continues(const DcpDecision& decision, const Trajectory& trajectory) const;
  // Indices of the samples of `group` that get another turn.
  std::vector<size_t> continuing_samples(const DcpDecision& decision,
                                         std::span<const Trajectory> group) const;

  // After each step (adaptive mode moves easy_below; the other modes only count).
  void update(const DcpStepStats& step);

  double easy_below() const { return easy_below_; }
  const DcpOptions& options() const { return opts_; }
  int64_t updates() const { return updates_; }
  double last_error() const { return last_error_; }

  // Checkpoint state. Loading restores easy_below only when both the saved state and this
  // controller are adaptive: a run resumed in static mode uses its configured thresholds.
  nlohmann::json state_json() const;
  Status load_state_json(const nlohmann::json& state);

 private:
  // The decision for n_fail failures among n_valid valid samples of a group of group_size.
  DcpDecision judge(int n_fail, int n_valid, int group_size) const;

  DcpOptions opts_;
  double easy_below_;
  int64_t updates_ = 0;
  double last_error_ = 0;
};

}  // namespace leap::rl
