// The on-disk form of the trajectory file (docs/design.md, Trajectories), shared by the writer
// (trajectory_file.cpp) and the reader (trajectory_reader.cpp) so the two cannot drift: the HDF5
// compound types of StepRow and SampleRow, the enum types of the verdict and the DCP class, the
// dataset names, and how the bytes-plus-offsets text columns are sliced back into strings.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>
#include <vector>

#include "io/h5_handle.h"
#include "io/trajectory_rows.h"

namespace leap::io {

inline constexpr const char* kStepsDataset = "steps";
inline constexpr const char* kSamplesDataset = "samples";
inline constexpr const char* kTaskIdGroup = "/tasks/id";
inline constexpr const char* kTextGroups[3] = {"/text/prompt", "/text/completion",
                                               "/text/feedback"};

// The memory types of the rows; HDF5 converts file fields to them by name.
struct TrajectoryTypes {
  H5Id verdict,
      dcp;  // enum types: names are the contract, values follow sandbox::Verdict / DcpClass
  H5Id step, sample;  // compounds of StepRow and SampleRow
};
TrajectoryTypes make_trajectory_types();

// Rows in a 1-D dataset (the dataset must be valid).
hsize_t extent_of(hid_t dset);

// Reads rows [first, first + count) of a 1-D dataset into `out`; false when HDF5 cannot (a
// damaged file, or a field the memory type needs that the file lacks).
bool read_rows_into(hid_t dset, hid_t memtype, hsize_t first, hsize_t count, void* out);
template <class T>
std::optional<std::vector<T>> read_rows(hid_t dset, hid_t memtype, hsize_t first, hsize_t count) {
  std::vector<T> out(count);
  if (!read_rows_into(dset, memtype, first, count, out.data())) return std::nullopt;
  return out;
}
template <class T>
std::optional<std::vector<T>> read_all_rows(hid_t dset, hid_t memtype) {
  return read_rows<T>(dset, memtype, 0, extent_of(dset));
}

// A fixed-length string attribute, or nullopt when absent or of another type.
std::optional<std::string> read_string_attr(hid_t obj, const char* name);

// Texts of rows [first, first + count) of a text column whose data dataset is `data` and whose end
// offsets are `offs`, starting at byte *cursor (the end of row first - 1); reads only those bytes
// and advances *cursor. nullopt when the offsets are inconsistent with the data (a damaged file).
std::optional<std::vector<std::string>> read_text_rows(hid_t data, const std::vector<int64_t>& offs,
                                                       size_t first, size_t count, int64_t* cursor);

}  // namespace leap::io
