// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05 demo: your functions on this machine, one task after the other, on one random
// 3000 x 2001 matrix. It prints where each worker's block lives, how far each product is from a
// double-precision reference, which device each cuBLAS handle was made on, and where the managed
// blocks ended up. A task not done yet prints its NOT_IMPLEMENTED line and the demo goes on.
// Run it as build/tests/demo-05, with the devices as arguments (build/tests/demo-05 0 0 1); by
// default every GPU once, or three workers on GPU 0 when there is only one.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/programs.h"
#include "common/random.h"
#include "matvec.h"

namespace {

constexpr std::size_t kRows = 3000, kCols = 2001;  // n % 4 != 0: task 1's scalar path

struct Reference {
  std::vector<double> y, magnitude;  // the product, and sum_j |W_ij x_j| per row
};

Reference reference(const std::vector<float>& W, const std::vector<float>& x) {
  Reference r{std::vector<double>(kRows, 0.0), std::vector<double>(kRows, 0.0)};
  for (std::size_t i = 0; i < kRows; ++i)
    for (std::size_t j = 0; j < kCols; ++j) {
      const double term = static_cast<double>(W[i * kCols + j]) * x[j];
      r.y[i] += term;
      r.magnitude[i] += std::fabs(term);
    }
  return r;
}

// The largest error relative to sum_j |W_ij x_j|, against what float accumulation may cost.
void report(const std::vector<float>& y, const Reference& ref) {
  double worst = 0;
  for (std::size_t i = 0; i < kRows; ++i) {
    const double error = std::fabs(y[i] - ref.y[i]) / (ref.magnitude[i] > 0 ? ref.magnitude[i] : 1.0);
    worst = std::isnan(y[i]) ? INFINITY : std::max(worst, error);
  }
  const double allowed = (kCols + 2) * std::ldexp(1.0, -24);
  std::cout << "  largest |y - reference| / sum|W x|: " << std::scientific << std::setprecision(2) << worst
            << " (float in any order: at most " << allowed << ")  " << (worst <= allowed ? "correct" : "WRONG")
            << std::defaultfloat << '\n';
}

std::vector<float> read(const course::DeviceBuffer<float>& buffer, std::size_t count) {
  std::vector<float> values(count);
  const course::DeviceGuard on(buffer.device());
  CUDA_CHECK(cudaMemcpy(values.data(), buffer.data(), count * sizeof(float), cudaMemcpyDeviceToHost));
  return values;
}

int device_of(const void* p) {
  cudaPointerAttributes a{};
  return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice ? a.device : -1;
}

void show_workers(const lesson05::DistributedMatrix& A) {
  for (std::size_t k = 0; k < A.workers.size(); ++k) {
    const lesson05::Worker& w = A.workers[k];
    std::cout << "  worker " << k << " on GPU " << w.device << ": rows [" << w.rows.begin << ", " << w.rows.end
              << "), columns [" << w.cols.begin << ", " << w.cols.end << "), block of " << std::fixed
              << std::setprecision(1) << w.W.bytes() / 1e6 << " MB in the memory of GPU "
              << (w.W.size() > 0 ? std::to_string(device_of(w.W.data())) : "-") << std::defaultfloat << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int count = course::visible_gpu_count();
  if (count == 0) {
    std::cout << "demo-05: needs a GPU, found none\n";
    return 77;
  }
  std::vector<int> devices;
  for (int a = 1; a < argc; ++a) devices.push_back(std::atoi(argv[a]));
  if (devices.empty() && count == 1) devices = {0, 0, 0};
  if (devices.empty())
    for (int d = 0; d < count; ++d) devices.push_back(d);
  const int root = devices.front();

  const std::vector<float> W = course::random_floats(kRows * kCols, 5);
  const std::vector<float> x = course::random_floats(kCols, 6);
  const Reference ref = reference(W, x);
  std::cout << "Lesson 05 demo: y = W x, W " << kRows << " x " << kCols << " floats, workers on GPUs {";
  for (std::size_t k = 0; k < devices.size(); ++k) std::cout << (k ? ", " : "") << devices[k];
  std::cout << "}, x and y on GPU " << root << '\n';

  const course::DeviceBuffer<float> x_root(root, kCols), y_root(root, kRows);
  {
    const course::DeviceGuard on(root);
    CUDA_CHECK(cudaMemcpy(x_root.data(), x.data(), x_root.bytes(), cudaMemcpyHostToDevice));
  }
  const auto poison_y = [&] {
    const course::DeviceGuard on(root);
    course::poison_device(y_root.data(), y_root.bytes());
  };

  course::demo_section("Task 1: launch_gemv on GPU " + std::to_string(root), [&] {
    const course::DeviceBuffer<float> W_root(root, W.size());
    const course::DeviceGuard on(root);
    CUDA_CHECK(cudaMemcpy(W_root.data(), W.data(), W_root.bytes(), cudaMemcpyHostToDevice));
    poison_y();
    const course::Stream stream(root);
    lesson05::launch_gemv(W_root.data(), x_root.data(), y_root.data(), kRows, kCols, stream);
    stream.synchronize();
    report(read(y_root, kRows), ref);
  });
  course::demo_section("Task 2: split by rows (distribute_rows, multiply_rows)", [&] {
    lesson05::DistributedMatrix A = lesson05::distribute_rows(devices, root, W.data(), kRows, kCols);
    show_workers(A);
    poison_y();
    lesson05::multiply_rows(A, x_root.data(), y_root.data());
    report(read(y_root, kRows), ref);
  });
  course::demo_section("Task 3: split by columns (distribute_columns, multiply_columns)", [&] {
    lesson05::DistributedMatrix A = lesson05::distribute_columns(devices, root, W.data(), kRows, kCols);
    show_workers(A);
    poison_y();
    lesson05::multiply_columns(A, x_root.data(), y_root.data());
    report(read(y_root, kRows), ref);
  });
  course::demo_section("Task 4: split by rows with one cuBLAS handle per worker", [&] {
    lesson05::DistributedMatrix A = lesson05::distribute_rows(devices, root, W.data(), kRows, kCols);
    std::vector<lesson05::CublasHandle> handles = lesson05::create_cublas_handles(A);
    for (std::size_t k = 0; k < handles.size(); ++k)
      std::cout << "  worker " << k << " on GPU " << A.workers[k].device << ": handle " << handles[k].handle
                << " made on GPU " << handles[k].device << '\n';
    poison_y();
    lesson05::multiply_rows_cublas(A, handles, x_root.data(), y_root.data());
    report(read(y_root, kRows), ref);
    lesson05::destroy_cublas_handles(handles);
  });
  course::demo_section("Task 5: managed memory, advised and prefetched", [&] {
    lesson05::ManagedMatrix A = lesson05::allocate_managed(devices, kRows, kCols);
    std::copy(W.begin(), W.end(), A.W);  // the host writes managed memory directly
    std::copy(x.begin(), x.end(), A.x);
    lesson05::advise_and_prefetch(A);
    for (std::size_t k = 0; k < A.devices.size(); ++k) {
      int preferred = -100, prefetched = -100;
      const void* block = A.W + A.rows[k].begin * kCols;
      const std::size_t bytes = A.rows[k].size() * kCols * sizeof(float);
      if (bytes > 0) {
        CUDA_CHECK(cudaMemRangeGetAttribute(&preferred, sizeof preferred, cudaMemRangeAttributePreferredLocation, block,
                                            bytes));
        CUDA_CHECK(cudaMemRangeGetAttribute(&prefetched, sizeof prefetched, cudaMemRangeAttributeLastPrefetchLocation,
                                            block, bytes));
      }
      std::cout << "  worker " << k << " on GPU " << A.devices[k] << ": rows [" << A.rows[k].begin << ", "
                << A.rows[k].end << ") prefer device " << preferred << ", last prefetched to " << prefetched << "  ("
                << cudaInvalidDeviceId << ": its pages disagree, e.g. a page shared with a neighbour)\n";
    }
    lesson05::multiply_managed(A);
    report(std::vector<float>(A.y, A.y + kRows), ref);
    lesson05::free_managed(A);
  });
  return 0;
}
