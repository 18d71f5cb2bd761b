// The handler writes one sig_atomic_t and returns: nothing else is async-signal-safe enough to
// do in it (no logging, no allocation, no MPI).
#include "common/stop_signal.h"

#include <csignal>

namespace leap {

namespace {
volatile std::sig_atomic_t g_requested = 0;  // the signal number, or 0

extern "C" void on_stop_signal(int sig) { g_requested = sig; }
}  // namespace

StopSignal& StopSignal::install() {
  static StopSignal instance;
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // blocking calls (MPI, waitpid) resume instead of failing with EINTR
    sigaction(SIGUSR1, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    return true;
  }();
  (void)installed;
  return instance;
}

int StopSignal::requested() const { return g_requested; }
void StopSignal::clear() { g_requested = 0; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGUSR1: return "SIGUSR1";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace leap
