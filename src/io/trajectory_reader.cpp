// Trajectory reader: opens read-only (SWMR-read where possible), checks the file is a LEAP run and
// names what is missing when it is not, then reads the committed steps and their samples.
#include "io/trajectory_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "io/trajectory_schema.h"
#include "sandbox/verdict.h"

namespace leap::io {

namespace {

namespace fs = std::filesystem;

constexpr const char* kFixHint =
    "pass the trajectories.h5 that `leap train` writes in its run.out_dir";

// HDF5's signature sits at offset 0 or, behind a user block, at 512, 1024, 2048, ...
Expected<bool> has_hdf5_signature(const std::string& path) {
  static constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_input("cannot read '" + path + "': check that it is a readable file");
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return invalid_input("cannot read '" + path + "': " + ec.message());
  for (uintmax_t at = 0; at + sizeof(kSignature) <= size; at = at ? at * 2 : 512) {
    char buf[sizeof(kSignature)];
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(buf, sizeof(buf))) break;
    if (std::equal(buf, buf + sizeof(buf), kSignature)) return true;
  }
  return false;
}

// Fields of `memtype` (a compound) that the dataset's own type lacks.
std::vector<std::string> missing_fields(hid_t dset, hid_t memtype) {
  std::vector<std::string> out;
  H5Id ftype(H5Dget_type(dset), H5Tclose);
  const bool compound = ftype.valid() && H5Tget_class(ftype.get()) == H5T_COMPOUND;
  const int n = H5Tget_nmembers(memtype);
  for (int i = 0; i < n; ++i) {
    char* name = H5Tget_member_name(memtype, static_cast<unsigned>(i));
    if (!compound || H5Tget_member_index(ftype.get(), name) < 0) out.emplace_back(name);
    H5free_memory(name);
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

Expected<H5Id> open_read_only(const std::string& path, bool* swmr) {
  QuietH5Errors quiet;
  // SWMR-read first: it is what a file being written with SWMR needs, and it also opens a
  // finished file of the latest format. Older-format files (not ours) open plainly.
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
  *swmr = f >= 0;
  if (f < 0) f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0)
    return invalid_input(
        "cannot open '" + path +
        "' for reading: HDF5 refuses it, most likely because a writer holds it without SWMR "
        "(a run with output.swmr = off that is still running, or was killed). Wait for the run "
        "to end, or, if no run writes it any more, clear the flag with `h5clear -s " +
        path + "`");
  return H5Id(f, H5Fclose);
}

H5Id open_dataset(hid_t file, const std::string& name) {
  QuietH5Errors quiet;
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) return {};
  return H5Id(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
}

// The parent groups of a path ("/tasks/id/data" needs "/tasks" and "/tasks/id") must exist
// before H5Lexists may be asked about it.
H5Id open_nested_dataset(hid_t file, const std::string& group, const std::string& name) {
  QuietH5Errors quiet;
  std::string at;
  for (size_t pos = 1; pos <= group.size(); ++pos) {
    if (pos == group.size() || group[pos] == '/') {
      at = group.substr(0, pos);
      if (H5Lexists(file, at.c_str(), H5P_DEFAULT) <= 0) return {};
    }
  }
  return open_dataset(file, group + "/" + name);
}

}  // namespace

Expected<TrajectoryRun> read_trajectory_run(const std::string& path_in, int64_t last_steps) {
  TrajectoryRun run;
  run.path = path_in;
  std::error_code ec;
  if (fs::is_directory(path_in, ec)) {
    run.path = (fs::path(path_in) / "trajectories.h5").string();
    if (!fs::exists(run.path, ec))
      return not_found("'" + path_in + "' is a folder without trajectories.h5: " + kFixHint +
                       " (a run folder holding one works too)");
  }
  const std::string& path = run.path;
  if (!fs::exists(path, ec)) return not_found("'" + path + "' does not exist: " + kFixHint);
  LEAP_ASSIGN_OR_RETURN(bool is_hdf5, has_hdf5_signature(path));
  if (!is_hdf5) return invalid_input("'" + path + "' is not an HDF5 file: " + kFixHint);
  LEAP_ASSIGN_OR_RETURN(H5Id file, open_read_only(path, &run.swmr_read));
  const hid_t f = file.get();

  // Everything a LEAP run has, so that the message can name all that is missing at once.
  std::vector<std::string> missing;
  auto schema = read_string_attr(f, "schema_version");
  if (!schema) missing.push_back("root attribute schema_version");
  // Another version's fields differ by design: say which version it is, not what it lacks.
  if (schema && *schema != std::to_string(kTrajectorySchemaVersion))
    return invalid_input("'" + path + "' has trajectory schema version " + *schema +
                         "; this leap reads version " + std::to_string(kTrajectorySchemaVersion) +
                         ": analyze it with the leap version that wrote it");
  H5Id steps_d = open_dataset(f, kStepsDataset), samples_d = open_dataset(f, kSamplesDataset);
  H5Id ids_data = open_nested_dataset(f, kTaskIdGroup, "data");
  H5Id ids_offsets = open_nested_dataset(f, kTaskIdGroup, "offsets");
  if (!steps_d.valid()) missing.push_back("dataset /steps");
  if (!samples_d.valid()) missing.push_back("dataset /samples");
  if (!ids_data.valid() || !ids_offsets.valid())
    missing.push_back(std::string("dataset ") + kTaskIdGroup + "/{data,offsets}");
  TrajectoryTypes types = make_trajectory_types();
  if (steps_d.valid())
    for (const auto& field : missing_fields(steps_d.get(), types.step.get()))
      missing.push_back("/steps field " + field);
  if (samples_d.valid())
    for (const auto& field : missing_fields(samples_d.get(), types.sample.get()))
      missing.push_back("/samples field " + field);
  if (!missing.empty())
    return invalid_input("'" + path +
                         "' is an HDF5 file but not a LEAP trajectory file (it lacks " +
                         join(missing) + "): " + kFixHint);
  run.schema_version = *schema;
  run.config_ini = read_string_attr(f, "config").value_or("");
  run.version = read_string_attr(f, "version").value_or("");
  run.git_commit = read_string_attr(f, "git_commit").value_or("");

  auto damaged = [&](const std::string& what) {
    return invalid_input("'" + path + "': " + what + " cannot be read: the file is damaged. " +
                         "Check it with h5dump, or rerun from a checkpoint with --resume");
  };
  auto id_offs = read_all_rows<int64_t>(ids_offsets.get(), H5T_NATIVE_INT64);
  int64_t id_cursor = 0;
  auto ids = id_offs ? read_text_rows(ids_data.get(), *id_offs, 0, id_offs->size(), &id_cursor)
                     : std::nullopt;
  if (!ids) return damaged(kTaskIdGroup);
  run.task_ids = std::move(*ids);

  // /steps first: its rows are the commit markers of the samples already flushed before them.
  auto steps = read_all_rows<StepRow>(steps_d.get(), types.step.get());
  if (!steps) return damaged("/steps");
  const hsize_t sample_rows = extent_of(samples_d.get());
  std::vector<hsize_t> first_row;  // first /samples row of each committed step
  hsize_t rows = 0;
  for (size_t i = 0; i < steps->size(); ++i) {
    const StepRow& st = (*steps)[i];
    if (!step_row_committed(st, i > 0 ? &(*steps)[i - 1] : nullptr)) break;
    if (rows + static_cast<hsize_t>(st.n_samples) > sample_rows) break;
    first_row.push_back(rows);
    rows += static_cast<hsize_t>(st.n_samples);
  }
  run.steps_in_file = static_cast<int64_t>(first_row.size());
  run.rows_pending = static_cast<int64_t>(steps->size()) - run.steps_in_file;
  steps->resize(first_row.size());
  size_t keep_from = 0;
  if (last_steps > 0 && static_cast<size_t>(last_steps) < steps->size())
    keep_from = steps->size() - static_cast<size_t>(last_steps);
  for (size_t i = 0; i < keep_from; ++i) run.time_s_before += (*steps)[i].time_s;
  run.steps.assign(steps->begin() + static_cast<long>(keep_from), steps->end());
  const hsize_t first = keep_from < first_row.size() ? first_row[keep_from] : rows;
  auto samples = read_rows<SampleRow>(samples_d.get(), types.sample.get(), first, rows - first);
  if (!samples) return damaged("/samples");
  run.samples = std::move(*samples);
  // Each step's rows carry its step number: anything else means /steps and /samples disagree.
  size_t at = 0;
  for (const StepRow& st : run.steps) {
    for (int32_t k = 0; k < st.n_samples; ++k, ++at) {
      const SampleRow& s = run.samples[at];
      if (s.step != st.step)
        return damaged("/samples row " + std::to_string(first + at) + " (step " +
                       std::to_string(s.step) + ", where /steps says step " +
                       std::to_string(st.step) + ")");
      // rl.max_turns is at most 64; readers size per-turn tables by the deepest turn.
      if (s.turn < 1 || s.turn > 64)
        return damaged("/samples row " + std::to_string(first + at) + " (turn " +
                       std::to_string(s.turn) + ")");
      if (s.task < 0 || static_cast<size_t>(s.task) >= run.task_ids.size())
        return damaged("/samples row " + std::to_string(first + at) + " (task index " +
                       std::to_string(s.task) + " outside /tasks/id)");
      // Both index tables (run_summary.cpp): a value outside the enums is damage, or a file of a
      // leap with more verdicts than this one knows.
      if (s.verdict < 0 || s.verdict >= sandbox::kVerdictCount)
        return damaged("/samples row " + std::to_string(first + at) + " (verdict " + std::to_string(s.verdict) +
                       ", not one of the " + std::to_string(sandbox::kVerdictCount) + " this leap knows)");
      if (static_cast<int>(s.dcp) < 0 || static_cast<int>(s.dcp) > static_cast<int>(DcpClass::kExpanded))
        return damaged("/samples row " + std::to_string(first + at) + " (dcp class " +
                       std::to_string(static_cast<int>(s.dcp)) + ")");
    }
  }
  return run;
}

}  // namespace leap::io
