// HDF5 trajectory file: compound /steps and /samples, bytes+offsets texts, enum-typed verdict
// and DCP class, chunked + deflate + extendible datasets, SWMR after everything is created. The
// types and the text slicing are shared with the reader (trajectory_schema.h).
#include "io/trajectory_file.h"

#include <nlohmann/json.hpp>

#include <sys/vfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/h5_check.h"
#include "io/trajectory_schema.h"

namespace leap::io {

namespace {

// One start of a run, for the `attempts` attribute.
nlohmann::json attempt_json(int64_t first_step, const TrajectoryMeta& m) {
  return {{"first_step", first_step}, {"version", m.version}, {"git_commit", m.git_commit},
          {"config", m.config_ini}};
}

H5Id create_extendible(hid_t parent, const char* name, hid_t type, hsize_t chunk) {
  hsize_t dims = 0, maxdims = H5S_UNLIMITED;
  H5Id space(H5_CHECK(H5Screate_simple(1, &dims, &maxdims)), H5Sclose);
  H5Id dcpl(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose);
  H5_CHECK(H5Pset_chunk(dcpl.get(), 1, &chunk));
  H5_CHECK(H5Pset_deflate(dcpl.get(), 4));
  return H5Id(H5_CHECK(H5Dcreate2(parent, name, type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)),
              H5Dclose);
}

void append_rows(hid_t dset, hid_t memtype, const void* data, hsize_t n) {
  if (n == 0) return;
  hsize_t old = extent_of(dset), grown = old + n;
  H5_CHECK(H5Dset_extent(dset, &grown));
  H5Id fspace(H5_CHECK(H5Dget_space(dset)), H5Sclose);
  H5_CHECK(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &old, nullptr, &n, nullptr));
  H5Id mspace(H5_CHECK(H5Screate_simple(1, &n, nullptr)), H5Sclose);
  H5_CHECK(H5Dwrite(dset, memtype, mspace.get(), fspace.get(), H5P_DEFAULT, data));
}

void write_string_attr(hid_t obj, const char* name, const std::string& value) {
  H5Id type(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  H5_CHECK(H5Tset_size(type.get(), std::max<size_t>(1, value.size())));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  H5Id space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Id attr(H5_CHECK(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)), H5Aclose);
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  H5_CHECK(H5Awrite(attr.get(), type.get(), padded.data()));
}

// A text column: UTF-8 bytes plus int64 end offsets, one per row.
struct TextColumn {
  H5Id data, offsets;
  int64_t end = 0;  // total bytes so far == last offset

