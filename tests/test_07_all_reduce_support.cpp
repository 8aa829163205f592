// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The helpers lesson 07's test files share (test_07_all_reduce_support.h says what each does):
// guarded, poisoned buffers with random inputs and a double-precision reference, and the check of
// every worker's result.
#include "test_07_all_reduce_support.h"

#include <nccl.h>

#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/communicators_at_exit.h"
#include "common/testing/devices.h"
#include "common/testing/workers.h"

using namespace lesson07;

namespace lesson07_tests {

double tolerance(int workers) {
  return static_cast<double>(workers) * workers * std::ldexp(1.0, -24);
}

std::vector<std::size_t> counts_for(int workers) {
  const std::size_t w = static_cast<std::size_t>(workers);
  return {0, 1, 2, 3, w - 1 > 0 ? w - 1 : 1, 4 * w + 3, 4099 * w + 1, 1000003, (std::size_t{1} << 20) + 6};
}

Buffers::Buffers(const AllReduceWorkspace& workspace, std::size_t count_, std::uint64_t seed)
    : count(count_), reference(count_, 0.0) {
  for (int k = 0; k < workspace.size(); ++k) {
    const int device = workspace.workers[k].device;
    devices.push_back(device);
    inputs.push_back(course::random_floats(count, course::mix_seed(seed, static_cast<std::uint64_t>(k))));
    for (std::size_t i = 0; i < count; ++i) reference[i] += inputs.back()[i];
    memory.emplace_back(device, count + 2 * kGuard);
    sources.emplace_back(device, count);
    course::testing::upload<float>(sources.back().data(), device, inputs.back());
    pointers.push_back(memory.back().data() + kGuard);
  }
  reset();
}

void Buffers::reset() {
  for (std::size_t k = 0; k < memory.size(); ++k) {
    const course::DeviceGuard on_device(devices[k]);
    course::poison_device(memory[k].data(), memory[k].bytes());
    course::testing::upload<float>(pointers[k], devices[k], inputs[k]);
  }
}

void Buffers::poison(int k) {
  const course::DeviceGuard on_device(devices[k]);
  course::poison_device(memory[k].data(), memory[k].bytes());
}

void Buffers::enqueue_input(int k, cudaStream_t stream) {
  const course::DeviceGuard on_device(devices[k]);
  if (count > 0)
    CUDA_CHECK(
        cudaMemcpyAsync(pointers[k], sources[k].data(), count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
}

std::vector<float> Buffers::result(int k) const {
  const std::vector<float> all = course::testing::read_back(memory[k].data(), devices[k], memory[k].size());
  return {all.begin() + kGuard, all.begin() + static_cast<std::ptrdiff_t>(kGuard + count)};
}

void Buffers::check(const std::string& what, int skip) const {
  const int workers = static_cast<int>(memory.size());
  std::vector<float> first;
  bool have_first = false;
  for (int k = 0; k < workers; ++k) {
    if (k == skip) continue;
    const std::vector<float> all = course::testing::read_back(memory[k].data(), devices[k], memory[k].size());
    std::size_t touched = 0;
    for (std::size_t i = 0; i < kGuard; ++i) {
      touched += course::is_poisoned(all[i]) ? 0 : 1;
      touched += course::is_poisoned(all[kGuard + count + i]) ? 0 : 1;
    }
    const std::vector<float> got(all.begin() + kGuard, all.begin() + static_cast<std::ptrdiff_t>(kGuard + count));
    const course::Comparison c = course::compare_close(got.data(), reference.data(), count, 0.0, tolerance(workers));
    INFO(what << ": worker " << k << " of " << workers << " (GPU " << devices[k] << "), " << count
              << " floats; tolerance " << tolerance(workers) << " (W^2 x 2^-24); NaN means a float read or left "
              << "poisoned: " << c.describe());
    CHECK(c.ok());
    INFO(what << ": worker " << k << ": " << touched << " of the " << 2 * kGuard
              << " poisoned floats around the buffer were written: a chunk or a tail runs past its end");
    CHECK(touched == 0);
    if (!have_first) {
      first = got;
      have_first = true;
    } else if (count > 0) {
      INFO(what << ": worker " << k
                << " differs from the first worker checked in its bits: every worker must end with the same sum "
                << "(the all-gather copies each reduced chunk; the one-shot adds in worker order)");
      CHECK(std::memcmp(got.data(), first.data(), count * sizeof(float)) == 0);
    }
  }
}

std::vector<std::vector<float>> results(const Buffers& buffers) {
  std::vector<std::vector<float>> all;
  for (std::size_t k = 0; k < buffers.pointers.size(); ++k) all.push_back(buffers.result(static_cast<int>(k)));
  return all;
}

std::size_t bits_differ(const std::vector<float>& got, const std::vector<float>& expected) {
  std::size_t differ = got.size() == expected.size() ? 0 : got.size() + expected.size();
  for (std::size_t i = 0; i < got.size() && i < expected.size(); ++i)
    differ += std::bit_cast<std::uint32_t>(got[i]) == std::bit_cast<std::uint32_t>(expected[i]) ? 0 : 1;
  return differ;
}

std::vector<std::vector<float>> one_shot_bits(AllReduceWorkspace& workspace, Buffers& buffers) {
  buffers.reset();
  one_shot_all_reduce(workspace, buffers.pointers, buffers.count);
  wait_for_workers(workspace);
  buffers.check("the one-shot (task 3), whose bits the one-kernel and the LL one-shot must give");
  std::vector<std::vector<float>> bits = results(buffers);
  buffers.reset();
  return bits;
}

void load_sources(const Buffers& from, Buffers& to) {
  for (std::size_t k = 0; k < from.pointers.size(); ++k) {
    const course::DeviceGuard on_device(from.devices[k]);
    CUDA_CHECK(
        cudaMemcpy(to.sources[k].data(), from.inputs[k].data(), from.count * sizeof(float), cudaMemcpyHostToDevice));
  }
}

namespace {

// NCCL's communicators for one list of devices, made the first time a case asks for that list and
// kept until the test program ends (common/testing/communicators_at_exit.h): the NCCL comparisons
// of three cases, each at three counts on two lists, would otherwise make and destroy eighteen
// sets, the most expensive step of those cases (they are the reference here, not the code under test).
const std::vector<ncclComm_t>& reference_communicators(const std::vector<int>& devices) {
  static std::map<std::vector<int>, std::vector<ncclComm_t>> made;
  if (const auto found = made.find(devices); found != made.end()) return found->second;
  std::vector<ncclComm_t> comms(devices.size());
  NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
  course::testing::destroy_at_exit(comms);
  return made.emplace(devices, std::move(comms)).first->second;
}

}  // namespace

std::vector<std::vector<float>> nccl_sums(const Buffers& buffers) {
  const int n = static_cast<int>(buffers.devices.size());
  const std::vector<ncclComm_t>& comms = reference_communicators(buffers.devices);
  std::vector<course::DeviceBuffer<float>> data;
  std::vector<course::Stream> streams;
  for (int k = 0; k < n; ++k) {
    data.emplace_back(buffers.devices[k], buffers.count);
    streams.emplace_back(buffers.devices[k]);
    course::testing::upload<float>(data.back().data(), buffers.devices[k], buffers.inputs[k]);
  }
  NCCL_CHECK(ncclGroupStart());
  for (int k = 0; k < n; ++k) {
    const course::DeviceGuard on_device(buffers.devices[k]);
    NCCL_CHECK(ncclAllReduce(data[k].data(), data[k].data(), buffers.count, ncclFloat, ncclSum, comms[k], streams[k]));
  }
  NCCL_CHECK(ncclGroupEnd());
  std::vector<std::vector<float>> sums;
  for (int k = 0; k < n; ++k) {
    streams[k].synchronize();
    sums.push_back(course::testing::read_back(data[k].data(), buffers.devices[k], buffers.count));
  }
  return sums;
}

void wait_for_workers(const AllReduceWorkspace& workspace) {
  lesson07::synchronize(workspace);  // and a one-kernel that gave up throws, with why
}

void check_captured_as_one_kernel_per_worker(AllReduceWorkspace& workspace, const std::function<void()>& call) {
  const int w = workspace.size();
  const int device = workspace.workers[0].device;
  const course::DeviceGuard on_device(device);
  const course::Stream& stream0 = workspace.workers[0].stream;
  const course::Event fork(device, cudaEventDisableTiming);
  std::vector<course::Event> joins;
  for (int k = 0; k < w; ++k) joins.emplace_back(workspace.workers[k].device, cudaEventDisableTiming);
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(stream0, cudaStreamCaptureModeThreadLocal));
  fork.record(stream0);
  for (int k = 1; k < w; ++k) CUDA_CHECK(cudaStreamWaitEvent(workspace.workers[k].stream, fork, 0));
  std::string thrown;
  try {
    call();
  } catch (const std::exception& e) {
    thrown = e.what();
  }
  for (int k = 1; k < w; ++k) {
    joins[k].record(workspace.workers[k].stream);
    CUDA_CHECK(cudaStreamWaitEvent(stream0, joins[k], 0));
  }
  CUDA_CHECK(cudaStreamEndCapture(stream0, &graph));
  std::size_t nodes = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::vector<cudaGraphNode_t> all(nodes);
  CUDA_CHECK(cudaGraphGetNodes(graph, all.data(), &nodes));
  std::size_t kernels = 0, others = 0;
  for (cudaGraphNode_t node : all) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    kernels += type == cudaGraphNodeTypeKernel ? 1 : 0;
    others += type == cudaGraphNodeTypeKernel || type == cudaGraphNodeTypeEmpty ? 0 : 1;
  }
  CUDA_CHECK(cudaGraphDestroy(graph));
  INFO("one call of " << w << " workers, captured: " << kernels << " kernels and " << others
                      << " other operations (copies, memsets, host functions, event records); "
                      << (thrown.empty() ? "" : "the call threw: " + thrown));
  CHECK(thrown.empty());
  CHECK(kernels == static_cast<std::size_t>(w));
  CHECK(others == 0);
}

void poison_scratch(const AllReduceWorkspace& workspace) {
  for (const Worker& worker : workspace.workers) {
    const course::DeviceGuard on_device(worker.device);
    course::poison_device(worker.scratch.data(), worker.scratch.bytes());
    course::poison_device(worker.kernel_scratch.data(), worker.kernel_scratch.bytes());
    course::poison_device(worker.ll_inbox.data(), worker.ll_inbox.bytes());
  }
}

void check_matches_reference(const std::string& name, const AllReduceCall& call, std::uint64_t salt,
                             bool poison_scratch_first, std::size_t largest) {
  const int gpus = require_gpus(1);
  for (int workers = 1; workers <= 4; ++workers) {
    AllReduceWorkspace workspace(repeated(0, workers), kDefaultOneShotMaxCount,
                                 largest == SIZE_MAX ? kDefaultLlMaxCount : largest);
    for (const std::size_t count : counts_for(workers)) {
      if (count > largest) continue;
      Buffers buffers(workspace, count, case_seed(salt + count));
      if (poison_scratch_first) poison_scratch(workspace);
      CUDA_CHECK(cudaSetDevice(gpus - 1));  // the caller's device is not necessarily a worker's
      call(workspace, buffers.pointers, count);
      CHECK(current_device() == gpus - 1);
      wait_for_workers(workspace);
      buffers.check(name + ", " + std::to_string(workers) + " workers on GPU 0, count " + std::to_string(count));
    }
  }
}

namespace {
void check_behind_a_held_worker(const std::string& name, const AllReduceCall& call, int workers, int held,
                                std::uint64_t seed, std::size_t count) {
  AllReduceWorkspace workspace(repeated(0, workers));
  Buffers buffers(workspace, count, seed);
  call(workspace, buffers.pointers, count);                     // loads every kernel it uses, ungated
  buffers.enqueue_input(held, workspace.workers[held].stream);  // and the copy the test makes behind the gate
  wait_for_workers(workspace);
  buffers.reset();
  buffers.poison(held);
  poison_scratch(workspace);
  const bool returned = returns_while_held(
      workspace.workers[held].stream, name + " with a worker held back",
      [&] {
        buffers.enqueue_input(held, workspace.workers[held].stream);  // lands only when the gate opens
        call(workspace, buffers.pointers, count);
      },
      3s);
  wait_for_workers(workspace);
  INFO(name << ", " << workers << " workers on GPU 0, worker " << held << " held: the call "
            << (returned ? "returned while the worker was held"
                         : "did not return while the worker was held: it waits on the host (a cudaStreamSynchronize "
                           "or cudaEventSynchronize per step?)"));
  CHECK(returned);
  buffers.check(name + " with worker " + std::to_string(held) +
                " held (a wrong sum or NaN: a worker read a peer's data before that peer wrote or published it in "
                "this call)");
}
}  // namespace

void check_behind_held_workers(const std::string& name, const AllReduceCall& call, std::uint64_t seed,
                               std::size_t count) {
  for (int workers = 2; workers <= 4; ++workers) {
    check_behind_a_held_worker(name, call, workers, 0, seed, count);
    check_behind_a_held_worker(name, call, workers, workers - 1, seed, count);
  }
}

lesson07::RingStep LaunchDevices::step() {
  return [this](const float* src, float* dst, std::size_t n, bool add, cudaStream_t stream) {
    note("a ring step", stream);
    enqueue_ring_step(src, dst, n, add, stream);
  };
}

lesson07::PeerSum LaunchDevices::sum() {
  return [this](const PeerSources& sources, float* out, std::size_t n, cudaStream_t stream) {
    note("a one-shot sum", stream);
    enqueue_sum_of_peers(sources, out, n, stream);
  };
}

lesson07::OneKernelLaunch LaunchDevices::kernel() {
  return [this](const OneKernelArgs& args, cudaStream_t stream) {
    note("a one-kernel's kernel", stream);
    enqueue_one_kernel(args, stream);
  };
}

lesson07::LlOneShotLaunch LaunchDevices::ll_one_shot() {
  return [this](const LlOneShotArgs& args, cudaStream_t stream) {
    note("an LL one-shot's kernel", stream);
    enqueue_ll_one_shot(args, stream);
  };
}

void check_on_distinct_gpus(const std::string& name, const CheckedCall& call, std::size_t one_shot_max_count,
                            std::uint64_t seed) {
  const int gpus = require_gpus(2);
  std::vector<course::testing::Devices> lists = course::testing::distinct_gpu_lists(gpus);
  lists.push_back({1, 0});  // the list out of order
  for (const auto& devices : lists) {
    AllReduceWorkspace workspace(devices, one_shot_max_count);
    const std::set<int> distinct(devices.begin(), devices.end());
    for (const std::size_t count : counts_for(workspace.size())) {
      if (count > one_shot_max_count) continue;
      Buffers buffers(workspace, count, course::mix_seed(seed, count));
      const std::string what = name + " on " + course::testing::show(devices) + ", count " + std::to_string(count);
      LaunchDevices launches;
      course::testing::call_keeps_device(gpus - 1, what, kGateLimit, kGateHint, [&] {
        call(workspace, buffers.pointers, count, launches);
        wait_for_workers(workspace);
      });
      const std::string wrong_device = launches.take_first_mismatch();
      INFO(what << ": " << wrong_device);
      CHECK(wrong_device.empty());
      buffers.check(what);
      if (distinct.size() != devices.size() || count < 1000) continue;  // NCCL: one rank per GPU
      const std::vector<std::vector<float>> nccl = nccl_sums(buffers);
      for (int k = 0; k < workspace.size(); ++k) {
        const std::vector<float> got = buffers.result(k);
        std::size_t far = 0;
        for (std::size_t i = 0; i < count; ++i)
          far += std::abs(got[i] - nccl[k][i]) <= 2 * tolerance(workspace.size()) ? 0 : 1;
        INFO(what << ": worker " << k << " on GPU " << devices[k] << ": " << far
                  << " floats differ from NCCL's all-reduce by more than twice the tolerance");
        CHECK(far == 0);
      }
    }
  }
}

namespace {
void CUDART_CB sleep_for(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<std::intptr_t>(ms)));
}
}  // namespace

void enqueue_delay(cudaStream_t stream, std::chrono::milliseconds delay) {
  CUDA_CHECK(
      cudaLaunchHostFunc(stream, &sleep_for, reinterpret_cast<void*>(static_cast<std::intptr_t>(delay.count()))));
}

}  // namespace lesson07_tests
