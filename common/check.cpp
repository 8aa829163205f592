// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The message shape shared by CUDA_CHECK, CUBLAS_CHECK and NCCL_CHECK: call, file:line,
// the error's name and its description.
#include "check.h"

#include <cublas_v2.h>
#include <nccl.h>

#include <cstring>
#include <sstream>

namespace course {
namespace {

std::string format_failure(const char* library, const char* call, const char* file, int line, const std::string& name,
                           const std::string& description) {
  std::ostringstream out;
  // CUDA_CHECK(cudaSetDevice(7)) names the call. CUDA_CHECK(error), on a result kept in a variable
  // to compare it first, only has the variable's name: say that, rather than "error failed".
  const std::string where = std::string(course_relative_path(file)) + ':' + std::to_string(line);
  if (std::strchr(call, '(') != nullptr) {
    out << call << " failed at " << where;
  } else {
    out << "a " << library << " call failed (its result, kept in `" << call << "`, checked at " << where << ')';
  }
  out << ": " << name << ": " << description;
  return out.str();
}

}  // namespace

const char* course_relative_path(const char* file) {
  // Meson hands the compiler paths relative to the build folder ("../lessons/...") or
  // absolute ones; a reader wants the path inside the course. The last top-level folder name in
  // the path wins, so a course kept under a folder called "tests" (~/tests/course/...) still reads
  // "lessons/...".
  const char* inside = nullptr;
  for (const char* root : {"/lessons/", "/solutions/", "/tests/", "/common/"}) {
    for (const char* found = std::strstr(file, root); found != nullptr; found = std::strstr(found + 1, root))
      if (inside == nullptr || found + 1 > inside) inside = found + 1;
  }
  if (inside != nullptr) return inside;
  while (std::strncmp(file, "../", 3) == 0) file += 3;
  return file;
}

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  throw ApiError("CUDA", static_cast<int>(error),
                 format_failure("CUDA", call, file, line, cudaGetErrorName(error), cudaGetErrorString(error)));
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  const auto s = static_cast<cublasStatus_t>(status);
  throw ApiError("cuBLAS", status,
                 format_failure("cuBLAS", call, file, line, cublasGetStatusName(s), cublasGetStatusString(s)));
}

void throw_nccl_error(int result, const char* call, const char* file, int line) {
  const auto r = static_cast<ncclResult_t>(result);
  std::string description = ncclGetErrorString(r);
  // The last error holds NCCL's own explanation (which rank, which peer, which transport).
  if (const char* last = ncclGetLastError(nullptr); last != nullptr && *last != '\0') {
    description += " (NCCL says: ";
    description += last;
    description += ')';
  }
  const char* names[] = {"ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                         "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  const std::string name = (result >= 0 && result < static_cast<int>(sizeof names / sizeof *names))
                               ? names[result]
                               : "ncclResult(" + std::to_string(result) + ")";
  throw ApiError("NCCL", result, format_failure("NCCL", call, file, line, name, description));
}

}  // namespace course
