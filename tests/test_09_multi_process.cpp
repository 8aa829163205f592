// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09 tests, tasks 1 and 4: who a process is, from the environment its launcher gave it, and
// the Slurm job script that starts the processes (checked as text, and its srun line through bash). Most
// cases pass place_rank a made-up environment (what mpirun, srun, or an mpirun inside an sbatch
// job would set) and a made-up count of visible GPUs; the last starts real processes with mpirun
// (CI also starts the same hidden case with srun), each of which places itself from its own
// environment. No GPU is needed.
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/programs.h"
#include "multi_process.h"
#include "test_09_multi_process_support.h"

using namespace lesson09;
using namespace lesson09_tests;

namespace {

Environment mpirun_environment(int rank, int size, int local_rank) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local_rank)},
          {"PATH", "/usr/bin"}};
}

Environment srun_environment(int rank, int size, int local_rank) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_NTASKS", std::to_string(size)},
          {"SLURM_LOCALID", std::to_string(local_rank)},
          {"SLURM_JOB_ID", "4242"}};
}

// The message of what `call` throws as E, "" when it throws nothing.
template <class E, class F>
std::string message_of(F&& call) {
  try {
    call();
  } catch (const E& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("mpirun's variables give the rank, the job size, the local rank and one GPU per local rank",
          "[09-multi-process][task:1][gpus:0][points:2]") {
  // Rank 5 of 8, the second process of the third node of a job of 2 x 4 on four-GPU nodes.
  const RankPlacement placement = place_rank(mpirun_environment(5, 8, 1), 4);
  CHECK(placement.launcher == "mpirun");
  CHECK(placement.rank == 5);
  CHECK(placement.size == 8);
  CHECK(placement.local_rank == 1);
  CHECK(placement.device == 1);  // the local rank: rank 5 would be a GPU this node does not have
  const RankPlacement last = place_rank(mpirun_environment(7, 8, 3), 4);
  CHECK(last.device == 3);
}

TEST_CASE("srun's variables give the rank, the job size and the local rank",
          "[09-multi-process][task:1][gpus:0][points:2]") {
  const RankPlacement placement = place_rank(srun_environment(3, 4, 1), 2);
  CHECK(placement.launcher == "srun");
  CHECK(placement.rank == 3);
  CHECK(placement.size == 4);
  CHECK(placement.local_rank == 1);
  CHECK(placement.device == 1);
}

TEST_CASE("a process that sees one GPU uses it whatever its local rank as srun --gpus-per-task=1 leaves it",
          "[09-multi-process][task:1][gpus:0][points:1]") {
  // srun --gpus-per-task=1: local rank 3 sees its own GPU alone, as ordinal 0.
  Environment environment = srun_environment(3, 4, 3);
  environment["CUDA_VISIBLE_DEVICES"] = "3";
  const RankPlacement placement = place_rank(environment, 1);
  CHECK(placement.local_rank == 3);
  CHECK(placement.device == 0);
  // mpirun -n 2 on a node with one GPU: both processes share it.
  CHECK(place_rank(mpirun_environment(1, 2, 1), 1).device == 0);
}

TEST_CASE("mpirun's variables win over Slurm's, which an mpirun inside an sbatch job also sees",
          "[09-multi-process][task:1][gpus:0][points:2]") {
  // The batch script's own step: SLURM_PROCID is 0 and SLURM_NTASKS the job's, in every rank mpirun starts.
  Environment environment = mpirun_environment(3, 4, 1);
  for (const auto& [name, value] : srun_environment(0, 4, 0)) environment[name] = value;
  const RankPlacement placement = place_rank(environment, 2);
  CHECK(placement.launcher == "mpirun");
  CHECK(placement.rank == 3);
  CHECK(placement.local_rank == 1);
  CHECK(placement.device == 1);
}

TEST_CASE("a process started by hand is rank 0 of a job of one on GPU 0",
          "[09-multi-process][task:1][gpus:0][points:1]") {
  const RankPlacement placement = place_rank(Environment{{"PATH", "/usr/bin"}, {"SLURM_JOB_ID", "4242"}}, 3);
  CHECK(placement.launcher == "none");
  CHECK(placement.rank == 0);
  CHECK(placement.size == 1);
  CHECK(placement.local_rank == 0);
  CHECK(placement.device == 0);
}

TEST_CASE("more processes on a node than GPUs, or no GPU at all, is an error that says so",
          "[09-multi-process][task:1][gpus:0][points:2]") {
  Environment environment = mpirun_environment(2, 4, 2);
  environment["CUDA_VISIBLE_DEVICES"] = "0,1";
  const std::string too_many = message_of<std::runtime_error>([&] { (void)place_rank(environment, 2); });
  INFO("the message: " << too_many);
  CHECK(too_many.find("local rank 2") != std::string::npos);
  CHECK(too_many.find("CUDA_VISIBLE_DEVICES=0,1") != std::string::npos);
  environment["CUDA_VISIBLE_DEVICES"] = "";
  const std::string none = message_of<std::runtime_error>([&] { (void)place_rank(environment, 0); });
  INFO("the message: " << none);
  CHECK(!none.empty());
  CHECK(none.find("CUDA_VISIBLE_DEVICES=") != std::string::npos);
  CHECK_THROWS_AS(place_rank(Environment{}, 0), std::runtime_error);
}

TEST_CASE("incomplete or malformed launcher variables are rejected with their names",
          "[09-multi-process][task:1][gpus:0][points:2]") {
  for (const char* missing : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    Environment environment = mpirun_environment(1, 2, 1);
    environment.erase(missing);
    INFO("without " << missing);
    const std::string message = message_of<std::invalid_argument>([&] { (void)place_rank(environment, 2); });
    CHECK(message.find(missing) != std::string::npos);
  }
  for (const char* missing : {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}) {
    Environment environment = srun_environment(1, 2, 1);
    environment.erase(missing);
    INFO("without " << missing);
    CHECK_THROWS_AS(place_rank(environment, 2), std::invalid_argument);
  }
  for (const char* bad : {"", "1x", "x1", " 1", "1.0", "-", "99999999999999999999"}) {
    Environment environment = srun_environment(0, 2, 0);
    environment["SLURM_PROCID"] = bad;
    INFO("SLURM_PROCID='" << bad << "'");
    const std::string message = message_of<std::invalid_argument>([&] { (void)place_rank(environment, 2); });
    CHECK(message.find("SLURM_PROCID") != std::string::npos);
  }
  CHECK_THROWS_AS(place_rank(mpirun_environment(2, 2, 0), 2), std::invalid_argument);   // rank == size
  CHECK_THROWS_AS(place_rank(mpirun_environment(-1, 2, 0), 2), std::invalid_argument);  // negative rank
  CHECK_THROWS_AS(place_rank(srun_environment(0, 0, 0), 2), std::invalid_argument);     // an empty job
  CHECK_THROWS_AS(place_rank(srun_environment(0, 2, -1), 2), std::invalid_argument);    // negative local rank
  CHECK_THROWS_AS(place_rank(srun_environment(0, 2, 2), 4), std::invalid_argument);     // local rank >= size
}

namespace {

constexpr const char* kPlaceRankCase = "rank: place this process from its launcher's environment";

}  // namespace

// Run by mpirun (below) or by srun (CI's one-node Slurm): no MPI, no GPU; as if the node had 8 GPUs.
TEST_CASE(kPlaceRankCase, "[.][rank]") {
  const Environment environment = course::process_environment();
  const RankPlacement placement = place_rank(environment, 8);
  write_rank_report(placement.rank,
                    "launcher=" + placement.launcher + "\nsize=" + std::to_string(placement.size) +
                        "\nlocal_rank=" + std::to_string(placement.local_rank) +
                        "\ndevice=" + std::to_string(placement.device) + "\ncuda_visible_devices=" +
                        (environment.count("CUDA_VISIBLE_DEVICES") > 0 ? environment.at("CUDA_VISIBLE_DEVICES")
                                                                       : std::string("<unset>")) +
                        "\n");
}

TEST_CASE("processes started by mpirun place themselves from mpirun's variables in their own environment",
          "[09-multi-process][task:1][gpus:0][points:1]") {
  const int ranks = 3;
  const MpiJob job = run_mpi_job(kPlaceRankCase, ranks, {}, std::chrono::seconds(60));
  INFO(job.describe());
  REQUIRE(!job.timed_out);
  CHECK(job.exit_code == 0);
  for (int r = 0; r < ranks; ++r) {
    INFO("rank " << r);
    CHECK(report_value(job.reports[r], "launcher") == "mpirun");
    CHECK(report_value(job.reports[r], "size") == std::to_string(ranks));
    CHECK(report_value(job.reports[r], "local_rank") == std::to_string(r));  // one node
    CHECK(report_value(job.reports[r], "device") == std::to_string(r));
  }
}

// ---- Task 4 ---------------------------------------------------------------------------------------

namespace {

// What bash makes of the script's last line (the srun line) with srun replaced by a function that
// prints each word it gets in brackets, one a line.
std::string words_srun_gets(const std::string& script) {
  const std::size_t last = script.rfind('\n', script.size() - 2);
  const std::string srun_line = script.substr(last + 1);
  char path[] = "/tmp/course-job-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "srun() { printf '[%s]\\n' \"$@\"; }\n" + srun_line;
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  std::string words;
  if (FILE* shell = popen(("/bin/bash " + std::string(path)).c_str(), "r")) {
    char buffer[4096];
    std::size_t read = 0;
    while ((read = fread(buffer, 1, sizeof buffer, shell)) > 0) words.append(buffer, read);
    pclose(shell);
  }
  std::remove(path);
  return words;
}

}  // namespace

TEST_CASE("the job script asks Slurm for one process per GPU on every node and names its output file",
          "[09-multi-process][task:4][gpus:0][points:2]") {
  const JobShape shape{.job_name = "lesson-09",
                       .nodes = 2,
                       .gpus_per_node = 4,
                       .time_limit = "00:15:00",
                       .program = "/home/me/course/build/tests/demo-09",
                       .arguments = {}};
  CHECK(render_job_script(shape) ==
        "#!/bin/bash\n"
        "#SBATCH --job-name=lesson-09\n"
        "#SBATCH --nodes=2\n"
        "#SBATCH --ntasks-per-node=4\n"
        "#SBATCH --gpus-per-node=4\n"
        "#SBATCH --time=00:15:00\n"
        "#SBATCH --output=lesson-09-%j.out\n"
        "srun '/home/me/course/build/tests/demo-09'\n");
  const JobShape one{.job_name = "a_b.c",
                     .nodes = 1,
                     .gpus_per_node = 1,
                     .time_limit = "99:59:59",
                     .program = "demo",
                     .arguments = {"--x"}};
  CHECK(render_job_script(one) ==
        "#!/bin/bash\n#SBATCH --job-name=a_b.c\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n"
        "#SBATCH --gpus-per-node=1\n#SBATCH --time=99:59:59\n#SBATCH --output=a_b.c-%j.out\nsrun 'demo' '--x'\n");
}

TEST_CASE("the job script passes the program and every argument on unchanged, quotes and spaces included",
          "[09-multi-process][task:4][gpus:0][points:2]") {
  const std::vector<std::string> arguments = {"--size", "64 MiB", "it's", "$HOME", "a\"b", "", "*", "x'y'z", "\\n"};
  const JobShape shape{.job_name = "q",
                       .nodes = 1,
                       .gpus_per_node = 2,
                       .time_limit = "00:01:00",
                       .program = "/opt/my course/bench-09",
                       .arguments = arguments};
  std::string expected = "[/opt/my course/bench-09]\n";
  for (const std::string& argument : arguments) expected += "[" + argument + "]\n";
  const std::string script = render_job_script(shape);
  INFO("the script:\n" << script);
  CHECK(words_srun_gets(script) == expected);
}

TEST_CASE("a job script for no nodes, no GPUs, a bad time limit, a bad name or no program is refused",
          "[09-multi-process][task:4][gpus:0][points:1]") {
  const JobShape good{
      .job_name = "ok", .nodes = 1, .gpus_per_node = 1, .time_limit = "00:10:00", .program = "demo", .arguments = {}};
  CHECK_NOTHROW(render_job_script(good));
  JobShape bad = good;
  bad.nodes = 0;
  CHECK_THROWS_AS(render_job_script(bad), std::invalid_argument);
  bad = good;
  bad.gpus_per_node = 0;
  CHECK_THROWS_AS(render_job_script(bad), std::invalid_argument);
  bad = good;
  bad.program = "";
  CHECK_THROWS_AS(render_job_script(bad), std::invalid_argument);
  for (const char* name : {"", "my job", "a;b", "x\ny", "$(id)"}) {
    bad = good;
    bad.job_name = name;
    INFO("job name '" << name << "'");
    CHECK_THROWS_AS(render_job_script(bad), std::invalid_argument);
  }
  for (const char* time : {"", "10:00", "0:10:00", "00:60:00", "00:00:60", "aa:00:00", "00-10-00", "00:10:000"}) {
    bad = good;
    bad.time_limit = time;
    INFO("time limit '" << time << "'");
    CHECK_THROWS_AS(render_job_script(bad), std::invalid_argument);
  }
}
