// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The cuBLAS calls of the code under test, watched (cublas_calls.h says why): each definition
// below notes the device current at the call and passes the call on to libcublas's own.
#include "cublas_calls.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace {

std::mutex cublas_mutex;
std::map<cublasHandle_t, course::testing::CublasHandleRecord> cublas_records;

// The definition in libcublas: the next one after this program's (this program also calls
// cublasGetStream, so the linker keeps libcublas loaded), else from libcublas.so.<major> itself.
template <class Function>
Function libcublas(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {
    const std::string library = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    if (void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL)) symbol = dlsym(handle, name);
  }
  if (symbol == nullptr) {
    std::fprintf(stderr, "cublas_calls: %s is not in libcublas\n", name);
    std::abort();
  }
  return reinterpret_cast<Function>(symbol);
}

int device_now() {
  int device = -1;
  return cudaGetDevice(&device) == cudaSuccess ? device : -1;
}

void note_gemv(cublasHandle_t handle) {
  const int device = device_now();
  const std::lock_guard lock(cublas_mutex);
  course::testing::CublasHandleRecord& record = cublas_records[handle];
  ++record.gemv_calls;
  if (device != record.created_on) ++record.gemv_on_other_device;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  static const auto create = libcublas<cublasStatus_t (*)(cublasHandle_t*)>("cublasCreate_v2");
  const int device = device_now();
  const cublasStatus_t status = create(handle);
  if (status == CUBLAS_STATUS_SUCCESS) {
    const std::lock_guard lock(cublas_mutex);
    cublas_records[*handle] = course::testing::CublasHandleRecord{device};
  }
  return status;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  static const auto destroy = libcublas<cublasStatus_t (*)(cublasHandle_t)>("cublasDestroy_v2");
  {
    const int device = device_now();
    const std::lock_guard lock(cublas_mutex);
    course::testing::CublasHandleRecord& record = cublas_records[handle];
    ++record.destroyed;
    record.destroyed_on = device;
  }
  return destroy(handle);
}

cublasStatus_t cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const float* alpha,
                              const float* A, int lda, const float* x, int incx, const float* beta, float* y,
                              int incy) {
  using Sgemv = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, int, int, const float*, const float*, int,
                                   const float*, int, const float*, float*, int);
  static const auto sgemv = libcublas<Sgemv>("cublasSgemv_v2");
  note_gemv(handle);
  return sgemv(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}

cublasStatus_t cublasSgemv_v2_64(cublasHandle_t handle, cublasOperation_t trans, int64_t m, int64_t n,
                                 const float* alpha, const float* A, int64_t lda, const float* x, int64_t incx,
                                 const float* beta, float* y, int64_t incy) {
  using Sgemv = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, int64_t, int64_t, const float*, const float*,
                                   int64_t, const float*, int64_t, const float*, float*, int64_t);
  static const auto sgemv = libcublas<Sgemv>("cublasSgemv_v2_64");
  note_gemv(handle);
  return sgemv(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);
}

}  // extern "C"

namespace course::testing {

CublasHandleRecord cublas_record_of(cublasHandle_t handle) {
  const std::lock_guard lock(cublas_mutex);
  const auto found = cublas_records.find(handle);
  return found == cublas_records.end() ? CublasHandleRecord{} : found->second;
}

}  // namespace course::testing
