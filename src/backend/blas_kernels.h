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

// The OPENBLAS_CORETYPE value that gives this CPU vector kernels ("SkylakeX" with AVX-512,
// "Haswell" with AVX2 and FMA), or empty when OpenBLAS's own choice already uses them. The
// launch scripts export it (`leap env --openblas-coretype`) before they start the ranks.
std::string blas_coretype_fix();

// Empty when OpenBLAS uses vector kernels this CPU can run well; otherwise a warning that names
// the kernels, what the CPU has, and the OPENBLAS_CORETYPE value that fixes it.
std::string blas_kernel_warning();

// What the CPU's vector units are, for messages: "AVX-512", "AVX2 and FMA" or "no AVX2".
std::string cpu_vector_units();

}  // namespace leap::backend
