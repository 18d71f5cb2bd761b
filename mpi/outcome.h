// A verdict as it travels between ranks (SandboxOutcome) and as the sandbox and the RL core
// use it (sandbox::VerifyResult). One place converts between them.
#pragma once

#include "mpi/messages.h"
#include "sandbox/verdict.h"

namespace leap::mpi {

inline SandboxOutcome to_outcome(int64_t uid, const sandbox::VerifyResult& r) {
  SandboxOutcome o;
  o.uid = uid;
  o.verdict = static_cast<int32_t>(r.verdict);
  o.max_abs_err = r.max_abs_err;
  o.compile_ms = r.compile_ms;
  o.exec_ms = r.exec_ms;
  o.speedup = r.speedup ? *r.speedup : -1;  // < 0: not timed
  o.slot_ms = r.slot_ms;
  o.reference_ran = r.reference_ran ? 1 : 0;
  o.feedback = r.feedback;
  return o;
}

inline sandbox::VerifyResult to_verify_result(const SandboxOutcome& o) {
  sandbox::VerifyResult r;
  r.verdict = static_cast<sandbox::Verdict>(o.verdict);
  r.max_abs_err = o.max_abs_err;
  if (o.speedup >= 0) r.speedup = o.speedup;
  r.compile_ms = o.compile_ms;
  r.exec_ms = o.exec_ms;
  r.feedback = o.feedback;
  return r;
}

}  // namespace leap::mpi
