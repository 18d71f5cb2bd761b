// Reads a run's trajectory file back, for `leap analyze`: read-only, in SWMR-read mode where the
// writer wrote it for SWMR, so a running job can be read while it appends.
//
// Invariants:
//  - /steps is the commit marker (the writer flushes a step's samples before its /steps row):
//    only steps whose /steps row and all n_samples of its /samples rows are in the file are
//    returned, so a reader never sees half a step;
//  - bad input (no such file, not HDF5, an HDF5 file that is not a LEAP run, a damaged one) is an
//    exit-2 Status whose message names the file, what is wrong and the fix.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "io/trajectory_rows.h"

namespace leap::io {

struct TrajectoryRun {
  std::string path;  // the file read (a run folder resolves to its trajectories.h5)
  std::string config_ini, version, git_commit, schema_version;
  std::vector<std::string> task_ids;  // /tasks/id; SampleRow::task indexes it
  std::vector<StepRow> steps;         // the committed steps read, in file order
  std::vector<SampleRow> samples;     // the sample rows of those steps, in file order
  int64_t steps_in_file = 0;          // committed steps in the file (before last_steps)
  int64_t rows_pending = 0;           // /steps rows left out because their step is not complete yet
  double time_s_before = 0;  // sum of time_s over the committed steps left out by last_steps
  bool swmr_read = false;    // opened in SWMR-read mode
};

// Reads `path` (a trajectories.h5, or a run folder holding one). last_steps > 0 keeps only the
// last that many committed steps (and reads only their samples).
Expected<TrajectoryRun> read_trajectory_run(const std::string& path, int64_t last_steps = 0);

}  // namespace leap::io
