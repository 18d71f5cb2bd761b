// Owning HDF5 identifiers and a guard that silences HDF5's error printing, shared by the
// trajectory writer and reader. Calls expected to fail on a user's file (not HDF5, not ours)
// run under QuietH5Errors and are reported by us, with the file name and the fix.
#pragma once

#include <hdf5.h>

namespace leap::io {

// Owns one HDF5 identifier and closes it with the right function.
class H5Id {
 public:
  H5Id() = default;
  H5Id(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  H5Id(H5Id&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& o) noexcept {
    reset();
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = H5I_INVALID_HID;
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { reset(); }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*closer_)(hid_t) = nullptr;
};

// Silences HDF5's own error-stack printing for the guard's lifetime.
class QuietH5Errors {
 public:
  QuietH5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietH5Errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietH5Errors(const QuietH5Errors&) = delete;
  QuietH5Errors& operator=(const QuietH5Errors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

}  // namespace leap::io
