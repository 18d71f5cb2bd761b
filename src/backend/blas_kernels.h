// Which kernels OpenBLAS chose for this CPU, and a warning when they waste it. OpenBLAS picks its
// kernels once, when the library loads, from the CPUs it knows; a CPU newer than the library
// (OpenBLAS 0.3.21 and an Intel Xeon of family 6, model 207, for example) falls back to its
// SSE3 "Prescott" kernels and runs sgemm at a fraction of the core's peak, with no message.
// OPENBLAS_CORETYPE, set before the process starts, overrides the choice.
#pragma once

#include <string>

namespace leap::backend {

// The name OpenBLAS gives the kernels it uses ("Cooperlake", "Haswell", "Prescott", ...).
std::string blas_core_name();

// Empty when OpenBLAS uses vector kernels this CPU can run well; otherwise a warning that names
// the kernels, what the CPU has, and the OPENBLAS_CORETYPE value that fixes it.
std::string blas_kernel_warning();

}  // namespace leap::backend
