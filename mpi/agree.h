// Agreement on a setup status across ranks: every rank passes its own Status and gets back the
// same answer, OK only if every rank was OK, else the first failing rank's error prefixed with
// that rank. So a model that fails to load on rank 5 stops every rank with the same message,
// instead of leaving the others waiting in the first collective of the run.
#pragma once

#include <mpi.h>

#include "common/status.h"

namespace leap::mpi {

Status agree(const Status& mine, MPI_Comm comm);

// Rank 0's answer, on every rank: its value or its error. For choices only rank 0 may make,
// such as which checkpoint a run resumes from (another node's stale directory listing must not
// start a rank fresh). Other ranks' `mine` is ignored.
Expected<std::string> from_root(const Expected<std::string>& mine, MPI_Comm comm);

}  // namespace leap::mpi
