// Graceful stop on SIGUSR1 and SIGTERM. Slurm sends an early USR1 (`--signal=B:USR1@300`) that
// the jobscript forwards to mpirun and mpirun to the ranks; a SIGTERM sent to the ranks
// themselves is handled alike (one sent to mpirun, as Slurm's at the end of a job's time or on
// scancel, makes mpirun kill the ranks within seconds: this cannot help there). Neither may kill
// a rank in the middle of a step: the handler only records
// the signal, and the training loop asks at each step boundary whether to stop (rank 0 decides
// and tells the others, so every rank stops at the same step).
#pragma once

namespace leap {

class StopSignal {
 public:
  // Installs the handlers for SIGUSR1 and SIGTERM (idempotent). Returns the process's one
  // instance: a signal handler can only reach process-wide state, so this is the one place
  // where LEAP keeps any.
  static StopSignal& install();
  // The signal that asked to stop (SIGUSR1 or SIGTERM), or 0.
  int requested() const;
  // For tests and for programs that handle the request themselves.
  void clear();

 private:
  StopSignal() = default;
};

const char* signal_name(int sig);  // "SIGUSR1", "SIGTERM" (the signals installed), else "a signal"

}  // namespace leap
