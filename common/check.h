// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// One family of error checks for CUDA, cuBLAS and NCCL calls. Every failure becomes a
// course::ApiError whose message has one shape:
//     cudaSetDevice(7) failed at lessons/02-set-device/set_device.cu:41: cudaErrorInvalidDevice: invalid device ordinal
// A check of a result kept in a variable (`const cudaError_t error = ...; CUDA_CHECK(error);`)
// cannot know the call's text, and says so:
//     a CUDA call failed (its result, kept in `error`, checked at lessons/...:29): cudaErrorX: ...
// The checks throw instead of calling exit(), so a failing test case ends alone and the
// others still run; and exit codes stay free for their meaning to Meson (77 = skipped).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace course {

// Raised by every CHECK macro below. `code()` is the library's numeric error code.
class ApiError : public std::runtime_error {
 public:
  ApiError(std::string library, int code, const std::string& message)
      : std::runtime_error(message), library_(std::move(library)), code_(code) {}
  const std::string& library() const noexcept { return library_; }
  int code() const noexcept { return code_; }

 private:
  std::string library_;
  int code_;
};

// `lessons/01-x/y.cu` rather than `../lessons/01-x/y.cu` or an absolute path.
const char* course_relative_path(const char* file);

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(int result, const char* call, const char* file, int line);

}  // namespace course

// Checks a CUDA runtime call.
#define CUDA_CHECK(call)                                                                                    \
  do {                                                                                                      \
    const cudaError_t course_error_ = (call);                                                               \
    if (course_error_ != cudaSuccess) ::course::throw_cuda_error(course_error_, #call, __FILE__, __LINE__); \
  } while (0)

// Checks the launch just made (bad configuration, no kernel image for this GPU, ...).
// Errors that happen while the kernel runs surface later, as the error of some later CUDA call
// (a synchronizing one at the latest: cudaStreamSynchronize, cudaDeviceSynchronize, ...).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// Checks a cuBLAS call (include <cublas_v2.h> before using it).
#define CUBLAS_CHECK(call)                                                                       \
  do {                                                                                           \
    const cublasStatus_t course_status_ = (call);                                                \
    if (course_status_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::course::throw_cublas_error(static_cast<int>(course_status_), #call, __FILE__, __LINE__); \
  } while (0)

// Checks an NCCL call (include <nccl.h> before using it); the message adds ncclGetLastError().
#define NCCL_CHECK(call)                                                                       \
  do {                                                                                         \
    const ncclResult_t course_result_ = (call);                                                \
    if (course_result_ != ncclSuccess)                                                         \
      ::course::throw_nccl_error(static_cast<int>(course_result_), #call, __FILE__, __LINE__); \
  } while (0)
