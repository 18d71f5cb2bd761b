// The one fatal-error reporter. LEAP_CHECK and the library-specific macros (CUDA_CHECK in cuda/,
// NVRTC_CHECK in sandbox/, H5_CHECK in io/, MPI_CHECK here) all end in report_fatal(), which
// prints rank, host, file:line and the message, then calls MPI_Abort when MPI is up, so that no
// rank is left hanging in a collective. Only for programming errors and broken infrastructure:
// a bad kernel from the policy or a bad config is a Status, never this.
#pragma once

#include <sstream>
#include <string>

namespace leap {

[[noreturn]] void report_fatal(const char* file, int line, const std::string& message);

// Errors reach rank 0: report_fatal() on another rank also sends its line to world rank 0 under
// this tag and gives rank 0 a few seconds to abort the job with it, then aborts by itself (rank
// 0 may be inside a collective and never look). Rank 0 looks whenever it waits for a message
// (mpi/messages.cpp's recv), through poll_fatal_reports().
inline constexpr int kFatalReportTag = 32100;
// On world rank 0: if another rank reported a fatal error, abort the job with its message.
void poll_fatal_reports();

// "rank 3 on node017": who is speaking, for fatal errors and rank-aware logs.
std::string describe_self();

}  // namespace leap

#define LEAP_CHECK(cond, ...)                                                       \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::ostringstream leap_check_os_;                                            \
      leap_check_os_ << "check failed: " #cond " " __VA_OPT__(<< __VA_ARGS__);      \
      ::leap::report_fatal(__FILE__, __LINE__, leap_check_os_.str());               \
    }                                                                               \
  } while (0)

#define LEAP_FATAL(...)                                                             \
  do {                                                                              \
    std::ostringstream leap_check_os_;                                              \
    leap_check_os_ << __VA_ARGS__;                                                  \
    ::leap::report_fatal(__FILE__, __LINE__, leap_check_os_.str());                 \
  } while (0)

// MPI calls return an int error code; the default MPI error handler aborts already, but ranks
// that switch to MPI_ERRORS_RETURN get a readable message through here.
#define MPI_CHECK(call)                                                             \
  do {                                                                              \
    int leap_mpi_rc_ = (call);                                                      \
    if (leap_mpi_rc_ != 0) {                                                        \
      ::leap::report_fatal(__FILE__, __LINE__,                                      \
                           std::string("MPI error ") + std::to_string(leap_mpi_rc_) + \
                               " in " #call);                                       \
    }                                                                               \
  } while (0)
