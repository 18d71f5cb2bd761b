// CUDA_CHECK / CUBLAS_CHECK / NCCL_CHECK: fatal errors from the CUDA libraries, reported through
// the one fatal reporter (common/check.h) with rank, host and file:line.
#pragma once

#include <cuda_runtime_api.h>

#include "common/check.h"

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t leap_cuda_err_ = (call);                                                  \
    if (leap_cuda_err_ != cudaSuccess)                                                    \
      ::leap::report_fatal(__FILE__, __LINE__, std::string("CUDA error ") +               \
                                                   cudaGetErrorName(leap_cuda_err_) + ": " + \
                                                   cudaGetErrorString(leap_cuda_err_) + " in " #call); \
  } while (0)
