// When the CPU backend's loops fork threads. A parallel region costs a few microseconds on an
// idle machine, but a whole scheduler time slice (milliseconds) when the cores are shared with
// other processes and the team waits for a descheduled thread. So only ops of about a
// millisecond of work fork (GEMMs and attention of training and prefill, the MLP activation);
// decode steps and small row ops run on the calling thread. The unit is "about one float
// operation".
#pragma once

#include <cstddef>

namespace leap::backend {

inline bool worth_threads(size_t work) {
  return work >= (size_t{1} << 22);
}

}  // namespace leap::backend
