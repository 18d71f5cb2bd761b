// HDF5 types and readers of the trajectory file, shared by its writer and its reader.
#include "io/trajectory_schema.h"

#include <array>
#include <initializer_list>
#include <utility>

#include "io/h5_check.h"
#include "sandbox/verdict.h"

namespace leap::io {

namespace {

H5Id make_type(hid_t id) {
  return H5Id(id, H5Tclose);
}

H5Id verdict_enum_type() {
  H5Id t = make_type(H5_CHECK(H5Tenum_create(H5T_NATIVE_INT8)));
  for (int8_t v = 0; v < sandbox::kVerdictCount; ++v) {
    std::string name(sandbox::verdict_name(static_cast<sandbox::Verdict>(v)));
    H5_CHECK(H5Tenum_insert(t.get(), name.c_str(), &v));
  }
  return t;
}

H5Id dcp_enum_type() {
  H5Id t = make_type(H5_CHECK(H5Tenum_create(H5T_NATIVE_INT8)));
  const std::array<const char*, 4> names = {"none", "easy", "hopeless", "expanded"};
  for (int8_t v = 0; v < 4; ++v)
    H5_CHECK(H5Tenum_insert(t.get(), names[static_cast<size_t>(v)], &v));
  return t;
}

#define LEAP_FIELD(type, Row, field, h5type) \
  H5_CHECK(H5Tinsert(type, #field, HOFFSET(Row, field), h5type))

H5Id step_type() {
  H5Id t = make_type(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(StepRow))));
  hid_t id = t.get();
  LEAP_FIELD(id, StepRow, step, H5T_NATIVE_INT64);
  for (auto [name, off] : std::initializer_list<std::pair<const char*, size_t>>{
           {"time_s", HOFFSET(StepRow, time_s)},
           {"gen_s", HOFFSET(StepRow, gen_s)},
           {"sandbox_s", HOFFSET(StepRow, sandbox_s)},
           {"train_s", HOFFSET(StepRow, train_s)},
           {"cpu_s", HOFFSET(StepRow, cpu_s)},
           {"policy_busy_s", HOFFSET(StepRow, policy_busy_s)},
           {"policy_wait_s", HOFFSET(StepRow, policy_wait_s)},
           {"policy_drain_s", HOFFSET(StepRow, policy_drain_s)},
           {"policy_idle_s", HOFFSET(StepRow, policy_idle_s)},
           {"sandbox_busy_s", HOFFSET(StepRow, sandbox_busy_s)},
           {"sandbox_idle_s", HOFFSET(StepRow, sandbox_idle_s)},
           {"loss", HOFFSET(StepRow, loss)},
           {"kl", HOFFSET(StepRow, kl)},
           {"entropy", HOFFSET(StepRow, entropy)},
           {"clip_frac", HOFFSET(StepRow, clip_frac)},
           {"ratio_mean", HOFFSET(StepRow, ratio_mean)},
           {"ratio_max", HOFFSET(StepRow, ratio_max)},
           {"grad_norm", HOFFSET(StepRow, grad_norm)},
           {"lr", HOFFSET(StepRow, lr)}}) {
    H5_CHECK(H5Tinsert(id, name, off, H5T_NATIVE_DOUBLE));
  }
  for (auto [name, off] : std::initializer_list<std::pair<const char*, size_t>>{
           {"n_groups", HOFFSET(StepRow, n_groups)},
           {"n_easy", HOFFSET(StepRow, n_easy)},
           {"n_hopeless", HOFFSET(StepRow, n_hopeless)},
           {"n_expanded", HOFFSET(StepRow, n_expanded)},
           {"n_dropped_groups", HOFFSET(StepRow, n_dropped_groups)},
           {"n_samples", HOFFSET(StepRow, n_samples)},
           {"n_sandbox_jobs", HOFFSET(StepRow, n_sandbox_jobs)},
           {"n_resampled", HOFFSET(StepRow, n_resampled)}}) {
    H5_CHECK(H5Tinsert(id, name, off, H5T_NATIVE_INT32));
  }
  LEAP_FIELD(id, StepRow, tokens_generated, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, prefill_tokens, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, kv_reused_tokens, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, n_jobs_overlapped, H5T_NATIVE_INT32);
  LEAP_FIELD(id, StepRow, train_sequences, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, train_positions, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, train_sequences_early, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, n_speculative, H5T_NATIVE_INT32);
  LEAP_FIELD(id, StepRow, n_speculative_dropped, H5T_NATIVE_INT32);
  LEAP_FIELD(id, StepRow, speculative_dropped_tokens, H5T_NATIVE_INT64);
  LEAP_FIELD(id, StepRow, n_rollout_ahead, H5T_NATIVE_INT32);
  LEAP_FIELD(id, StepRow, mean_completion_tokens, H5T_NATIVE_DOUBLE);
  LEAP_FIELD(id, StepRow, pass_turn1, H5T_NATIVE_DOUBLE);
  LEAP_FIELD(id, StepRow, pass_final, H5T_NATIVE_DOUBLE);
  return t;
}

H5Id sample_type(hid_t verdict_t, hid_t dcp_t) {
  H5Id t = make_type(H5_CHECK(H5Tcreate(H5T_COMPOUND, sizeof(SampleRow))));
  hid_t id = t.get();
  LEAP_FIELD(id, SampleRow, step, H5T_NATIVE_INT64);
  LEAP_FIELD(id, SampleRow, task, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, group, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, sample, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, turn, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, verdict, verdict_t);
  LEAP_FIELD(id, SampleRow, dcp, dcp_t);
  LEAP_FIELD(id, SampleRow, reward, H5T_NATIVE_FLOAT);
  LEAP_FIELD(id, SampleRow, advantage, H5T_NATIVE_FLOAT);
  LEAP_FIELD(id, SampleRow, prompt_tokens, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, completion_tokens, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, speedup, H5T_NATIVE_FLOAT);
  LEAP_FIELD(id, SampleRow, compile_ms, H5T_NATIVE_FLOAT);
  LEAP_FIELD(id, SampleRow, exec_ms, H5T_NATIVE_FLOAT);
  LEAP_FIELD(id, SampleRow, max_abs_err, H5T_NATIVE_FLOAT);
  LEAP_FIELD(id, SampleRow, mpi_rank, H5T_NATIVE_INT32);
  LEAP_FIELD(id, SampleRow, kv_reused_tokens, H5T_NATIVE_INT32);
  return t;
}

#undef LEAP_FIELD

}  // namespace

TrajectoryTypes make_trajectory_types() {
  TrajectoryTypes t;
  t.verdict = verdict_enum_type();
  t.dcp = dcp_enum_type();
  t.step = step_type();
  t.sample = sample_type(t.verdict.get(), t.dcp.get());
  return t;
}

hsize_t extent_of(hid_t dset) {
  H5Id space(H5_CHECK(H5Dget_space(dset)), H5Sclose);
  hsize_t n = 0;
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), &n, nullptr));
  return n;
}

