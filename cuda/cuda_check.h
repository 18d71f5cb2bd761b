// CUDA_CHECK / CUBLAS_CHECK / NCCL_CHECK: fatal errors from the CUDA libraries, reported through
// the one fatal reporter (common/check.h) with rank, host and file:line. Only for calls that must
// not fail; a candidate kernel's failure is a verdict, never this.
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

#include <cublasLt.h>

#define CUBLAS_CHECK(call)                                                                \
  do {                                                                                    \
    cublasStatus_t leap_cublas_st_ = (call);                                              \
    if (leap_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                         \
      ::leap::report_fatal(__FILE__, __LINE__, std::string("cuBLAS error ") +             \
                                                   cublasLtGetStatusString(leap_cublas_st_) + " in " #call); \
  } while (0)

// NCCL is optional only in the GPU-only build (LEAP_HAVE_NCCL says whether it was found).
#ifdef LEAP_HAVE_NCCL
#include <nccl.h>

#define NCCL_CHECK(call)                                                                  \
  do {                                                                                    \
    ncclResult_t leap_nccl_rc_ = (call);                                                  \
    if (leap_nccl_rc_ != ncclSuccess)                                                     \
      ::leap::report_fatal(__FILE__, __LINE__, std::string("NCCL error ") +               \
                                                   ncclGetErrorString(leap_nccl_rc_) + " in " #call); \
  } while (0)
#endif  // LEAP_HAVE_NCCL
