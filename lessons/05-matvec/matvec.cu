// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05: y = W x over many GPUs. A bandwidth-bound gemv kernel of your own, then the product
// split by rows (x copied to every worker, the parts of y gathered) and by columns (partial ys
// summed on one device), the row split again with one cuBLAS handle per worker, and in managed
// memory with placement advice and prefetching.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 05-matvec --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "matvec.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/managed_memory.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson05 {

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): your gemv kernel here, launched by launch_gemv (README hint "Task 1: launch_gemv").
void launch_gemv(const float* W, const float* x, float* y, std::size_t m, std::size_t n, cudaStream_t stream) {
  (void)W;
  (void)x;
  (void)y;
  (void)m;
  (void)n;
  (void)stream;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

DistributedMatrix distribute_rows(std::span<const int> devices, int root, const float* W, std::size_t m,
                                  std::size_t n) {
  // TODO(task 2): distribute_rows (contract in the header; README hint "Task 2: distribute_rows").
  (void)devices;
  (void)root;
  (void)W;
  (void)m;
  (void)n;
  NOT_IMPLEMENTED("task 2");
}

void multiply_rows(DistributedMatrix& A, const float* x, float* y) {
  // TODO(task 2): multiply_rows (contract in the header; README hint "Task 2: multiply_rows").
  (void)A;
  (void)x;
  (void)y;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

DistributedMatrix distribute_columns(std::span<const int> devices, int root, const float* W, std::size_t m,
                                     std::size_t n) {
  // TODO(task 3): distribute_columns (contract in the header; README hint "Task 3: distribute_columns").
  (void)devices;
  (void)root;
  (void)W;
  (void)m;
  (void)n;
  NOT_IMPLEMENTED("task 3");
}

// TODO(task 3): multiply_columns (contract in the header; README hint "Task 3: multiply_columns").
void multiply_columns(DistributedMatrix& A, const float* x, float* y) {
  (void)A;
  (void)x;
  (void)y;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

std::vector<CublasHandle> create_cublas_handles(const DistributedMatrix& A) {
  // TODO(task 4): create_cublas_handles (contract in the header; README hint "Task 4: create_cublas_handles").
  (void)A;
  NOT_IMPLEMENTED("task 4");
}

void destroy_cublas_handles(std::vector<CublasHandle>& handles) {
  // TODO(task 4): cublasDestroy every handle with its device current, then empty the vector.
  (void)handles;
  NOT_IMPLEMENTED("task 4");
}

void multiply_rows_cublas(DistributedMatrix& A, const std::vector<CublasHandle>& handles, const float* x, float* y) {
  // TODO(task 4): multiply_rows_cublas (contract in the header; README hint "Task 4: multiply_rows_cublas").
  (void)A;
  (void)handles;
  (void)x;
  (void)y;
  NOT_IMPLEMENTED("task 4");
}

// ---- Task 5 -------------------------------------------------------------------------------------

ManagedMatrix allocate_managed(std::span<const int> devices, std::size_t m, std::size_t n) {
  // TODO(task 5): allocate_managed (contract in the header; README hint "Task 5: allocate_managed").
  (void)devices;
  (void)m;
  (void)n;
  NOT_IMPLEMENTED("task 5");
}

void free_managed(ManagedMatrix& A) {
  // TODO(task 5): free_managed (contract in the header; README hint "Task 5: free_managed").
  (void)A;
  NOT_IMPLEMENTED("task 5");
}

void advise_and_prefetch(ManagedMatrix& A) {
  // TODO(task 5): advise_and_prefetch (contract in the header; README hint "Task 5: advise_and_prefetch").
  (void)A;
  NOT_IMPLEMENTED("task 5");
}

void multiply_managed(ManagedMatrix& A) {
  // TODO(task 5): multiply_managed (contract in the header; README hint "Task 5: multiply_managed").
  (void)A;
  NOT_IMPLEMENTED("task 5");
}

}  // namespace lesson05
