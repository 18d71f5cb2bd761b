// The trajectory file, written by rank 0 only (docs/design.md, Trajectories).
//
// Invariants:
//  - every dataset and attribute exists before H5Fstart_swmr_write, so h5py can open a running
//    job with `h5py.File(path, 'r', libver='latest', swmr=True)`;
//  - text is UTF-8 bytes in `…/data` plus int64 end offsets in `…/offsets` (variable-length
//    strings are not SWMR-safe), row-aligned with /samples;
//  - a step is appended whole (its /steps row, its /samples rows, their texts) and flushed, so a
//    reader never sees a step's samples without its row... up to the order of flushes: /samples
//    and /text are flushed before /steps, and readers treat /steps as the commit marker;
//  - on resume, rows past the checkpoint's step are cut off before SWMR starts, so each step is
//    in the file exactly once after any crash.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "io/trajectory_rows.h"

namespace leap::io {

struct TrajectoryMeta {
  std::string config_ini;   // the fully resolved config (OptionSet::to_ini)
  std::string version;      // leap version
  std::string git_commit;
  std::string run_fingerprint;  // identifies the run: resuming into another run's file is refused
  std::vector<std::string> task_ids;  // /tasks/id; SampleRow::task indexes it
  // The root attribute `attempts`: a JSON array with one object per start of the run (the first
  // and every resume): first_step (the first step it wrote), version, git_commit, config. Empty:
  // create() writes this meta's start at its first_step (0 for a new run).
  std::string attempts_json;
};

enum class SwmrMode { kAuto, kOn, kOff };
// Parses "auto|on|off".
bool parse_swmr_mode(const std::string& text, SwmrMode* out);
// SWMR needs POSIX write ordering across clients: auto keeps it on local file systems, Lustre
// and GPFS, and turns it off on NFS, BeeGFS, SMB/CIFS and FUSE mounts (by statfs's f_type).
bool swmr_supported_at(const std::string& path);
bool swmr_supported_on(long fs_type);

class TrajectoryFile {
 public:
  // Creates a new file (an existing file is an error: never overwrite a run's trajectories).
  // first_step: the step its first start writes first (a resumed run whose file was moved aside
  // starts a new one after the checkpoint's step), when meta.attempts_json is empty.
  static Expected<std::unique_ptr<TrajectoryFile>> create(const std::string& path, const TrajectoryMeta& meta,
                                                          SwmrMode swmr, int64_t first_step = 0);
  // Reopens a file for a resumed run: checks the fingerprint (`now.run_fingerprint`), cuts rows
  // with step > last_step, adds this start (`now`'s version, git commit and config, from step
  // last_step + 1) to `attempts`, then starts SWMR. The root config, version and git_commit stay
  // the first start's.
  static Expected<std::unique_ptr<TrajectoryFile>> resume(const std::string& path, const TrajectoryMeta& now,
                                                          int64_t last_step, SwmrMode swmr);
  ~TrajectoryFile();

  // Appends one step and its samples (rows and texts must be the same length) and flushes.
  Status append_step(const StepRow& step, const std::vector<SampleRow>& samples,
                     const std::vector<SampleText>& texts);
  // Flushes and fsyncs the file: called before a checkpoint is written, so that a checkpoint on
  // disk never outlives the trajectory rows of its steps (resume() refuses a file that lacks them).
  Status sync();
  int64_t steps_written() const;
  int64_t samples_written() const;
  bool swmr() const;
  Status close();

  struct Impl;

 private:
  explicit TrajectoryFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leap::io