  void append(const std::vector<std::string>& texts) {
    std::string bytes;
    std::vector<int64_t> ends;
    for (const auto& t : texts) {
      bytes += t;
      ends.push_back(end + static_cast<int64_t>(bytes.size()));
    }
    append_rows(data.get(), H5T_NATIVE_UINT8, bytes.data(), bytes.size());
    append_rows(offsets.get(), H5T_NATIVE_INT64, ends.data(), ends.size());
    end += static_cast<int64_t>(bytes.size());
  }
};

TextColumn create_text(hid_t parent, const char* group) {
  H5Id g(H5_CHECK(H5Gcreate2(parent, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
  return {create_extendible(g.get(), "data", H5T_NATIVE_UINT8, 1 << 16),
          create_extendible(g.get(), "offsets", H5T_NATIVE_INT64, 1024), 0};
}

TextColumn open_text(hid_t file, const std::string& group) {
  return {H5Id(H5Dopen2(file, (group + "/data").c_str(), H5P_DEFAULT), H5Dclose),
          H5Id(H5Dopen2(file, (group + "/offsets").c_str(), H5P_DEFAULT), H5Dclose), 0};
}

H5Id file_access_latest() {
  H5Id fapl(H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  return fapl;
}

}  // namespace

bool parse_swmr_mode(const std::string& text, SwmrMode* out) {
  if (text == "auto") *out = SwmrMode::kAuto;
  else if (text == "on") *out = SwmrMode::kOn;
  else if (text == "off") *out = SwmrMode::kOff;
  else return false;
  return true;
}

bool swmr_supported_on(long fs_type) {
  // SWMR needs POSIX write() ordering as seen by every reader. Local file systems, Lustre and
  // GPFS (Spectrum Scale) give it across clients; NFS, BeeGFS (client-side caching by default),
  // SMB/CIFS and FUSE mounts (sshfs and the like) do not promise it.
  constexpr long kNfs = 0x6969, kBeegfs = 0x19830326, kSmb = 0x517B, kCifs = 0xFF534D42,
                 kSmb2 = 0xFE534D42, kFuse = 0x65735546;
  for (long no : {kNfs, kBeegfs, kSmb, kCifs, kSmb2, kFuse})
    if (fs_type == no) return false;
  return true;
}

bool swmr_supported_at(const std::string& path) {
  auto dir = std::filesystem::absolute(path).parent_path();
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0) return true;
  return swmr_supported_on(static_cast<long>(fs.f_type) & 0xFFFFFFFFL);
}

struct TrajectoryFile::Impl {
  H5Id file;
  TrajectoryTypes types;
  H5Id steps, samples;
  std::array<TextColumn, 3> text;
  bool swmr = false;
  std::string path;

  Status start_swmr(SwmrMode mode) {
    swmr = mode == SwmrMode::kOn || (mode == SwmrMode::kAuto && swmr_supported_at(path));
    if (swmr && H5Fstart_swmr_write(file.get()) < 0)
      return io_error("cannot start SWMR writing on '" + path + "': set output.swmr = off on this file system");
    return Status::ok();
  }

  // Samples and texts: flushed before a step's /steps row is even written, since readers treat
  // that row as the step's commit and HDF5 may write a cached chunk out at any time.
  Status flush_samples() {
    for (auto& t : text) {
      if (H5Dflush(t.data.get()) < 0 || H5Dflush(t.offsets.get()) < 0) return io_error("flush failed: " + path);
    }
    if (H5Dflush(samples.get()) < 0) return io_error("flush failed: " + path);
    return Status::ok();
  }
  Status flush() {
    LEAP_RETURN_IF_ERROR(flush_samples());
    if (H5Dflush(steps.get()) < 0) return io_error("flush failed: " + path);
    // A global flush also writes the superblock's end-of-allocation, without which a file whose
    // writer was killed cannot be reopened for resuming.
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) return io_error("flush failed: " + path);
    return Status::ok();
  }
};

TrajectoryFile::TrajectoryFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrajectoryFile::~TrajectoryFile() { (void)close(); }

Expected<std::unique_ptr<TrajectoryFile>> TrajectoryFile::create(const std::string& path, const TrajectoryMeta& meta,
                                                                 SwmrMode swmr, int64_t first_step) {
  if (std::filesystem::exists(path))
    return invalid_input("trajectory file '" + path + "' already exists: resume the run with --resume, or choose "
                         "another run.out_dir");
  auto im = std::make_unique<Impl>();
  im->path = path;
  H5Id fapl = file_access_latest();
  hid_t f = H5I_INVALID_HID;
  {
    QuietH5Errors quiet;
    f = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get());
  }
  if (f < 0) return io_error("cannot create trajectory file '" + path + "': check the folder exists and is writable");
  im->file = H5Id(f, H5Fclose);
  im->types = make_trajectory_types();
  hid_t root = im->file.get();
  write_string_attr(root, "config", meta.config_ini);
  write_string_attr(root, "version", meta.version);
  write_string_attr(root, "git_commit", meta.git_commit);
  write_string_attr(root, "run_fingerprint", meta.run_fingerprint);
  write_string_attr(root, "schema_version", std::to_string(kTrajectorySchemaVersion));
  write_string_attr(root, "attempts",
                    meta.attempts_json.empty()
                        ? nlohmann::json::array({attempt_json(first_step, meta)}).dump()
                        : meta.attempts_json);
  im->steps = create_extendible(root, kStepsDataset, im->types.step.get(), 64);
  im->samples = create_extendible(root, kSamplesDataset, im->types.sample.get(), 1024);
  H5Id text(H5_CHECK(H5Gcreate2(root, "text", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
  im->text = {create_text(text.get(), "prompt"), create_text(text.get(), "completion"),
              create_text(text.get(), "feedback")};
  H5Id tasks(H5_CHECK(H5Gcreate2(root, "tasks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
  TextColumn ids = create_text(tasks.get(), "id");
  ids.append(meta.task_ids);
  LEAP_RETURN_IF_ERROR(im->start_swmr(swmr));
  LEAP_RETURN_IF_ERROR(im->flush());
  return std::unique_ptr<TrajectoryFile>(new TrajectoryFile(std::move(im)));
}

Expected<std::unique_ptr<TrajectoryFile>> TrajectoryFile::resume(const std::string& path, const TrajectoryMeta& now,
                                                                 int64_t last_step, SwmrMode swmr) {
  const std::string& run_fingerprint = now.run_fingerprint;
  if (!std::filesystem::exists(path)) return not_found("trajectory file '" + path + "' does not exist");
  // The old file is only read: its rows up to last_step are copied, step by step, into a fresh
  // file that then replaces it. A writer killed mid-append may have left the old file's
  // allocation state behind its data; a fresh file carries none of that, and a crash during the
  // copy leaves the old file untouched.
  H5Id fapl = file_access_latest();
  // A writer killed in SWMR mode leaves the superblock marked "open for writing"; clear it as
  // h5clear would, since this run is the file's only writer by construction.
  hbool_t clear = 1;
  H5Pset(fapl.get(), "clear_status_flags", &clear);
  hid_t f = H5I_INVALID_HID;
  {
    QuietH5Errors quiet;
    f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  }
  if (f < 0) return invalid_input("cannot open trajectory file '" + path + "' for resuming: not an HDF5 file, or damaged");
  H5Id old(f, H5Fclose);
  TrajectoryMeta meta;
  if (auto schema = read_string_attr(f, "schema_version");
      schema && *schema != std::to_string(kTrajectorySchemaVersion)) {
    return invalid_input("'" + path + "' has trajectory schema version " + *schema +
                         "; this leap writes version " + std::to_string(kTrajectorySchemaVersion) +
                         ": resume it with the leap version that wrote it, or start a new run");
  }
  auto fp = read_string_attr(f, "run_fingerprint");
  if (!fp) return invalid_input("'" + path + "' is not a LEAP trajectory file (no run_fingerprint attribute)");
  if (*fp != run_fingerprint)
    return invalid_input("'" + path + "' belongs to another run (its model/seed/suite differ from this config): "
                         "use a fresh run.out_dir, or resume with the config that made it");
  meta.run_fingerprint = *fp;
  meta.config_ini = read_string_attr(f, "config").value_or("");
  meta.version = read_string_attr(f, "version").value_or("");
  meta.git_commit = read_string_attr(f, "git_commit").value_or("");
  // Every start so far (a file from before `attempts` existed: its first start, as its root
  // attributes say), then this one.
  nlohmann::json attempts = nlohmann::json::parse(read_string_attr(f, "attempts").value_or(""), nullptr, false);
  if (!attempts.is_array()) attempts = nlohmann::json::array({attempt_json(0, meta)});
  // A resume from an earlier checkpoint drops the starts whose steps it cuts off.
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& a : attempts)
    if (!a.is_object() || a.value("first_step", int64_t{0}) <= last_step) kept.push_back(a);
  attempts = std::move(kept);
  attempts.push_back(attempt_json(last_step + 1, now));
  meta.attempts_json = attempts.dump();
  TrajectoryTypes types = make_trajectory_types();
  H5Id steps_d(H5Dopen2(f, kStepsDataset, H5P_DEFAULT), H5Dclose), samples_d(H5Dopen2(f, kSamplesDataset, H5P_DEFAULT), H5Dclose);
  TextColumn ids = open_text(f, kTaskIdGroup);
  std::array<TextColumn, 3> text;
  for (size_t i = 0; i < 3; ++i) text[i] = open_text(f, kTextGroups[i]);
  if (!steps_d.valid() || !samples_d.valid() || !ids.data.valid() || !text[2].offsets.valid())
    return invalid_input("'" + path + "' lacks /steps, /samples, /text or /tasks: not a complete LEAP trajectory file");
  int64_t id_cursor = 0;
  auto id_offs = read_all_rows<int64_t>(ids.offsets.get(), H5T_NATIVE_INT64);
  auto task_ids = id_offs ? read_text_rows(ids.data.get(), *id_offs, 0, id_offs->size(), &id_cursor) : std::nullopt;
  if (!task_ids) return invalid_input("'" + path + "': /tasks/id is damaged");
  // /samples' task column indexes this list: a suite edited between the stop and the resume
  // would name the wrong tasks for every later row (the run's fingerprint has the suite's path,
  // not its contents).
  if (*task_ids != now.task_ids)
    return invalid_input("'" + path + "' lists " + std::to_string(task_ids->size()) +
                         " tasks in /tasks/id, not the " + std::to_string(now.task_ids.size()) +
                         " of this run's suite (tasks.suite) in the same order: the suite changed since the run "
                         "started; resume with the suite it started with, or start a new run");
  meta.task_ids = std::move(*task_ids);
  auto steps = read_all_rows<StepRow>(steps_d.get(), types.step.get());
  auto samples = read_all_rows<SampleRow>(samples_d.get(), types.sample.get());
  if (!steps || !samples)
    return invalid_input("'" + path + "': /steps or /samples cannot be read (damaged, or written by another schema)");

  const std::string tmp = path + ".resume.tmp";
  std::filesystem::remove(tmp);
  // Every way out but the rename below removes the partial copy (declared before `fresh`, so the
  // copy is closed first): a refused resume leaves the run's folder as it was.
  struct RemoveUnlessRenamed {
    const std::string& path;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      std::error_code ec;
      if (!renamed) std::filesystem::remove(path, ec);
    }
  } partial{tmp};
  LEAP_ASSIGN_OR_RETURN(auto fresh, create(tmp, meta, SwmrMode::kOff));
  size_t row = 0;
  int64_t last_copied = -1;
  std::array<int64_t, 3> cursor{0, 0, 0};
  std::array<std::vector<int64_t>, 3> offs;
  for (size_t i = 0; i < 3; ++i) {
    auto o = read_all_rows<int64_t>(text[i].offsets.get(), H5T_NATIVE_INT64);
    if (!o) return invalid_input("'" + path + "': " + kTextGroups[i] + "/offsets is damaged");
    offs[i] = std::move(*o);
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    const StepRow& st = (*steps)[i];
    // Committed steps up to the checkpoint's, by the readers' rule (a row the killed run had
    // extended but not written is not one), each with exactly its n_samples rows.
    if (st.step > last_step || !step_row_committed(st, i > 0 ? &(*steps)[i - 1] : nullptr)) break;
    size_t first = row;
    while (row < samples->size() && (*samples)[row].step == st.step) ++row;
    if (row - first != static_cast<size_t>(st.n_samples))
      return invalid_input("'" + path + "': step " + std::to_string(st.step) + " lists " +
                           std::to_string(st.n_samples) + " samples but /samples has " +
                           std::to_string(row - first) + ": the file is damaged (check it with h5dump)");
    std::vector<SampleRow> rows(samples->begin() + static_cast<long>(first), samples->begin() + static_cast<long>(row));
    std::array<std::vector<std::string>, 3> cols;
    for (size_t i = 0; i < 3; ++i) {
      auto t = read_text_rows(text[i].data.get(), offs[i], first, row - first, &cursor[i]);
      if (!t) return invalid_input("'" + path + "': text of step " + std::to_string(st.step) + " is damaged");
      cols[i] = std::move(*t);
    }
    std::vector<SampleText> texts;
    for (size_t k = 0; k < rows.size(); ++k) texts.push_back({cols[0][k], cols[1][k], cols[2][k]});
    LEAP_RETURN_IF_ERROR(fresh->append_step(st, rows, texts));
    last_copied = st.step;
  }
  LEAP_RETURN_IF_ERROR(fresh->close());
  // The checkpoint's step and every one before it must be in the file, or the resumed run would
  // leave a gap no reader could see.
  if (last_copied != last_step) {
    return invalid_input(
        "'" + path + "' holds the steps up to " + std::to_string(last_copied) + ", not up to the checkpoint's step " +
        std::to_string(last_step) +
        " (a crash lost its last rows before they reached the disk, or a row is damaged): resume from a checkpoint "
        "of step " + std::to_string(last_copied) +
        " or earlier if there is one (--resume RUN/checkpoints/step_NNNNNN), or move the file aside and resume: "
        "the run then writes a new trajectory file from step " + std::to_string(last_step + 1));
  }
  old.reset();
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return io_error("cannot replace '" + path + "' with its resumed copy: " + ec.message());
  partial.renamed = true;

  // Reopen the fresh file for appending, then start SWMR.
  auto im = std::make_unique<Impl>();
  im->path = path;
  hid_t g = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get());
  if (g < 0) return io_error("cannot reopen '" + path + "' after resuming");
  im->file = H5Id(g, H5Fclose);
  im->types = make_trajectory_types();
  im->steps = H5Id(H5_CHECK(H5Dopen2(g, kStepsDataset, H5P_DEFAULT)), H5Dclose);
  im->samples = H5Id(H5_CHECK(H5Dopen2(g, kSamplesDataset, H5P_DEFAULT)), H5Dclose);
  for (size_t i = 0; i < 3; ++i) {
    im->text[i] = open_text(g, kTextGroups[i]);
    im->text[i].end = cursor[i];
  }
  LEAP_RETURN_IF_ERROR(im->start_swmr(swmr));
  LEAP_RETURN_IF_ERROR(im->flush());
  return std::unique_ptr<TrajectoryFile>(new TrajectoryFile(std::move(im)));
}

Status TrajectoryFile::append_step(const StepRow& step, const std::vector<SampleRow>& samples,
                                   const std::vector<SampleText>& texts) {
  if (samples.size() != texts.size()) return internal_error("append_step: samples and texts differ in length");
  Impl& im = *impl_;
  if (!im.file.valid()) return internal_error("append_step on a closed trajectory file");
  std::array<std::vector<std::string>, 3> cols;
  for (const auto& t : texts) {
    cols[0].push_back(t.prompt);
    cols[1].push_back(t.completion);
    cols[2].push_back(t.feedback);
  }
  for (size_t i = 0; i < 3; ++i) im.text[i].append(cols[i]);
  append_rows(im.samples.get(), im.types.sample.get(), samples.data(), samples.size());
  LEAP_RETURN_IF_ERROR(im.flush_samples());
  append_rows(im.steps.get(), im.types.step.get(), &step, 1);
  return im.flush();
}

Status TrajectoryFile::sync() {
  Impl& im = *impl_;
  if (!im.file.valid()) return Status::ok();
  LEAP_RETURN_IF_ERROR(im.flush());
  // The handle is a file descriptor only under the POSIX (sec2) driver, the one this file is
  // opened with unless HDF5_DRIVER names another: then the flush is all there is.
  H5Id fapl(H5Fget_access_plist(im.file.get()), H5Pclose);
  if (!fapl.valid() || H5Pget_driver(fapl.get()) != H5FD_SEC2) return Status::ok();
  void* handle = nullptr;
  if (H5Fget_vfd_handle(im.file.get(), fapl.get(), &handle) < 0 || handle == nullptr)
    return io_error("cannot reach the file descriptor of '" + im.path + "' to sync it");
  // A file system without fsync (some FUSE mounts) keeps what the flush gave it.
  if (::fsync(*static_cast<int*>(handle)) != 0 && errno != EINVAL && errno != ENOTSUP)
    return io_error("fsync of '" + im.path + "' failed: " + std::strerror(errno));
  return Status::ok();
}

int64_t TrajectoryFile::steps_written() const { return static_cast<int64_t>(extent_of(impl_->steps.get())); }
int64_t TrajectoryFile::samples_written() const { return static_cast<int64_t>(extent_of(impl_->samples.get())); }
bool TrajectoryFile::swmr() const { return impl_->swmr; }

Status TrajectoryFile::close() {
  if (!impl_ || !impl_->file.valid()) return Status::ok();
  Status st = impl_->flush();
  impl_->steps.reset();
  impl_->samples.reset();
  for (auto& t : impl_->text) {
    t.data.reset();
    t.offsets.reset();
  }
  impl_->file.reset();
  return st;
}

}  // namespace leap::io