bool read_rows_into(hid_t dset, hid_t memtype, hsize_t first, hsize_t count, void* out) {
  if (count == 0) return true;
  QuietH5Errors quiet;
  H5Id fspace(H5Dget_space(dset), H5Sclose);
  if (!fspace.valid() ||
      H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr) < 0)
    return false;
  H5Id mspace(H5Screate_simple(1, &count, nullptr), H5Sclose);
  return mspace.valid() &&
         H5Dread(dset, memtype, mspace.get(), fspace.get(), H5P_DEFAULT, out) >= 0;
}

std::optional<std::string> read_string_attr(hid_t obj, const char* name) {
  QuietH5Errors quiet;
  if (H5Aexists(obj, name) <= 0) return std::nullopt;
  H5Id attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) return std::nullopt;
  H5Id type(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0)
    return std::nullopt;
  std::string out(H5Tget_size(type.get()), '\0');
  if (H5Aread(attr.get(), type.get(), out.data()) < 0) return std::nullopt;
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

std::optional<std::vector<std::string>> read_text_rows(hid_t data, const std::vector<int64_t>& offs,
                                                       size_t first, size_t count,
                                                       int64_t* cursor) {
  if (offs.size() < first + count) return std::nullopt;
  const int64_t end = count ? offs[first + count - 1] : *cursor;
  if (end < *cursor || static_cast<hsize_t>(end) > extent_of(data)) return std::nullopt;
  std::string bytes(static_cast<size_t>(end - *cursor), '\0');
  if (!read_rows_into(data, H5T_NATIVE_UINT8, static_cast<hsize_t>(*cursor), bytes.size(),
                      bytes.data()))
    return std::nullopt;
  std::vector<std::string> out;
  int64_t at = *cursor;
  for (size_t r = first; r < first + count; ++r) {
    if (offs[r] < at || offs[r] > end) return std::nullopt;
    out.push_back(
        bytes.substr(static_cast<size_t>(at - *cursor), static_cast<size_t>(offs[r] - at)));
    at = offs[r];
  }
  *cursor = end;
  return out;
}

}  // namespace leap::io
