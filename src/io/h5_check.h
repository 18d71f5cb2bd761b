// H5_CHECK: HDF5 calls that must not fail (the library is ours to drive correctly), reported
// through the one fatal reporter. Calls that fail because of the user's file return a Status
// instead; see trajectory_file.cpp.
#pragma once

#include <hdf5.h>

#include "common/check.h"

#define H5_CHECK(call)                                                                 \
  ([&]() {                                                                             \
    auto leap_h5_rc_ = (call);                                                         \
    if (leap_h5_rc_ < 0) ::leap::report_fatal(__FILE__, __LINE__, "HDF5 call failed: " #call); \
    return leap_h5_rc_;                                                                \
  }())
