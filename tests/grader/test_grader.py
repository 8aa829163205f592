#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Tests of the grader (grade.py, catch2_runner.py, ...) and of tests/course/expect.py.

They grade a small fake course, tests/grader/fixture/ (C++ and Catch2 only, no CUDA), whose
lessons pass, fail an assertion, throw NOT_IMPLEMENTED, skip for missing GPUs, crash in one
of two cases, hang, trip the watchdog, and do not compile. Needs Meson, Ninja, a C++
compiler and Catch2 v3 (pkg-config catch2); no GPU.

    python3 tests/grader/test_grader.py        (about a minute on two cores)
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixture"
CHANNEL_SOURCES = [HERE.parents[1] / "common" / "testing" / name for name in ("result_channel.h", "result_channel.cpp")]
ATTACKS = HERE / "attacks" / "fixture"
GRADE = HERE / "grade.py"
EXPECT = HERE.parent / "course" / "expect.py"
sys.path.insert(0, str(HERE))

import catch2_runner as runner  # noqa: E402
import course_layout as layout  # noqa: E402
import grade  # noqa: E402
import meson_build  # noqa: E402
import report_csv  # noqa: E402
import report_text  # noqa: E402
import scoring  # noqa: E402
import slurm_jobs  # noqa: E402
from grading import Grader, Settings  # noqa: E402
from limited_run import Outcome  # noqa: E402
from sandbox import Sandbox  # noqa: E402

CASE_TIMEOUT = "3"  # the hanging lesson costs this many seconds per grading
TOOLS_MISSING = [tool for tool in ("meson", "ninja", "pkg-config") if not shutil.which(tool)]
if not TOOLS_MISSING and subprocess.run(["pkg-config", "--exists", "catch2"]).returncode != 0:
    TOOLS_MISSING.append("Catch2 v3 (pkg-config catch2)")

TMP: Path | None = None  # set by setUpModule
COURSE: Path = Path()  # the fixture course with the course's result channel copied in
DEFAULT: dict = {}  # the grading of the fixture's working tree, made once by setUpModule


def run_grader(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """grade.py on the fixture course, with a short case time-out. The grader's GPU probe is
    told the fixture's FAKE_GPU_COUNT (0 unless set), whatever GPUs this machine has."""
    env = dict(os.environ if env is None else env)
    env["COURSE_GRADER_TEST_GPU_COUNT"] = env.get("FAKE_GPU_COUNT", "0")
    argv = [sys.executable, str(GRADE), "--course", str(COURSE), "--quiet", "--timeout", CASE_TIMEOUT,
            "-j", "2", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


def read_outputs(out: Path) -> dict:
    """The files grade.py writes, parsed."""
    return {"results": json.loads((out / "results.json").read_text()),
            "junit": ET.parse(out / "junit.xml").getroot(),
            "report": (out / "report.txt").read_text(),
            "machine": json.loads((out / "machine.json").read_text()),
            "logs": sorted(p.name for p in (out / "logs").iterdir())}


def table_row(report: str, slug: str) -> list[str]:
    """A lesson's row of the table: [slug, points, passed, failed, skipped, ungraded, problem...]."""
    for line in report.splitlines():
        if line.startswith(slug + " "):
            return line.split()
    raise AssertionError(f"no row for {slug} in:\n{report}")


def tests_by_number(results: dict) -> dict:
    return {test["number"]: test for test in results["tests"]}


def setUpModule():
    global TMP, COURSE
    TMP = Path(tempfile.mkdtemp(prefix="grader-test-"))
    COURSE = TMP / "fixture"
    shutil.copytree(FIXTURE, COURSE)
    for source in CHANNEL_SOURCES:
        shutil.copy(source, COURSE / "common")
    if TOOLS_MISSING:
        return
    done = run_grader("--build-dir", str(TMP / "default"), "--profile")
    DEFAULT.update(rc=done.returncode, stdout=done.stdout, stderr=done.stderr)
    if done.returncode == 0:
        DEFAULT.update(read_outputs(TMP / "default" / "grade"))


def tearDownModule():
    if TMP is not None:  # never the current folder, when setUpModule did not run
        shutil.rmtree(TMP, ignore_errors=True)


def needs_tools(cls):
    return unittest.skipIf(TOOLS_MISSING, f"missing: {', '.join(TOOLS_MISSING)}")(cls)


def program(number: str) -> Path:
    return TMP / "default" / "working-tree" / "build" / "tests" / f"lesson-{number}"


# ============================================================================ unit tests

def outcome(code, stderr="", timed_out=False, channel=b"", token="t0k", **kwargs) -> Outcome:
    return Outcome(exit_code=code, timed_out=timed_out, stdout="", stderr=stderr, seconds=0.1, channel=channel,
                   token=token, **kwargs)


def record_line(case="a case", status="passed", message="", seq=1, token="t0k") -> bytes:
    return (json.dumps({"token": token, "seq": seq, "case": case, "status": status, "message": message})
            + "\n").encode()


class RunnerUnitTests(unittest.TestCase):
    case = runner.TestCase(name="a case", tags=["01-x", "task:1", "points:2"])

    def classify(self, status=None, message="", code=0, stderr="", **kwargs):
        record = None if status is None else {"status": status, "message": message}
        return runner.classify(self.case, outcome(code, stderr, **kwargs), record, 5)

    def test_only_a_case_that_may_pass_alone_runs_again(self):
        def result(status, message=""):
            return runner.CaseResult(case=self.case, status=status, message=message)
        self.assertFalse(runner.worth_running_alone(result(runner.PASSED)))
        self.assertFalse(runner.worth_running_alone(result(runner.SKIPPED, "needs 2 GPUs, found 1")))
        self.assertFalse(runner.worth_running_alone(
            result(runner.FAILED, "NOT_IMPLEMENTED: task 1 in f() at lessons/01-x/x.cpp:3")))
        self.assertTrue(runner.worth_running_alone(result(runner.FAILED, "REQUIRE( f() == 2 ) with expansion: 1 == 2")))
        self.assertTrue(runner.worth_running_alone(
            result(runner.FAILED, "CHECK( n == 0 )\nNOT_IMPLEMENTED: task 1 seen in a later line")))
        self.assertTrue(runner.worth_running_alone(result(runner.CRASHED, "NOT_IMPLEMENTED: task 1")))
        self.assertTrue(runner.worth_running_alone(result(runner.TIMED_OUT)))

    def test_escape_test_name(self):
        self.assertEqual(runner.escape_test_name('a, [b] "c" \\ * ~'), 'a\\, \\[b\\] \\"c\\" \\\\ \\* \\~')
        self.assertEqual(runner.escape_test_name("-dash"), "\\-dash")
        self.assertEqual(runner.escape_test_name("#file"), "\\#file")

    def test_tags(self):
        case = runner.case_from_tags("n", runner.parse_tags("[01-device-enumeration][task:2][gpus:1][points:3]"))
        self.assertEqual((case.lesson, case.task, case.gpus, case.points), ("01-device-enumeration", 2, 1, 3))
        self.assertEqual(case.warnings, [])
        bare = runner.case_from_tags("n", ["01-x", "task:1"])
        self.assertEqual(bare.points, 0)
        self.assertIn("no [points:N] tag", bare.warnings[0])
        self.assertTrue(runner.case_from_tags("h", [".", "child"]).hidden)

    def test_inventory(self):
        stderr = ("GPUs visible: 2 (CUDA_VISIBLE_DEVICES=0,1), driver API 12.4, runtime 12.3\n"
                  "  GPU 0: NVIDIA H100 80GB HBM3, cc 9.0, 85.0 GB, 132 SMs, 0000:19:00.0\n"
                  "  GPU 1: NVIDIA H100 80GB HBM3, cc 9.0, 85.0 GB, 132 SMs, 0000:3B:00.0\nother\n")
        inventory = runner.parse_inventory(stderr)
        self.assertEqual((inventory["gpus_visible"], inventory["driver_api"], inventory["runtime"]),
                         (2, "12.4", "12.3"))
        self.assertEqual(inventory["cuda_visible_devices"], "0,1")
        self.assertEqual([g["pci_bus_id"] for g in inventory["gpus"]], ["0000:19:00.0", "0000:3B:00.0"])
        self.assertEqual(inventory["gpus"][0]["sms"], 132)
        self.assertIsNone(runner.parse_inventory("no inventory here"))

    def test_passed_failed_skipped(self):
        self.assertEqual(self.classify("passed"), (runner.PASSED, ""))
        self.assertEqual(self.classify("failed", "REQUIRE( a == b ) with expansion: 1 == 2", code=1),
                         (runner.FAILED, "REQUIRE( a == b ) with expansion: 1 == 2"))
        self.assertEqual(self.classify("skipped", "needs 2 GPUs, found 1", code=77),
                         (runner.SKIPPED, "needs 2 GPUs, found 1"))

    def test_exit_status_must_agree(self):
        status, message = self.classify("passed", code=3)
        self.assertEqual(status, runner.CRASHED)
        self.assertIn("finished but the program then exited with exit code 3", message)
        self.assertEqual(self.classify("skipped", "x", code=1)[0], runner.CRASHED)

    def test_crash_from_signal(self):
        status, message = self.classify("failed", "SIGSEGV - Segmentation violation signal", code=-11,
                                        stderr="GPUs visible: 0 (CUDA_VISIBLE_DEVICES=<unset>), "
                                        "driver API 0.0, runtime 0.0\nlast words\n")
        self.assertEqual(status, runner.CRASHED)
        self.assertTrue(message.startswith("SIGSEGV (signal 11)"), message)
        self.assertIn("last words", message)
        self.assertNotIn("GPUs visible", message)

    def test_no_record(self):
        status, message = self.classify(None, code=0)
        self.assertEqual(status, runner.CRASHED)
        self.assertIn("before the case finished", message)
        self.assertIn("no test case named", self.classify(None, code=2)[1])

    def test_watchdog_timeout_and_output_cap(self):
        line = "WATCHDOG: ncclAllReduce did not finish within 30 s. Probably: a rank did not call it"
        self.assertEqual(self.classify(None, code=70, stderr=f"x\n{line}\n"), (runner.TIMED_OUT, line))
        self.assertEqual(self.classify(None, code=None, timed_out=True), (runner.TIMED_OUT, "no result after 5 s"))
        status, message = self.classify("passed", code=-9, output_exceeded=True, printed=9 << 20, output_cap=8 << 20)
        self.assertEqual(status, runner.CRASHED)
        self.assertIn("printed more than the 8 MB allowed", message)

    def test_left_processes_fail_the_case(self):
        status, message = self.classify("passed", left_behind=1)
        self.assertEqual(status, runner.FAILED)
        self.assertIn("left 1 process(es) running", message)

    def test_read_records(self):
        good = record_line("a", seq=1) + record_line("b", "failed", "boom", seq=2)
        records = runner.read_records(outcome(1, channel=good), ["a", "b", "c"])
        self.assertEqual((records["a"]["status"], records["b"]["message"]), ("passed", "boom"))
        bad = {
            "token": record_line("a", token="forged"),
            "numbered": record_line("a", seq=2),
            "was not run": record_line("z"),
            "two results": record_line("a") + record_line("a", seq=2),
            "not one the course's listener writes": b'{"case": "a"}\n',
            "middle of a record": record_line("a")[:-5],
        }
        for why, data in bad.items():
            with self.assertRaises(runner.ChannelError, msg=why) as caught:
                runner.read_records(outcome(0, channel=data), ["a", "b"])
            self.assertIn(why, str(caught.exception))
        with self.assertRaises(runner.ChannelError):
            runner.read_records(outcome(0, channel=b"", channel_exceeded=True), ["a"])

    def test_skips_judged_by_the_probe(self):
        two = runner.TestCase(name="two", tags=[], gpus=2)
        skipped = runner.judge_skip(runner.CaseResult(two, runner.FAILED, "boom"), gpus=1)
        self.assertEqual((skipped.status, skipped.message), (runner.SKIPPED, "needs 2 GPUs, found 1"))
        own = runner.judge_skip(runner.CaseResult(two, runner.SKIPPED, "needs 2 GPUs, found 0"), gpus=2)
        self.assertEqual(own.status, runner.FAILED)
        self.assertIn("only a missing GPU makes a case ungraded", own.message)
        trusted = runner.judge_skip(runner.CaseResult(two, runner.SKIPPED, "needs 2 GPUs"), gpus=None)
        self.assertEqual(trusted.status, runner.SKIPPED)  # the course's own suite (expect.py)


def lesson_grade(number: str, *results: tuple[str, int, str, int], problem: str = "", problem_status: str = ""):
    """A LessonGrade of lesson NN-x with cases (status, points, message, gpus)."""
    lesson = layout.Lesson(number, f"{number}-x", "x", ".cpp")
    grade = scoring.LessonGrade(lesson, problem=problem, problem_status=problem_status)
    for index, (status, points, message, gpus) in enumerate(results):
        case = runner.TestCase(name=f"case {index}", tags=[], points=points, gpus=gpus)
        grade.results.append(runner.CaseResult(case, status, message))
    return grade


def a_grade(*lessons) -> scoring.Grade:
    return scoring.Grade(student="alice", source="a test", lessons=list(lessons), machine={})


# A stand-in for a lesson's test program that speaks the result channel as the course's main
# does: FAKE_CASES="a:pass,b:hang,c:hang-after-a" lists its cases in order; an argument selects
# some (a comma-separated list, as run_cases writes it); "hang" sleeps, "hang-after-a" sleeps
# only when case a ran before it in the same process; "hang-with-helper" hangs after starting a
# process in a session of its own (as a GPU process killed in a hung NCCL call outlives the
# kill of its group for a while). A hang under COURSE_WATCHDOG_CAP_MS ends as
# the course's watchdog ends one: its line on stderr and exit code 70, after that many ms.
FAKE_PROGRAM = """#!/usr/bin/env python3
import json, os, subprocess, sys, time
setup = os.fdopen(int(os.environ["COURSE_RESULT_SETUP_FD"]), "rb").read().decode().split("\\n")
channel = os.fdopen(int(os.environ["COURSE_RESULT_FD"]), "w")
chosen = [a for a in sys.argv[1:] if not a.startswith("-") and a != "console"]
ran, seq = [], 0
for entry in os.environ["FAKE_CASES"].split(","):
    name, how = entry.split(":")
    if chosen and name not in chosen[0].split(","):
        continue
    if how == "hang-with-helper":  # a helper in a session of its own, still there when the run is stopped
        subprocess.Popen(["sleep", "60"], start_new_session=True)
    if how in ("hang", "hang-with-helper") or (how == "hang-after-a" and "a" in ran):
        if "COURSE_WATCHDOG_CAP_MS" in os.environ:
            cap = int(os.environ["COURSE_WATCHDOG_CAP_MS"]) / 1000
            time.sleep(cap)
            print(f"WATCHDOG: {name} did not finish within {cap:g} s (the grader shortened this limit)", file=sys.stderr)
            sys.stderr.flush()
            os._exit(70)
        time.sleep(60)
    ran.append(name)
    seq += 1
    channel.write(json.dumps({"token": setup[0], "seq": seq, "case": name, "status": "passed", "message": ""}) + "\\n")
    channel.flush()
"""


class RunCasesTests(unittest.TestCase):
    """How run_cases goes on after a shared run that stopped at a case (a hang)."""

    @classmethod
    def setUpClass(cls):
        import limited_run
        limited_run.become_subreaper()  # as the grader is: orphans stay its descendants, to be found

    def run_fake(self, spec: str, timeout: float = 1.0, caps: dict[str, float] | None = None):
        folder = Path(tempfile.mkdtemp(prefix="fake-program-"))
        self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
        program = folder / "fake"
        program.write_text(FAKE_PROGRAM)
        program.chmod(0o755)
        cases = [runner.TestCase(name=entry.split(":")[0], tags=[]) for entry in spec.split(",")]
        timings: list[dict] = []
        results = runner.run_cases(program, cases, timeout, retry_alone=runner.worth_running_alone,
                                   env=dict(os.environ, FAKE_CASES=spec), watchdog_caps=caps, timings=timings)
        self.messages = {result.case.name: result.message for result in results}
        return {result.case.name: result.status for result in results}, timings

    @staticmethod
    def runs_of(timings: list[dict]) -> list[tuple]:
        """(step, cases or case, how it ended) of each process run_cases started."""
        return [(t["step"], t.get("cases") or t.get("case"), t.get("ended") or t.get("status"))
                for t in timings if t["step"] != "case"]

    def test_a_case_that_hangs_first_in_its_process_is_not_run_again(self):
        statuses, timings = self.run_fake("a:hang,b:pass,c:hang,d:pass")
        self.assertEqual(statuses, {"a": runner.TIMED_OUT, "b": runner.PASSED, "c": runner.TIMED_OUT,
                                    "d": runner.PASSED})
        runs = self.runs_of(timings)
        # a hangs first in the first run: that was its own run, and the lesson deadlocks, so the
        # rest run alone: c's hang is waited for once.
        self.assertEqual(runs, [("shared run", 4, "stalled"), ("alone", "b", "passed"), ("alone", "c", "timed_out"),
                                ("alone", "d", "passed")])

    def test_once_the_lesson_deadlocked_its_other_cases_run_under_their_watchdog_caps(self):
        caps = {name: 0.2 for name in "abcd"}
        statuses, timings = self.run_fake("a:pass,b:hang,c:hang,d:pass", timeout=3.0, caps=caps)
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.TIMED_OUT, "c": runner.TIMED_OUT,
                                    "d": runner.PASSED})
        runs = self.runs_of(timings)
        # b's hang is judged with the full time-out twice (after a, then in its own process); only
        # then do c and d get their caps, and c's hang ends under its watchdog, not a time-out.
        self.assertEqual(runs, [("shared run", 4, "stalled"), ("shared run", 3, "stalled"), ("alone", "c", "timed_out"),
                                ("alone", "d", "passed")])
        self.assertIn("WATCHDOG: c did not finish", self.messages["c"])
        lone_c = next(t for t in timings if t["step"] == "alone" and t["case"] == "c")
        self.assertLess(lone_c["seconds"], 2.0)
        self.assertEqual(runner.with_cap({"X": "1"}, None), {"X": "1"})
        self.assertEqual(runner.with_cap({"X": "1"}, 2.5), {"X": "1", "COURSE_WATCHDOG_CAP_MS": "2500"})
        # a cap in the grader's own environment reaches no run: only the grader gives one
        self.assertNotIn("COURSE_WATCHDOG_CAP_MS", runner.clean_env({"COURSE_WATCHDOG_CAP_MS": "1", "X": "1"}))

    def test_a_hang_after_other_cases_gets_a_fresh_process_then_the_rest_run_alone(self):
        statuses, timings = self.run_fake("a:pass,b:hang,c:pass,d:hang")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.TIMED_OUT, "c": runner.PASSED,
                                    "d": runner.TIMED_OUT})
        runs = self.runs_of(timings)
        self.assertEqual(runs, [("shared run", 4, "stalled"), ("shared run", 3, "stalled"), ("alone", "c", "passed"),
                                ("alone", "d", "timed_out")])

    def test_processes_of_a_stopped_run_are_not_left_behind_and_its_results_stand(self):
        statuses, timings = self.run_fake("a:pass,b:hang-with-helper,c:pass")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.TIMED_OUT, "c": runner.PASSED})
        # a's result from the stalled run stands (it is not run alone), b gets its own process
        # and hangs there: the lesson deadlocks, and c runs alone
        self.assertEqual(self.runs_of(timings), [("shared run", 3, "stalled"), ("shared run", 2, "stalled"),
                                                 ("alone", "c", "passed")])

    def test_a_case_that_hangs_only_after_another_gets_a_fresh_process(self):
        statuses, timings = self.run_fake("a:pass,b:hang-after-a,c:pass")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.PASSED, "c": runner.PASSED})
        runs = [(t["step"], t.get("cases"), t.get("ended")) for t in timings if t["step"] != "case"]
        self.assertEqual(runs, [("shared run", 3, "stalled"), ("shared run", 2, "exit code 0")])

    def test_a_run_that_agrees_with_itself_is_one_process(self):
        statuses, timings = self.run_fake("a:pass,b:pass")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.PASSED})
        self.assertEqual([t["step"] for t in timings], ["shared run", "case", "case"])
        self.assertTrue(timings[1]["first"])

    def test_the_stall_time_out_is_per_case(self):
        import limited_run
        script = ("import os, time\n"
                  "out = os.fdopen(int(os.environ['COURSE_RESULT_FD']), 'w')\n"
                  "for _ in range(3):\n    time.sleep(0.6); out.write('x\\n'); out.flush()\n"
                  "time.sleep(30)\n")
        done = limited_run.run_limited([sys.executable, "-c", script], 60, channel=True, stall_timeout=1.5)
        self.assertTrue(done.timed_out and done.stalled)
        self.assertEqual(len(done.record_seconds), 3)
        self.assertLess(done.seconds, 10)  # 3 lines 0.6 s apart, then 1.5 s without one
        self.assertEqual(done.left_behind, 0)

    def test_a_process_that_outlives_its_command_is_left_behind_only_when_the_command_ended(self):
        import limited_run
        helper = "import subprocess, time\nsubprocess.Popen(['sleep', '60'], start_new_session=True)\n"
        ended = limited_run.run_limited([sys.executable, "-c", helper], 30)
        self.assertEqual((ended.timed_out, ended.left_behind), (False, 1))
        stopped = limited_run.run_limited([sys.executable, "-c", helper + "time.sleep(30)\n"], 1.0)
        self.assertEqual((stopped.timed_out, stopped.left_behind), (True, 0))


class ProfileTests(unittest.TestCase):
    def test_reference_timeouts(self):
        rows = [{"submission": "solutions", "lesson": "06-nccl", "step": "case", "detail": "slow", "seconds": 4.0},
                {"submission": "solutions", "lesson": "06-nccl", "step": "alone", "detail": "slow", "seconds": 5.0},
                {"submission": "solutions", "lesson": "06-nccl", "step": "case", "detail": "quick", "seconds": 0.1},
                {"submission": "solutions", "lesson": "07-x", "step": "case", "detail": "huge", "seconds": 100.0}]
        path = Path(tempfile.mkdtemp(prefix="profile-")) / "profile.json"
        self.addCleanup(shutil.rmtree, path.parent, ignore_errors=True)
        path.write_text(json.dumps({"rows": rows}))
        self.assertEqual(grade.reference_timeouts(path, 60),
                         {"06-nccl": {"slow": 25.0, "quick": grade.REFERENCE_FLOOR}, "07-x": {"huge": 60}})
        # plus the lesson's start-up: its longest first case or lone run (06's lone run of "slow", 5 s)
        self.assertEqual(grade.watchdog_caps(path),
                         {"06-nccl": {"slow": 30.0, "quick": grade.WATCHDOG_FLOOR + 5.0}, "07-x": {"huge": 500.0}})
        path.write_text("not json")
        with self.assertRaises(grade.UsageError):
            grade.reference_timeouts(path, 60)

    def test_steps_of_a_lesson_in_a_build_of_all(self):
        lesson = layout.Lesson(number="02", slug="02-set-device", stem="set_device", extension=".cu")
        log = ("[1/3] Compiling C++ object tests/liblesson-impl-02.a.p/.._lessons_02-set-device_set_device.cu.o\n"
               "warning: something\n[2/3] Compiling C++ object tests/libtests-03.a.p/x.o\nother\n"
               "[3/3] Linking target tests/lesson-02\nninja: build stopped\n")
        self.assertEqual(meson_build.steps_of(log, lesson).splitlines(),
                         [log.splitlines()[0], "warning: something", "[3/3] Linking target tests/lesson-02"])


class StatusUnitTests(unittest.TestCase):
    """Why a lesson lost points, in the words the table and the CSV use (scoring.LessonGrade.status)."""

    gpus = ("skipped", 5, "needs 2 GPUs, found 0", 2)

    def test_every_way_to_lose_points_is_named(self):
        cases = {
            "passed": lesson_grade("01", ("passed", 2, "", 0), ("passed", 3, "", 0)),
            "failed 1 of 2 cases: REQUIRE( f() == 2 ); with expansion: 1 == 2":
                lesson_grade("01", ("passed", 2, "", 0), ("failed", 3, "REQUIRE( f() == 2 )\nwith expansion: 1 == 2", 0)),
            "crashed 1 of 1 case: SIGSEGV (signal 11)": lesson_grade("01", ("crashed", 2, "SIGSEGV (signal 11)", 0)),
            "timed out 1 of 2 cases: no result after 3 s":
                lesson_grade("01", ("timed_out", 2, "no result after 3 s", 0), ("passed", 1, "", 0)),
            "lost 3 of 4 cases (2 failed and 1 crashed): failed: boom":
                lesson_grade("01", ("failed", 1, "boom", 0), ("crashed", 1, "SIGABRT", 0), ("failed", 1, "bang", 0),
                             ("passed", 1, "", 0)),
            "missing: no file x.cpp in the submission":
                lesson_grade("01", ("missing", 2, "no file x.cpp in the submission", 0),
                             problem="no file x.cpp in the submission", problem_status="missing"),
            "does not build: x.cpp:2:1: error: expected ';'; x.cpp:3:1: error: more":
                lesson_grade("01", problem="x.cpp:2:1: error: expected ';'\nx.cpp:3:1: error: more",
                             problem_status="build_failed"),
            "refused: x.cpp calls exit() (process control)":
                lesson_grade("01", ("rejected", 2, "x", 0), problem="x.cpp calls exit() (process control)",
                             problem_status="rejected"),
            "invalid results: the results cannot be trusted":
                lesson_grade("01", ("invalid", 2, "x", 0), problem="the results cannot be trusted",
                             problem_status="invalid"),
            "ungraded: needs 2 GPUs, found 0": lesson_grade("01", self.gpus),
            "passed; 5 pt ungraded (needs 2 GPUs, found 0)": lesson_grade("01", ("passed", 2, "", 0), self.gpus),
        }
        for status, grade in cases.items():
            self.assertEqual(grade.status(), status)
        shorts = {lesson.short_status() for lesson in cases.values()}
        self.assertLessEqual({"passed", "failed 1 of 2 cases", "missing", "does not build", "refused",
                              "crashed 1 of 1 case", "invalid results", "ungraded"}, shorts)

    def test_the_csv_row_has_a_reason_beside_every_lost_point(self):
        passed = lesson_grade("01", ("passed", 2, "", 0), self.gpus)
        failed = lesson_grade("02", ("failed", 2, "REQUIRE( a == b ), with commas", 0), ("passed", 1, "", 0))
        missing = lesson_grade("03", ("missing", 4, "no file x.cpp", 0), problem="no file x.cpp", problem_status="missing")
        grade = a_grade(passed, failed, missing)
        lessons = [lesson.lesson for lesson in grade.lessons]
        header = report_csv.header([lesson.slug for lesson in lessons])
        self.assertEqual(header, ["student", "01-x", "01-x status", "02-x", "02-x status", "03-x", "03-x status",
                                  "total", "possible", "ungraded", "graded here", "findings", "problem"])
        row = dict(zip(header, report_csv.row("alice", lessons, grade, "")))
        self.assertEqual((row["01-x"], row["01-x status"]), (2, "passed; 5 pt ungraded (needs 2 GPUs, found 0)"))
        self.assertEqual((row["02-x"], row["02-x status"]), (1, "failed 1 of 2 cases: REQUIRE( a == b ), with commas"))
        self.assertEqual((row["03-x"], row["03-x status"]), (0, "missing: no file x.cpp"))
        self.assertEqual((row["total"], row["possible"], row["ungraded"]), (3, 9, 5))
        self.assertEqual(row["graded here"], "graded 9 of 14 points here; 5 points need more GPUs than this machine has "
                                             "(--require-gpus makes that an error)")
        self.assertEqual(row["problem"], "02-x: failed 1 of 2 cases; 03-x: missing")
        full = a_grade(lesson_grade("01", ("passed", 2, "", 0)))
        full_row = dict(zip(header, report_csv.row("bob", lessons, full, "")))
        self.assertEqual((full_row["graded here"], full_row["problem"], full_row["02-x status"]), ("all 2 points", "", ""))
        nobody = report_csv.row("carol", lessons, None, "internal error: x")
        self.assertEqual(len(nobody), len(header))
        self.assertEqual((nobody[0], nobody[-1], set(nobody[1:-1])), ("carol", "internal error: x", {""}))
        long = a_grade(lesson_grade("01", ("failed", 1, "x" * 500, 0)))
        self.assertLessEqual(len(report_csv.row("dave", lessons[:1], long, "")[2]), report_csv.STATUS_WIDTH)

    def test_the_table_says_what_is_ungraded_under_its_total(self):
        grade = a_grade(lesson_grade("01", ("passed", 2, "", 0), self.gpus),
                        lesson_grade("02", ("missing", 4, "no file x.cpp", 0), problem="no file x.cpp",
                                     problem_status="missing"))
        lines = report_text.render(grade).splitlines()
        total = next(index for index, line in enumerate(lines) if line.startswith("TOTAL"))
        self.assertEqual(lines[total + 1], "graded 6 of 11 points here; 5 points need more GPUs than this machine has "
                                           "(--require-gpus makes that an error)")
        self.assertIn("Status  |  Findings", lines[total - 5])
        self.assertIn("passed; 5 pt ungraded (needs 2 GPUs, found 0)", lines[total - 3])
        self.assertIn("missing: no file x.cpp", lines[total - 2])
        self.assertNotIn("points need more GPUs", report_text.render(a_grade(lesson_grade("01", ("passed", 2, "", 0)))))

    def test_a_case_log_says_whose_exit_code_it_shows(self):
        case = runner.TestCase(name="adds", tags=[])
        shared = runner.CaseResult(case, "passed", exit_code=1, shared_with=3)
        self.assertEqual(runner.log_heading(shared), "===== adds: passed -- run with all 3 cases in one process, which "
                                                     "exited with exit code 1 (some case failed)")
        alone = runner.CaseResult(case, "crashed", exit_code=-11, seconds=0.25)
        self.assertEqual(runner.log_heading(alone), "===== adds: crashed -- run alone in its own process, which ended "
                                                    "with SIGSEGV (signal 11) after 0.2 s")
        killed = runner.CaseResult(case, "timed_out", exit_code=None, seconds=3.0)
        self.assertIn("which was killed (no exit status) after 3.0 s", runner.log_heading(killed))


class QuickStartTests(unittest.TestCase):
    """The README's quick start says which file of each lesson is the student's: its table is what
    grade.py --list-lessons prints from the course's lesson table, so it cannot drift."""

    def test_the_readme_table_is_the_course_lesson_table(self):
        readme = (HERE / "README.md").read_text()
        found = re.search(r"<!-- lesson table: grade.py --list-lessons -->\n(.*?)<!-- /lesson table -->", readme, re.S)
        self.assertIsNotNone(found, "no lesson table in tests/grader/README.md")
        course = HERE.parents[1]
        self.assertEqual(found.group(1), grade.lesson_table(course),
                         "the quick start's table is out of date: paste python3 tests/grader/grade.py --list-lessons")
        self.assertIn("| 02-set-device | `set_device.cu` | `demo.cpp`, `kernels.cu`,", found.group(1))
        for lesson in layout.discover_lessons(course):
            self.assertIn(f"| {lesson.slug} | `{lesson.student_filename}` |", found.group(1))

    def test_list_lessons_prints_the_table_of_any_course(self):
        done = subprocess.run([sys.executable, str(GRADE), "--course", str(FIXTURE), "--list-lessons"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("| 01-passing | `passing.cpp` | `demo.cpp`, `passing.h` |\n", done.stdout)
        self.assertEqual(len(done.stdout.splitlines()), 2 + 8)


class MpiReferenceTests(unittest.TestCase):
    """Lesson 09's student file calls MPI: what a rank needs is allowed, by name; the rest is refused."""

    def test_what_a_rank_needs_is_allowed(self):
        import integrity
        for name in ("MPI_Comm_rank", "MPI_Comm_size", "MPI_Bcast", "MPI_Allgather", "MPI_Barrier",
                     "ompi_mpi_comm_world", "ompi_mpi_byte", "cudaIpcOpenMemHandle", "cudaIpcGetEventHandle"):
            self.assertEqual(integrity.reference_refused(name, name), "", name)

    def test_what_ends_or_escapes_the_job_is_refused(self):
        import integrity
        for name in ("MPI_Abort", "MPI_Comm_spawn", "MPI_File_open", "MPI_Comm_connect", "MPI_Open_port",
                     "ompi_mpi_abort", "PMPI_Bcast"):
            self.assertNotEqual(integrity.reference_refused(name, name), "", name)


ALLOWLIST = HERE / "allowlist"
LISTINGS = HERE / "listings"
CXX = shutil.which("g++") or shutil.which("c++")


def course_nvtx_flags() -> list[str]:
    """The flags tests/meson.build gives a student's file for NVTX (its list no_nvtx)."""
    match = re.search(r"no_nvtx = \[(.*?)\]", (HERE.parent / "meson.build").read_text(), re.DOTALL)
    return re.findall(r"'([^']+)'", match.group(1)) if match else []


def nvtx_include() -> list[str]:
    import integrity
    return [f"-I{root / 'include'}" for root in integrity.cuda_roots()
            if (root / "include" / "nvtx3" / "nvToolsExt.h").is_file()][:1]


def mpi_include() -> list[str]:
    if not shutil.which("mpicxx"):
        return []
    done = subprocess.run(["mpicxx", "--showme:incdirs"], capture_output=True, text=True)
    return [f"-I{folder}" for folder in done.stdout.split()] + ["-DOMPI_SKIP_MPICXX=1"] if done.returncode == 0 else []


@unittest.skipIf(CXX is None, "no C++ compiler")
class AllowlistObjectTests(unittest.TestCase):
    """The object checks (integrity.check_object, check_listing) on small files compiled here and on
    listings GCC 12 and GCC 13 wrote (tests/grader/listings/): correct code passes on both compilers;
    what reaches outside the process stays refused, with what to write instead."""

    @classmethod
    def setUpClass(cls):
        cls.folder = Path(tempfile.mkdtemp(prefix="allowlist-"))
        cls.objects: dict[tuple, Path | str] = {}
        nvtx, mpi = nvtx_include(), mpi_include()
        jobs = [("accepted_stdlib.cpp", (), "-O2"), ("accepted_stdlib.cpp", (), "-O0"),
                ("refused_outside.cpp", (), "-O2"), ("refused_handmade_exception.cpp", (), "-O2"),
                ("global_function_table.cpp", (), "-O2")]
        if nvtx:
            jobs += [("accepted_nvtx.cpp", (*nvtx, *course_nvtx_flags()), level) for level in ("-O2", "-O0")]
            jobs += [("refused_nvtx_loader.cpp", (*nvtx, *course_nvtx_flags()), "-O2")]
        if mpi:
            jobs += [("accepted_mpi.cpp", tuple(mpi), "-O2"), ("refused_mpi.cpp", tuple(mpi), "-O2")]
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # about 30 s on 2 cores
            for job, result in zip(jobs, pool.map(lambda job: cls._compile(ALLOWLIST / job[0], job[1], job[2]), jobs)):
                cls.objects[(job[0], job[2])] = result

    @classmethod
    def _compile(cls, source: Path, flags, level: str) -> Path | str:
        """The object, or the compiler's errors."""
        obj = cls.folder / f"{source.stem}{level}.cpp.o"
        done = subprocess.run([CXX, "-std=c++20", level, "-save-temps=obj", *flags, "-c", str(source), "-o", str(obj)],
                              capture_output=True, text=True, cwd=cls.folder, timeout=300)
        return obj if done.returncode == 0 else done.stderr

    def compiled(self, name: str, level: str = "-O2") -> Path:
        if (name, level) not in self.objects:
            self.skipTest(f"{name} was not compiled here (no NVTX headers or no MPI)")
        result = self.objects[(name, level)]
        self.assertIsInstance(result, Path, result)
        return result

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def compile(self, source: Path | str, *flags: str, level: str = "-O2", name: str = "") -> Path:
        if isinstance(source, str):
            path = self.folder / (name or "inline.cpp")
            path.write_text(source)
            source = path
        obj = self.folder / f"{source.stem}{level}.cpp.o"
        done = subprocess.run([CXX, "-std=c++20", level, "-save-temps=obj", *flags, "-c", str(source), "-o", str(obj)],
                              capture_output=True, text=True, cwd=self.folder, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return obj

    def problems(self, obj: Path) -> str:
        import integrity
        return "\n".join(f"{what} ({why})" for what, why in integrity.check_object(obj))

    # ------------------------------------------------------------ what the compilers emit themselves

    def test_gcc12_and_gcc13_listings_of_the_same_correct_files_are_accepted(self):
        import integrity
        names = sorted(path.name for path in LISTINGS.glob("*.s"))
        self.assertEqual(names, ["gcc12-01-iostream.s", "gcc12-04-thrust-iostream.s", "gcc13-01-iostream.s",
                                 "gcc13-04-thrust-iostream.s"])
        for name in names:
            self.assertEqual(integrity.check_listing((LISTINGS / name).read_text(), "-04-" in name), [], name)

    def test_header_asm_with_another_symbol_or_anything_more_is_refused(self):
        import integrity
        line = "\t.globl _ZSt21ios_base_library_initv\n"
        for name, cuda in (("gcc13-01-iostream.s", False), ("gcc13-04-thrust-iostream.s", True)):
            text = (LISTINGS / name).read_text()
            self.assertIn(line, text)
            for changed in (text.replace(line, "\t.globl _ZSt21ios_base_library_initw\n"),  # another symbol
                            text.replace(line, "\t.globl cudaMalloc\n"),
                            text.replace(line, line + "\tsyscall\n"),  # the asm plus something else
                            text.replace(line, line + "\t.text\n\t.byte\t0x0f,0x05\n"),
                            text.replace(line, line + "\t.section\t.rodata,\"awx\"\n\t.long\t5\n"),
                            text.replace(line, line + "\t.p2align 4,0x90\n")):
                problems = integrity.check_listing(changed, cuda)
                self.assertEqual(len(problems), 1, (name, changed[:400]))
                self.assertIn("holds an asm statement", problems[0][0])

    def test_gcc13_iostream_shape_passes_the_object_checks_and_its_symbol_only_as_declared(self):
        """GCC 13's <iostream> asm, written here by hand where GCC 12 runs: the file is accepted
        optimised or not (the block runs on to the end of an unoptimised file); calling the
        symbol it declares is refused."""
        declared = '__asm(".globl _ZSt21ios_base_library_initv");\n'
        source = ("#include <cstdio>\ndouble scale(double x) { return x * 3.25 + 1e300; }\n"
                  'const char* name() { return "a string constant"; }\n' + declared)
        for level in ("-O2", "-O0"):
            self.assertEqual(self.problems(self.compile(source, "-g", level=level, name="declared.cpp")), "", level)
        called = declared + "namespace std { void ios_base_library_init(); }\nvoid f() { std::ios_base_library_init(); }\n"
        self.assertIn("uses std::ios_base_library_init()", self.problems(self.compile(called, name="called.cpp")))

    # ------------------------------------------------------------ correct code

    def test_everyday_cxx_is_accepted_optimised_or_not(self):
        for level in ("-O2", "-O0"):
            self.assertEqual(self.problems(self.compiled("accepted_stdlib.cpp", level)), "", level)

    def test_nvtx_with_the_course_flags_is_accepted(self):
        self.assertIn("-DNVTX_SUPPORT_DYNAMIC_INJECTION_LIBRARY=0", course_nvtx_flags())
        for level in ("-O2", "-O0"):
            self.assertEqual(self.problems(self.compiled("accepted_nvtx.cpp", level)), "", level)

    def test_mpi_communication_datatypes_and_error_handlers_are_accepted(self):
        self.assertEqual(self.problems(self.compiled("accepted_mpi.cpp")), "")

    # ------------------------------------------------------------ what stays refused

    def test_what_reaches_outside_the_process_stays_refused(self):
        problems = self.problems(self.compiled("refused_outside.cpp"))
        for name in ("uses fopen", "uses getenv", "uses system", "uses dlopen", "std::basic_ofstream",
                     "std::filesystem", "uses std::cin", "uses setlocale", "uses localtime", "uses std::set_terminate",
                     "uses exit"):
            self.assertIn(name, problems)
        self.assertIn("take what you need as a parameter", problems)  # what to write instead

    def test_mpi_that_leaves_the_job_stays_refused(self):
        problems = self.problems(self.compiled("refused_mpi.cpp"))
        for name in ("MPI_Abort", "MPI_Comm_spawn", "MPI_File_open", "MPI_Open_port", "MPI_Comm_connect",
                     "ompi_mpi_info_env"):
            self.assertIn(f"uses {name} ", problems)
        self.assertIn("MPI_Abort ends every rank", problems)
        self.assertNotIn("MPI_Info_get_nkeys", problems)

    def test_an_exception_given_its_type_by_hand_stays_refused(self):
        problems = self.problems(self.compiled("refused_handmade_exception.cpp"))
        self.assertIn("uses __cxa_init_primary_exception", problems)
        self.assertIn("std::make_exception_ptr", problems)

    def test_nvtx_with_its_loader_turned_back_on_is_refused(self):
        problems = self.problems(self.compiled("refused_nvtx_loader.cpp"))
        self.assertIn("uses getenv", problems)
        self.assertIn("uses dlopen", problems)

    def test_a_global_table_of_std_function_is_refused_with_the_advice_to_make_it_local(self):
        problems = self.problems(self.compiled("global_function_table.cpp"))
        self.assertIn("calls through a pointer", problems)
        self.assertIn("make it a function-local static", problems)


class LayoutUnitTests(unittest.TestCase):
    def test_discover_lessons(self):
        lessons = layout.discover_lessons(FIXTURE)
        self.assertEqual([lesson.number for lesson in lessons], [f"0{n}" for n in range(1, 9)])
        first = lessons[0]
        self.assertEqual((first.slug, first.stem, first.extension, first.target),
                         ("01-passing", "passing", ".cpp", "lesson-01"))  # demo.cpp is not the student file

    def test_select_lessons(self):
        lessons = layout.discover_lessons(FIXTURE)
        self.assertEqual([l.number for l in layout.select_lessons(lessons, "3,01, 03-starter")], ["01", "03"])
        with self.assertRaises(layout.LayoutError):
            layout.select_lessons(lessons, "42")

    def test_find_student_file_order(self):
        lesson = layout.discover_lessons(FIXTURE)[0]
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            self.assertIsNone(layout.find_student_file(root, lesson))
            for relative in ("deep/er/passing.cpp", "x/passing.cpp", "build/passing.cpp"):
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).write_text(relative)
            self.assertEqual(layout.find_student_file(root, lesson), root / "x/passing.cpp")  # shallowest, not build/
            (root / "01-passing").mkdir()
            (root / "01-passing/passing.cpp").write_text("")
            self.assertEqual(layout.find_student_file(root, lesson), root / "01-passing/passing.cpp")
            (root / "lessons/01-passing").mkdir(parents=True)
            (root / "lessons/01-passing/passing.cpp").write_text("")
            self.assertEqual(layout.find_student_file(root, lesson), root / "lessons/01-passing/passing.cpp")

    def test_stage_course_leaves_out_solutions_build_and_git(self):
        with tempfile.TemporaryDirectory() as folder:
            course, stage = Path(folder) / "course", Path(folder) / "stage"
            shutil.copytree(FIXTURE, course)
            for extra in (".git/HEAD", "build/x", "builddir/y", "lessons/01-passing/build_notes.txt"):
                (course / extra).parent.mkdir(parents=True, exist_ok=True)
                (course / extra).write_text("")
            layout.stage_course(course, stage)
            self.assertFalse((stage / "solutions").exists())
            self.assertFalse((stage / ".git").exists() or (stage / "build").exists() or (stage / "builddir").exists())
            self.assertTrue((stage / "lessons/01-passing/build_notes.txt").exists())  # only top-level build* goes
            self.assertTrue((stage / "tests/lesson_01.cpp").exists())


class BuildUnitTests(unittest.TestCase):
    def test_first_errors(self):
        log = ("[1/3] Compiling C++ object x.o\nFAILED: x.o\nc++ -Werror -c ../course/lessons/08-b/b.cpp\n"
               "../course/lessons/08-b/b.cpp: In function 'int f()':\n"
               "../course/lessons/08-b/b.cpp:4:15: error: expected ';' before '}' token\n"
               "    4 |   return a + b\n"
               "ninja: build stopped: subcommand failed.\n")
        message = meson_build.first_errors(log, Path("/w/build"), Path("/w/course"))
        self.assertEqual(message, "lessons/08-b/b.cpp:4:15: error: expected ';' before '}' token")
        nvcc = 'lessons/02-x/x.cu(12): error: identifier "foo" is undefined\n'
        self.assertEqual(meson_build.first_errors(nvcc), nvcc.strip())
        link = "/usr/bin/ld: x.o: in function `main':\nx.cpp:(.text+0x5): undefined reference to `f()'\n" \
               "collect2: error: ld returned 1 exit status\n"
        self.assertIn("undefined reference to `f()'", meson_build.first_errors(link))


# ============================================================================ grading the fixture

@needs_tools
class DefaultGradeTests(unittest.TestCase):
    """grade.py on the fixture's working tree (graded once, in setUpModule)."""

    def setUp(self):
        self.assertEqual(DEFAULT.get("rc"), 0, DEFAULT.get("stderr"))

    def test_table(self):
        report = DEFAULT["stdout"]
        expected = {"01-passing": ["5/5", "3", "0", "0", "0"], "02-assertion": ["1/3", "1", "1", "0", "0"],
                    "03-starter": ["0/4", "0", "2", "0", "0"], "04-two-gpus": ["0/0", "0", "0", "2", "5"],
                    "05-crash": ["2/4", "1", "1", "0", "0"], "06-hang": ["0/2", "0", "1", "0", "0"],
                    "07-watchdog": ["0/3", "0", "1", "0", "0"], "08-broken": ["0/?", "-", "-", "-", "0"]}
        for slug, cells in expected.items():
            self.assertEqual(table_row(report, slug)[1:6], cells, slug)
        self.assertEqual(table_row(report, "TOTAL")[1], "8/21")
        self.assertIn(DEFAULT["report"], report)  # report.txt is the table as printed

    def test_the_status_of_each_lesson_says_why_it_lost_points(self):
        report = DEFAULT["report"]
        expected = {
            "01-passing": "passed",
            "02-assertion": "failed 1 of 2 cases: REQUIRE( multiply(2, 3) == 6 ) with expansion: 5 == 6",
            "03-starter": "failed 2 of 2 cases: NOT_IMPLEMENTED: task 1 in square() at lessons/03-starter/starter.cpp:",
            "04-two-gpus": "ungraded: needs 2 GPUs, found 0",
            "05-crash": "crashed 1 of 2 cases: SIGSEGV",
            "06-hang": f"timed out 1 of 1 case: no result after {CASE_TIMEOUT} s",
            "07-watchdog": "timed out 1 of 1 case: WATCHDOG: join_all(2) did not finish within 1 s",
            "08-broken": "does not build: lessons/08-broken/broken.cpp:4",
        }
        for slug, status in expected.items():
            self.assertIn(status, " ".join(table_row(report, slug)), slug)
        self.assertIn("error: expected", report)
        self.assertIn("has no [points:N] tag", report)  # the warning
        output = DEFAULT["results"]["output"]
        for slug, status in expected.items():
            self.assertIn(f"  {slug}: {status}", output, slug)

    def test_ungraded_points_are_said_where_their_number_is(self):
        note = ("graded 21 of 26 points here; 5 points need more GPUs than this machine has "
                "(--require-gpus makes that an error)")
        lines = DEFAULT["report"].splitlines()
        self.assertEqual(lines[lines.index(next(line for line in lines if line.startswith("TOTAL"))) + 1], note)
        self.assertIn(f"Ungraded: {note}.", DEFAULT["report"])
        self.assertIn(note, DEFAULT["results"]["output"])
        self.assertEqual(DEFAULT["results"]["extra_data"]["ungraded_note"], note)
        properties = {p.get("name"): p.get("value") for p in DEFAULT["junit"].find("testsuite").iter("property")}
        self.assertEqual(properties["ungraded_note"], note)

    def test_a_case_log_says_the_exit_status_is_its_process(self):
        log = (TMP / "default" / "grade" / "logs" / "02-assertion.log").read_text()
        self.assertIn("===== multiplies zero by zero: passed -- run with both cases in one process, which exited with "
                      "exit code 1 (some case failed)\n", log)  # the other case failed: the run's status, not its own
        self.assertRegex(log, r"===== multiplies, with commas \[and brackets\]: failed -- run alone in its own process, "
                              r"which exited with exit code 1 \(the case failed\)")
        self.assertNotRegex(log, r"passed \(exit code")

    def test_results_json(self):
        results = DEFAULT["results"]
        self.assertEqual(results["score"], 8)
        tests = tests_by_number(results)
        self.assertEqual(set(tests), {"01.1", "01.2", "02.1", "02.2", "03.1", "03.2", "04.1", "04.2", "05.1", "05.2",
                                      "06.1", "07.1", "08"})
        def score(number):
            return tests[number]["score"], tests[number]["max_score"], tests[number]["status"]
        self.assertEqual(score("01.2"), (3, 3, "passed"))
        self.assertEqual(score("02.1"), (0, 2, "failed"))
        self.assertIn("with message: inputs 2 and 3", tests["02.1"]["output"])
        self.assertIn("(ungraded)", tests["04.1"]["name"])
        self.assertEqual((tests["04.1"]["max_score"], "status" in tests["04.1"]), (0, False))
        self.assertIn("needs 2 GPUs, found 0", tests["04.1"]["output"])
        self.assertEqual(tests["05.1"]["status"], "passed")  # the crash of 05.2 does not cost 05.1
        self.assertIn("CRASHED", tests["05.2"]["output"])
        self.assertIn("WATCHDOG", tests["07.1"]["output"])
        self.assertEqual(tests["08"]["status"], "failed")
        self.assertIn("0 GPUs", results["output"])
        self.assertEqual(results["extra_data"]["possible"], 21)
        self.assertEqual(results["extra_data"]["machine"]["cuda_runtime"], "test")  # the probe's, not a program's

    def test_junit(self):
        junit = DEFAULT["junit"]
        suites = {suite.get("name"): suite for suite in junit.iter("testsuite")}
        self.assertEqual(len(suites), 8)

        def kinds(slug):
            return [[child.tag for child in case if child.tag in ("failure", "error", "skipped")]
                    for case in suites[slug].iter("testcase")]
        self.assertEqual(kinds("01-passing"), [[], [], []])
        self.assertEqual(kinds("02-assertion"), [["failure"], []])
        self.assertEqual(kinds("04-two-gpus"), [["skipped"], ["skipped"]])
        self.assertEqual(kinds("05-crash"), [[], ["error"]])
        self.assertEqual(suites["06-hang"].find("testcase/error").get("type"), "timed_out")
        self.assertEqual(suites["08-broken"].find("testcase/error").get("type"), "build_failed")
        self.assertEqual(junit.get("tests"), "14")
        properties = {p.get("name"): p.get("value") for p in suites["02-assertion"].iter("property")}
        self.assertEqual((properties["points_earned"], properties["points_possible"]), ("1", "3"))
        self.assertIn("machine", properties)

    def test_machine_record_and_logs(self):
        record = DEFAULT["machine"]
        for field in ("gpus", "gpu_count", "driver", "cuda_runtime", "nvcc", "nccl", "nvidia_smi"):
            self.assertIn(field, record)
        self.assertEqual((record["gpu_count"], record["gpus"], record["driver_api"]), (0, [], "test"))
        self.assertIn("COURSE_GRADER_TEST_GPU_COUNT", record["gpu_probe"]["via"])
        self.assertRegex(record["sandbox"], r"^(on|off) \(")
        self.assertIn(f"Sandbox:  {record['sandbox']}", DEFAULT["report"])
        self.assertIn(record["sandbox"], DEFAULT["results"]["output"])
        self.assertEqual(len(DEFAULT["logs"]), 8)

    def test_the_profile_has_every_step(self):
        rows = json.loads((TMP / "default" / "grade" / "profile.json").read_text())["rows"]
        steps = {(row["lesson"], row["step"]) for row in rows}
        for step in ("gpu probe", "stage", "configure", "build all lessons", "reports"):
            self.assertIn(("", step), steps)
        for step in ("compile student file", "link", "build lesson", "object checks", "list cases", "shared run",
                     "case"):
            self.assertIn(("01-passing", step), steps)
        self.assertIn(("08-broken", "build lesson"), steps)  # it failed: Ninja's log has no step of it
        self.assertNotIn(("08-broken", "link"), steps)
        self.assertTrue((TMP / "default" / "grade" / "profile.txt").is_file())
        self.assertIn("Profile:", DEFAULT["stderr"])

    def test_a_hang_seen_in_a_fresh_process_costs_one_time_out(self):
        rows = json.loads((TMP / "default" / "grade" / "profile.json").read_text())["rows"]
        for slug in ("06-hang", "07-watchdog"):
            runs = [row for row in rows if row["lesson"] == slug and row["step"] in ("shared run", "alone")]
            self.assertEqual(len(runs), 1, runs)  # the shared run was the case's own: no second run
        self.assertEqual(table_row(DEFAULT["report"], "06-hang")[1], "0/2")
        self.assertIn("timed out 1 of 1 case", DEFAULT["report"])

    def test_nothing_built_inside_the_course(self):
        self.assertEqual(sorted(p.name for p in COURSE.iterdir()), sorted(p.name for p in FIXTURE.iterdir()))
        staged = TMP / "default" / "working-tree" / "course"
        self.assertTrue((staged / "lessons").is_dir())
        self.assertFalse((staged / "solutions").exists())


@needs_tools
class RunnerOnFixtureTests(unittest.TestCase):
    def test_list_cases(self):
        listing = runner.list_cases(program("01"))
        self.assertEqual([c.name for c in listing.cases],
                         ["adds two small numbers", "adds negative numbers", "adds zero (no points tag)"])
        self.assertEqual([c.points for c in listing.cases], [2, 3, 0])
        self.assertEqual(listing.inventory["gpus_visible"], 0)

    def test_a_relative_program_path(self):  # as Meson passes it to expect.py; the program runs elsewhere
        listing = runner.list_cases(os.path.relpath(program("01")))
        self.assertEqual(len(listing.cases), 3)
        result = runner.run_case(os.path.relpath(program("01")), listing.cases[0], timeout=30)
        self.assertEqual(result.status, runner.PASSED)

    def test_run_one_case_with_special_characters(self):
        case = runner.list_cases(program("02")).cases[0]
        self.assertEqual(case.name, "multiplies, with commas [and brackets]")
        result = runner.run_case(program("02"), case, timeout=30)
        self.assertEqual(result.status, runner.FAILED)
        self.assertEqual(result.exit_code, 1)

    def test_fake_gpus_in_inventory(self):
        env = dict(os.environ, FAKE_GPU_COUNT="2")
        listing = runner.list_cases(program("04"), env=env)
        self.assertEqual([gpu["name"] for gpu in listing.inventory["gpus"]], ["Fake GPU 80GB"] * 2)
        self.assertEqual(runner.run_case(program("04"), listing.cases[0], 30, env=env).status, runner.PASSED)


@needs_tools
class ExpectTests(unittest.TestCase):
    def expect(self, mode: str, number: str, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(EXPECT), "--expect", mode, "--timeout", CASE_TIMEOUT, *extra,
                               str(program(number))], capture_output=True, text=True, timeout=120)

    def test_pass(self):
        self.assertEqual(self.expect("pass", "01").returncode, 0)
        self.assertEqual(self.expect("pass", "04").returncode, 77)  # all skipped for missing GPUs
        failing = self.expect("pass", "02")
        self.assertEqual(failing.returncode, 1)
        self.assertIn("multiplies, with commas [and brackets]", failing.stderr)

    def test_starter(self):
        done = self.expect("starter", "03")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertEqual(len([line for line in done.stdout.splitlines() if line.startswith("FAILED")]), 2)
        vacuous = self.expect("starter", "01")
        self.assertEqual(vacuous.returncode, 1)
        self.assertIn("vacuous", vacuous.stderr)
        self.assertEqual(self.expect("starter", "05").returncode, 1)  # a crash is not NOT_IMPLEMENTED
        self.assertEqual(self.expect("starter", "04").returncode, 77)

    def test_wrong(self):
        self.assertEqual(self.expect("wrong", "02").returncode, 0)
        caught = self.expect("wrong", "02", "--catches", "multiplies, with commas [and brackets]")
        self.assertEqual(caught.returncode, 0)
        missed = self.expect("wrong", "02", "--catches", "multiplies zero by zero")
        self.assertEqual(missed.returncode, 1)
        self.assertIn("did not catch", missed.stderr)
        self.assertEqual(self.expect("wrong", "01").returncode, 1)
        self.assertEqual(self.expect("wrong", "04").returncode, 77)


@needs_tools
class RequireGpusTests(unittest.TestCase):
    """--require-gpus, on the build folder setUpModule made (nothing to recompile)."""

    def test_missing_gpus_exit_3(self):
        done = run_grader("--build-dir", str(TMP / "default"), "--out", str(TMP / "gpus"), "--lessons", "04",
                          "--require-gpus")
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn("needs 2 GPUs, found 0", done.stderr)

    def test_enough_gpus_exit_0(self):
        done = run_grader("--build-dir", str(TMP / "default"), "--out", str(TMP / "gpus2"), "--lessons", "04",
                          "--require-gpus", env=dict(os.environ, FAKE_GPU_COUNT="2"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(table_row(done.stdout, "04-two-gpus")[1], "5/5")

    def test_usage_errors_exit_2(self):
        for args in (["--lessons", "99"], ["--submission", str(TMP / "nowhere")], ["--csv", "x.csv"],
                     ["--no-such-option"]):
            self.assertEqual(run_grader("--build-dir", str(TMP / "unused"), *args).returncode, 2, args)
        inside = run_grader("--build-dir", str(COURSE / "build" / "grading"))
        self.assertEqual(inside.returncode, 2)
        self.assertIn("inside the course", inside.stderr)


@needs_tools
class SubmissionTests(unittest.TestCase):
    def test_reference_solutions_score_everything(self):
        out = TMP / "solutions-grade"
        done = run_grader("--submission", str(FIXTURE / "solutions"), "--build-dir", str(TMP / "solutions"),
                          "--out", str(out), "--lessons", "03,04,06,07,08")
        self.assertEqual(done.returncode, 0, done.stderr)
        results = read_outputs(out)["results"]
        self.assertEqual((results["score"], results["extra_data"]["possible"], results["extra_data"]["ungraded"]),
                         (11, 11, 5))
        self.assertFalse((TMP / "solutions" / "submission" / "course" / "solutions").exists())


def make_class(batch: Path) -> None:
    """alice uploads flat files (lesson 01 does not compile); bob uploads the course's layout,
    without lesson 03, and with a test file and a header he changed."""
    alice, bob = batch / "alice", batch / "bob"
    alice.mkdir(parents=True)
    for name in ("02-assertion/assertion.cpp", "03-starter/starter.cpp"):
        shutil.copy(FIXTURE / "solutions" / name, alice)
    (alice / "passing.cpp").write_text('#include "passing.h"\nint add(int a, int b) { return a + b }\n')
    shutil.copytree(FIXTURE / "lessons", bob / "lessons")
    (bob / "lessons/03-starter/starter.cpp").unlink()
    (bob / "tests").mkdir()
    (bob / "tests/lesson_02.cpp").write_text(
        '#include <catch2/catch_test_macros.hpp>\n'
        'TEST_CASE("multiplies, with commas [and brackets]", "[02-assertion][task:1][points:2]") {}\n')
    with (bob / "lessons/02-assertion/assertion.h").open("a") as header:
        header.write("#define multiply(a, b) ((a) * (b))\n")


@needs_tools
class BatchTests(unittest.TestCase):
    """Two students (make_class), graded on lessons that pass, fail, crash, time out, skip for
    GPUs, do not build and are missing."""

    @classmethod
    def setUpClass(cls):
        batch = TMP / "class"
        make_class(batch)
        cls.csv = TMP / "class.csv"
        cls.done = run_grader("--batch", str(batch), "--build-dir", str(TMP / "batch"), "--out",
                              str(TMP / "batch-grade"), "--csv", str(cls.csv), "--lessons", "01,02,03,04,05,07")
        with cls.csv.open() as table:
            cls.rows = {row["student"]: row for row in csv.DictReader(table)}

    def test_csv(self):
        self.assertEqual(self.done.returncode, 0, self.done.stderr)
        self.assertEqual(set(self.rows), {"alice", "bob"})
        pick = ("01-passing", "02-assertion", "03-starter", "04-two-gpus", "05-crash", "07-watchdog", "total", "possible")
        self.assertEqual([self.rows["alice"][k] for k in pick], ["0", "3", "4", "0", "0", "0", "7", "19"])
        self.assertEqual([self.rows["bob"][k] for k in pick], ["5", "1", "0", "0", "2", "0", "8", "19"])  # his test and header ignored

    def test_csv_says_why_each_lesson_lost_points(self):
        alice, bob = self.rows["alice"], self.rows["bob"]
        statuses = {
            ("alice", "01-passing"): "does not build: lessons/01-passing/passing.cpp:2:",
            ("alice", "02-assertion"): "passed",
            ("alice", "05-crash"): "missing: no file crash.cpp in the submission",
            ("alice", "04-two-gpus"): "missing: no file two_gpus.cpp in the submission",
            ("bob", "01-passing"): "passed",
            ("bob", "02-assertion"): "failed 1 of 2 cases: REQUIRE( multiply(2, 3) == 6 ) with expansion: 5 == 6",
            ("bob", "03-starter"): "missing: no file starter.cpp in the submission",
            ("bob", "04-two-gpus"): "ungraded: needs 2 GPUs, found 0",
            ("bob", "05-crash"): "crashed 1 of 2 cases: SIGSEGV (signal 11)",
            ("bob", "07-watchdog"): "timed out 1 of 1 case: WATCHDOG: join_all(2) did not finish within 1 s",
        }
        for (student, slug), status in statuses.items():
            cell = self.rows[student][slug + " status"]
            self.assertTrue(cell.startswith(status), (student, slug, cell))
        self.assertEqual(alice["problem"], "01-passing: does not build; 04-two-gpus: missing; 05-crash: missing; "
                                           "07-watchdog: missing")
        self.assertEqual(bob["problem"], "02-assertion: failed 1 of 2 cases; 03-starter: missing; "
                                         "05-crash: crashed 1 of 2 cases; 07-watchdog: timed out 1 of 1 case")
        for row in (alice, bob):
            for slug in ("01-passing", "02-assertion", "03-starter", "04-two-gpus", "05-crash", "07-watchdog"):
                self.assertTrue(row[slug + " status"], (row["student"], slug))  # never an empty cell

    def test_ungraded_points_are_said_in_the_csv_and_on_the_terminal(self):
        note = ("graded 19 of 24 points here; 5 points need more GPUs than this machine has "
                "(--require-gpus makes that an error)")
        for student in ("alice", "bob"):
            self.assertEqual((self.rows[student]["ungraded"], self.rows[student]["graded here"]), ("5", note))
        lines = self.done.stdout.splitlines()
        bob = lines.index(next(line for line in lines if line.startswith("bob: ")))
        self.assertEqual(lines[bob], f"bob: 8/19 points  ({TMP / 'batch-grade' / 'bob' / 'report.txt'})")
        self.assertEqual(lines[bob + 1], f"    {note}")
        self.assertEqual(lines[bob + 2], "    lost points: 02-assertion: failed 1 of 2 cases; 03-starter: missing; "
                                         "05-crash: crashed 1 of 2 cases; 07-watchdog: timed out 1 of 1 case")
        self.assertIn(f"Ungraded: {note}", lines)

    def test_reports_say_why(self):
        alice = read_outputs(TMP / "batch-grade" / "alice")
        row = " ".join(table_row(alice["report"], "01-passing"))
        self.assertIn("does not build: lessons/01-passing/passing.cpp:2", row)
        self.assertEqual(table_row(alice["report"], "01-passing")[1], "0/5")  # cases known from the pristine course
        bob = read_outputs(TMP / "batch-grade" / "bob")
        tests = tests_by_number(bob["results"])
        self.assertIn("no file starter.cpp in the submission", tests["03.1"]["output"])
        self.assertEqual(tests["03.1"]["max_score"], 2)


class HidingSandbox(Sandbox):
    """A sandbox in which the GPU probe finds no GPU (as bwrap would without /dev/nvidia-uvm)."""

    def __init__(self):
        super().__init__("/usr/bin/env", "on (a test sandbox)")

    def command(self, argv, scratch, cwd, readable=()):
        return ["/usr/bin/env", "COURSE_GRADER_TEST_GPU_COUNT=0", *[str(part) for part in argv]]


class ProbeTests(unittest.TestCase):
    def test_a_sandbox_that_hides_gpus_is_turned_off(self):
        settings = Settings(course=FIXTURE, build_root=TMP / "probe", lessons=[], quiet=True, sandbox=HidingSandbox())
        saved = os.environ.get("COURSE_GRADER_TEST_GPU_COUNT")
        os.environ["COURSE_GRADER_TEST_GPU_COUNT"] = "2"
        try:
            grader = Grader(settings)
        finally:
            if saved is None:
                del os.environ["COURSE_GRADER_TEST_GPU_COUNT"]
            else:
                os.environ["COURSE_GRADER_TEST_GPU_COUNT"] = saved
        self.assertEqual(grader.run.gpus, 2)
        self.assertEqual(grader.sandbox.description, "off (inside bubblewrap the GPU probe found 0 GPUs, outside 2)")
        self.assertFalse(grader.run.sandbox.enabled)


# The fixture course has no CUDA, so the library it proves "a library's function may not be
# replaced" with is libc (redefine_libc); the same check against the CUDA runtime
# (tests/grader/attacks/01-device-enumeration/redefine_cuda) is graded on the GPU host by
# .ci/gpu-verify, with the rest of those attacks on the real lesson 01.
ATTACK_REASONS = {  # attack -> what the report must say (the integrity checks are on)
    "control_exception": "the test framework's headers are not the student's to include",
    "include_solution": "does not build",
    "include_solution_absolute": "uses an #include by absolute path at line 1",
    "redefine_libc": "defines atoi (as libc.so.6 does)",
    "skip": "catch_test_macros.hpp",
    "atexit_forgery": "uses write (not on the list of what student code may use",
    "exit_zero": "uses exit (not on the list of what student code may use",
    "setsid_sleeper": "uses fork",
    "huge_output": "printed more than the 8 MB allowed",
    "fake_inventory": "runs code before main() that uses fprintf",  # its global's initialiser prints
    # The classes of issue 29 (round 2): code before main(), an unlisted libc function, a hidden
    # system call, a COMDAT replacement, a hand-made exception, files read by the build, a build
    # without limits, a look around the machine.
    "constructor_argv": "runs (anonymous namespace)::early(int, char**, char**) before main() (a function marked constructor)",
    "libc_shell": "uses wordexp",
    "hidden_syscall": "holds an asm statement at passing.cpp:",
    "comdat_write": "defines write (as libc.so.6 does)",
    "handmade_exception": "uses __cxa_init_primary_exception",
    "incbin_solution": "uses an assembler .incbin",
    "huge_object": "the build wrote a file larger than 512 MB",
    "peek_outside": "uses access",
    # Round 3: the walk of the code before main() follows the object's own calls that need no
    # relocation; syscall() is allowed only with the futex number.
    "early_thread": "runs code before main() that uses std::thread::",
    "syscall_write": "uses syscall (not on the list of what student code may use",
}
RUNTIME_REASONS = {  # attack -> what the report says when only the run-time defences stand
    "control_exception": "the test framework's own control exception",
    "exit_zero": "the program ended (exit code 0) before the case finished",
    "atexit_forgery": "invalid results: the results of lesson-01 cannot be trusted: result record 4",
    "constructor_argv": "result record 1 does not carry this run's token",  # forged before main(), without it
    "handmade_exception": "the test framework's own control exception",
    "huge_object": "the build wrote a file larger than 512 MB",
    "peek_outside": "REQUIRE( add(2, 3) == 5 ) with expansion: -1 == 5",
    "fake_inventory": "REQUIRE( add(2, 3) == 5 ) with expansion: 6 == 5",
}


def sleepers() -> list[str]:
    """Processes left by the setsid_sleeper attack (its sleep carries the mark 4242.5)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"4242.5" in (entry / "cmdline").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found


@needs_tools
class AttackTests(unittest.TestCase):
    """Hostile student files for lesson 01-passing (tests/grader/attacks/fixture/): each scores 0
    and the report names why; then again with the object checks off, to prove the run-time
    defences behind them (result channel, control exceptions, exit status, leftover processes)."""

    @classmethod
    def setUpClass(cls):
        batch = TMP / "attacks"
        shutil.copytree(ATTACKS, batch)
        absolute = batch / "include_solution_absolute"
        absolute.mkdir()
        (absolute / "passing.cpp").write_text(f'#include "{COURSE}/solutions/01-passing/passing.cpp"\n')
        (batch / "incbin_solution").mkdir()
        (batch / "incbin_solution" / "passing.cpp").write_text(
            f'#include "passing.h"\nasm(".section .rodata\\n.incbin \\"{COURSE}/solutions/01-passing/passing.cpp\\"");\n'
            'int add(int a, int b) { return a - b; }\n')
        # What the sandbox must hide: the course, the grader's build folders, the class.
        peek = batch / "peek_outside" / "passing.cpp"
        hidden = ":".join(str(path) for path in (  # contents, not the folders a mount point needs
            COURSE / "solutions" / "01-passing" / "passing.cpp", TMP / "attacks-build" / "pristine",
            TMP / "attacks-build" / "batch" / "course" / "meson.build", TMP / "attacks-grade",
            batch / "exit_zero" / "passing.cpp"))
        peek.write_text(peek.read_text().replace('#define PEEK_PATHS "/nonexistent"', f'#define PEEK_PATHS "{hidden}"'))
        common = ("--lessons", "01", "--build-dir", str(TMP / "attacks-build"))
        cls.checked = run_grader("--batch", str(batch), "--out", str(TMP / "attacks-grade"), *common)
        runtime = TMP / "attacks-runtime"
        runtime.mkdir()
        for name in RUNTIME_REASONS:
            shutil.copytree(batch / name, runtime / name)
        cls.unchecked = run_grader("--batch", str(runtime), "--out", str(TMP / "attacks-runtime-grade"),
                                   "--no-object-checks", *common)
        cls.sleeper = run_grader("--submission", str(batch / "setsid_sleeper"), "--out", str(TMP / "sleeper-grade"),
                                 "--no-object-checks", "--no-sandbox", *common)

    def report(self, out: str, student: str) -> str:
        return (TMP / out / student / "report.txt").read_text()

    def test_every_attack_scores_zero_and_says_why(self):
        self.assertEqual(self.checked.returncode, 0, self.checked.stderr)
        with (TMP / "attacks-grade" / "grades.csv").open() as table:
            rows = {row["student"]: row for row in csv.DictReader(table)}
        self.assertEqual(set(rows), set(ATTACK_REASONS))
        for attack, reason in ATTACK_REASONS.items():
            self.assertEqual((rows[attack]["01-passing"], rows[attack]["possible"]), ("0", "5"), attack)
            self.assertIn(reason, " ".join(self.report("attacks-grade", attack).split()), attack)
        self.assertIn("refused: uses exit", rows["exit_zero"]["findings"])
        self.assertIn("printed more than the 8 MB allowed", rows["huge_output"]["findings"])

    def test_the_csv_says_why_each_attack_scored_zero(self):
        with (TMP / "attacks-grade" / "grades.csv").open() as table:
            rows = {row["student"]: row for row in csv.DictReader(table)}
        self.assertTrue(rows["exit_zero"]["01-passing status"].startswith(
            "refused: passing.cpp uses exit (not on the list of what student code may use"))
        self.assertEqual(rows["exit_zero"]["problem"], "01-passing: refused")
        self.assertTrue(rows["include_solution"]["01-passing status"].startswith("does not build: "))
        self.assertEqual(rows["include_solution"]["problem"], "01-passing: does not build")
        for attack, row in rows.items():  # a 0 never goes without its reason
            self.assertRegex(row["problem"], r"^01-passing: (refused|does not build|invalid results|"
                                             r"(failed|crashed|timed out|lost) \d)", attack)
            self.assertTrue(row["01-passing status"].startswith(row["problem"][len("01-passing: "):]), attack)

    def test_a_correct_file_written_the_way_students_write_is_accepted(self):
        """attacks/correct/*: what the allowlists must let through, with full marks (plausible: the
        everyday C++; modern: C++20 threads, global containers, libgcc's and libm's arithmetic)."""
        done = run_grader("--batch", str(HERE / "attacks" / "correct"), "--out", str(TMP / "plausible-grade"),
                          "--lessons", "01", "--build-dir", str(TMP / "attacks-build"))
        self.assertEqual(done.returncode, 0, done.stderr)
        for student in ("plausible", "modern"):
            report = self.report("plausible-grade", student)
            self.assertIn("5/5", " ".join(table_row(report, "01-passing")), report)
            self.assertNotIn("refused", report)

    def test_the_grader_counts_gpus_itself(self):
        record = json.loads((TMP / "attacks-runtime-grade" / "fake_inventory" / "machine.json").read_text())
        self.assertEqual((record["gpu_count"], record["gpus"]), (0, []))  # not the 8 the student's code printed

    def test_runtime_defences_without_object_checks(self):
        self.assertEqual(self.unchecked.returncode, 0, self.unchecked.stderr)
        with (TMP / "attacks-runtime-grade" / "grades.csv").open() as table:
            rows = {row["student"]: row for row in csv.DictReader(table)}
        self.assertTrue(rows["atexit_forgery"]["01-passing status"].startswith(
            "invalid results: the results of lesson-01 cannot be trusted: result record 4"))
        for attack, reason in RUNTIME_REASONS.items():
            report = self.report("attacks-runtime-grade", attack)
            self.assertIn("0/5", " ".join(table_row(report, "01-passing")), attack)
            self.assertIn(reason, report, attack)
            self.assertIn("were NOT checked (--no-object-checks)", report)

    def test_the_sandbox_is_what_hides_the_machine(self):
        """peek_outside earns its points where it sees the course, the build folders or the class:
        inside the sandbox it does not; without the sandbox it would (so the test can fail)."""
        self.assertIn("0/5", " ".join(table_row(self.report("attacks-runtime-grade", "peek_outside"), "01-passing")))
        done = run_grader("--submission", str(TMP / "attacks" / "peek_outside"), "--out", str(TMP / "peek-unboxed"),
                          "--no-object-checks", "--no-sandbox", "--lessons", "01", "--build-dir",
                          str(TMP / "attacks-build"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("5/5", " ".join(table_row((TMP / "peek-unboxed" / "report.txt").read_text(), "01-passing")))

    def test_a_class_is_not_graded_without_the_sandbox(self):
        done = run_grader("--batch", str(TMP / "attacks-runtime"), "--student", "exit_zero", "--out",
                          str(TMP / "no-bwrap"), "--bwrap", str(TMP / "no-such-bwrap"), "--lessons", "01",
                          "--build-dir", str(TMP / "attacks-build"))
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("a class is graded only inside it", done.stderr)
        self.assertIn("--no-sandbox", done.stderr)

    def test_a_setsid_child_is_killed_and_reported(self):
        self.assertEqual(self.sleeper.returncode, 0, self.sleeper.stderr)
        report = (TMP / "sleeper-grade" / "report.txt").read_text()
        self.assertIn("Sandbox:  off (--no-sandbox)", report)
        self.assertIn("left 1 process(es) running", report)
        self.assertEqual(table_row(report, "01-passing")[1], "0/5")
        self.assertEqual(sleepers(), [])


# ============================================================================ Slurm (no cluster needed)

def slurm_plan(run: Path, tasks: list[list[str]], lessons=("01-passing",)) -> slurm_jobs.Plan:
    return slurm_jobs.Plan(run=run, course=Path("/course"), class_dir=Path("/class room"), build=run / "build",
                           lessons=list(lessons), tasks=tasks, grade_args=["--lessons", ",".join(lessons)],
                           csv=run / "grade" / "grades.csv", name="grade-class")


class SlurmScriptTests(unittest.TestCase):
    """The job scripts grade.py --slurm writes, without a cluster."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="slurm-script-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_split_tasks_and_array_spec(self):
        self.assertEqual(slurm_jobs.split_tasks(list("abcde"), 2), [["a", "b"], ["c", "d"], ["e"]])
        self.assertEqual(slurm_jobs.split_tasks(list("abc"), 1), [["a"], ["b"], ["c"]])
        self.assertEqual(slurm_jobs.array_spec([0, 1, 2, 5, 7, 8]), "0-2,5,7-8")
        self.assertEqual(slurm_jobs.array_spec([3]), "3")

    def test_resources_become_sbatch_lines(self):
        resources = slurm_jobs.Resources(partition="gpu", account="cs101", time="30:00", gpus_per_task=2,
                                         cpus_per_task=8, mem="32G", extra=["--qos=short", "#SBATCH --exclusive"])
        self.assertEqual(resources.lines(), ["#SBATCH --partition=gpu", "#SBATCH --account=cs101",
                                             "#SBATCH --time=30:00", "#SBATCH --gpus-per-task=2", "#SBATCH --cpus-per-task=8",
                                             "#SBATCH --mem=32G", "#SBATCH --qos=short", "#SBATCH --exclusive"])
        self.assertNotIn("#SBATCH --gpus-per-task=2", resources.lines(gpus=False))
        gres = slurm_jobs.Resources(gpus_per_task=2, gres="gpu:h100:4").lines()
        self.assertEqual(gres, ["#SBATCH --gres=gpu:h100:4"])  # --gres replaces --gpus-per-task

    def test_gpus_needed_is_the_largest_tag_of_the_graded_lessons(self):
        course = self.tmp / "course"
        (course / "tests").mkdir(parents=True)
        (course / "tests" / "test_01.cpp").write_text(textwrap.dedent('''\
            TEST_CASE("a", "[01-a][task:1][gpus:1][points:1]") {}
            TEST_CASE("b",
                      "[01-a][task:1][gpus:2][points:1]") {}
            TEST_CASE("hidden", "[01-a][.][gpus:8]") {}
            TEST_CASE("c", "[02-b][task:1][gpus:4][points:1]") {}
            '''))
        self.assertEqual(slurm_jobs.gpus_needed(course, ["01-a"]), 2)
        self.assertEqual(slurm_jobs.gpus_needed(course, ["01-a", "02-b"]), 4)
        self.assertEqual(slurm_jobs.gpus_needed(course, ["03-c"]), 0)

    def test_the_array_script_grades_each_tasks_students_as_a_batch(self):
        plan = slurm_plan(self.tmp / "run", [["alice", "bob o'neil"], ["carol"]])
        paths = slurm_jobs.write_run(plan, slurm_jobs.Resources(time="20", gpus_per_task=1))
        self.assertEqual([p.name for p in paths], ["prepare.sbatch", "grade.sbatch", "merge.sbatch"])
        array, prepare, merge = (plan.run / name for name in ("grade.sbatch", "prepare.sbatch", "merge.sbatch"))
        text = array.read_text()
        for line in ("#SBATCH --array=0-1", "#SBATCH --job-name=grade-class", "#SBATCH --time=20", "#SBATCH --ntasks=1",
                     "#SBATCH --gpus-per-task=1", f"#SBATCH --output={plan.run}/slurm/%A_%a.out"):
            self.assertIn(line, text.splitlines())
        self.assertNotIn("--gpus-per-task", prepare.read_text() + merge.read_text())  # building and merging need none
        self.assertNotIn("--time", prepare.read_text())
        self.assertIn("--build-only", prepare.read_text())
        self.assertIn(f"--merge {plan.run}", merge.read_text())
        self.assertEqual(slurm_jobs.Plan.load(plan.run), plan)
        for script in paths:
            self.assertEqual(subprocess.run(["bash", "-n", str(script)]).returncode, 0, script.read_text())
        # Run task 0 with a stand-in python3 that records its arguments and writes a CSV.
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "python3").write_text(textwrap.dedent('''\
            #!/bin/bash
            printf '%s\\n' "$@" >"$RECORD"
            out=; while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
            printf 'student,01-passing,total,possible,ungraded,findings,problem\\r\\n' >"$out/grades.csv"
            exit 3
            '''))
        (bin_dir / "python3").chmod(0o755)
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SLURM_ARRAY_TASK_ID="0",
                   SLURM_ARRAY_JOB_ID="41", TMPDIR=str(self.tmp), RECORD=str(self.tmp / "argv"))
        done = subprocess.run(["bash", str(array)], env=env, capture_output=True, text=True)
        self.assertEqual(done.returncode, 3, done.stderr)  # grade.py's exit status is the task's
        argv = (self.tmp / "argv").read_text().splitlines()
        self.assertEqual(argv[argv.index("--batch") + 1], "/class room")
        self.assertEqual([argv[i + 1] for i, a in enumerate(argv) if a == "--student"], ["alice", "bob o'neil"])
        self.assertEqual(argv[argv.index("--out") + 1], str(plan.task_folder(0)))
        self.assertEqual(argv[argv.index("--prepared-build") + 1], str(plan.build))
        self.assertEqual(argv[argv.index("--build-dir") + 1], str(self.tmp / "course-grade-41-0"))
        self.assertFalse((self.tmp / "course-grade-41-0").exists())  # the node's copy is removed
        started = json.loads((plan.task_folder(0) / "started.json").read_text())
        finished = json.loads((plan.task_folder(0) / "done.json").read_text())
        self.assertEqual((started["job"], finished["job"], finished["exit_status"]), ("41_0", "41_0", 3))
        env["SLURM_ARRAY_TASK_ID"] = "7"
        self.assertEqual(subprocess.run(["bash", str(array)], env=env, capture_output=True).returncode, 2)

    def test_a_cluster_without_gpu_resources_is_named_before_sbatch(self):
        def problem(sinfo, **resources):
            return slurm_jobs.gpu_resource_problem(slurm_jobs.Resources(**resources), ask=lambda argv: sinfo)
        none = problem("course* (null)\n", gpus_per_task=2)
        for words in ("--gpus-per-task=2", "partition course offer no 'gpu' resource", "course: (null)",
                      "Invalid generic resource (gres) specification", "--gpus-per-task 0", "--gres SPEC"):
            self.assertIn(words, none)
        self.assertEqual(problem("gpu* gpu:h100:4(S:0-1)\n", gpus_per_task=2), "")
        self.assertEqual(problem("course* (null)\n", gpus_per_task=None), "")  # asks for no GPU
        self.assertEqual(problem("", gpus_per_task=2), "")  # no sinfo: sbatch will tell
        elsewhere = problem("cpu* (null)\ngpu gpu:a100:8\n", gpus_per_task=1)
        self.assertIn("Partitions with GPUs: gpu (gpu:a100:8)", elsewhere)
        self.assertEqual(problem("cpu* (null)\ngpu gpu:a100:8\n", gpus_per_task=1, partition="gpu"), "")
        self.assertIn("--gres=gpu:h100:4", problem("course* (null)\n", gres="gpu:h100:4"))
        self.assertEqual(problem("course* gpu:4,shard:8\n", gres="shard:2"), "")

    def test_sbatch_refusing_a_gres_gives_the_advice(self):
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: Invalid generic resource (gres) "
                                        "specification' >&2\nexit 1\n")
        (bin_dir / "sbatch").chmod(0o755)
        saved = os.environ["PATH"]
        os.environ["PATH"] = f"{bin_dir}:{saved}"
        try:
            with self.assertRaises(slurm_jobs.SlurmError) as refused:
                slurm_jobs.sbatch(["grade.sbatch"])
        finally:
            os.environ["PATH"] = saved
        self.assertIn("Invalid generic resource", str(refused.exception))
        self.assertIn(slurm_jobs.GRES_ADVICE, str(refused.exception))

    def test_submit_chains_build_array_and_merge(self):
        plan = slurm_plan(self.tmp / "run", [["alice"], ["bob"], ["carol"]])
        slurm_jobs.write_run(plan, slurm_jobs.Resources())
        calls = []

        def fake_sbatch(argv):
            calls.append(argv)
            return str(100 + len(calls))

        record = slurm_jobs.submit(plan, run=fake_sbatch)
        self.assertEqual(calls, [[str(plan.run / "prepare.sbatch")],
                                 ["--dependency=afterok:101", "--kill-on-invalid-dep=yes", "--array=0-2",
                                  str(plan.run / "grade.sbatch")],
                                 ["--dependency=afterany:102", str(plan.run / "merge.sbatch")]])
        self.assertEqual((record["prepare"], record["array"], record["merge"]), ("101", "102", "103"))
        plan.build.mkdir(parents=True)
        (plan.build / "prepared.json").write_text('{"ok": true}')
        calls.clear()
        slurm_jobs.submit(plan, [0, 2], run=fake_sbatch)  # --only-missing: the build is done
        self.assertEqual(calls[0], ["--array=0,2", str(plan.run / "grade.sbatch")])
        self.assertEqual([r["tasks"] for r in slurm_jobs.load_jobs(plan.run)], ["0-2", "0,2"])


SLURM_CSV_HEADER = "student,01-passing,01-passing status,total,possible,ungraded,graded here,findings,problem\r\n"


class SlurmMergeTests(unittest.TestCase):
    """grade.py --merge on a run folder whose tasks ended in every way, without a cluster."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="slurm-merge-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.plan = slurm_plan(self.tmp / "run", [["alice", "bob"], ["carol"], ["dave"], ["erin"], ["frank"]])
        slurm_jobs.write_run(self.plan, slurm_jobs.Resources())
        (self.plan.run / "jobs.json").write_text(json.dumps([{"tasks": "0-4", "array": "12"}]))
        header = SLURM_CSV_HEADER
        self.task(0, started=True, done=0, csv=header + "alice,5,passed,5,5,0,all 5 points,,\r\n"
                  "bob,0,crashed 1 of 1 case: x,0,5,0,all 5 points,\"01-passing: x, y\",01-passing: crashed 1 of 1 case\r\n",
                  students=("alice", "bob"))
        self.task(1, started=True)  # killed: no done.json
        (self.plan.run / "slurm" / "12_1.out").write_text("slurmstepd: *** JOB 14 ON vm CANCELLED AT 2026-11-25 "
                                                          "DUE TO TIME LIMIT ***\n")
        self.task(2, started=True, done=1, csv=header)  # grade.py failed before any row
        # task 3 never ran; task 4 is still queued
        self.states = {"12_3": "NOT_LISTED", "12_4": "PENDING"}

    def task(self, number, started=False, done=None, csv=None, students=()):
        folder = self.plan.task_folder(number)
        folder.mkdir(parents=True)
        if started:
            (folder / "started.json").write_text(json.dumps({"job": f"12_{number}", "task": number}))
        if done is not None:
            (folder / "done.json").write_text(json.dumps({"job": f"12_{number}", "exit_status": done}))
        if csv is not None:
            (folder / "grades.csv").write_bytes(csv.encode())
            (folder / "machine.json").write_text(json.dumps({"hostname": "node7", "gpu_count": 2}))
        for student in students:
            (folder / student / "logs").mkdir(parents=True)
            (folder / student / "report.txt").write_text(f"{student}\n")

    def merge(self):
        return slurm_jobs.merge(self.plan, slurm_state=lambda job: self.states.get(job, ""))

    def test_every_student_has_a_row_and_the_missing_are_named(self):
        states, missing = self.merge()
        with self.plan.csv.open(newline="") as table:
            rows = list(csv.reader(table))
        self.assertEqual([row[0] for row in rows], ["student", "alice", "bob", "carol", "dave", "erin", "frank"])
        self.assertEqual(rows[0], report_csv.header(["01-passing"]))
        self.assertEqual(rows[1], ["alice", "5", "passed", "5", "5", "0", "all 5 points", "", ""])
        self.assertEqual(rows[2][7], "01-passing: x, y")
        problems = {row[0]: row[-1] for row in rows[3:]}
        self.assertEqual(problems["carol"], "not graded: Slurm job 12_1 (task 1) timed out (the task's --time ran out)")
        self.assertIn("Slurm job 12_2 (task 2) failed (exit status 1, results incomplete", problems["dave"])
        self.assertEqual(problems["erin"], "not graded: Slurm job 12_3 (task 3) never ran (cancelled before it started)")
        self.assertEqual(problems["frank"], "not graded: Slurm job 12_4 (task 4) not finished yet (Slurm: PENDING)")
        self.assertTrue(all(row[1:-1] == [""] * 7 for row in rows[3:]))
        self.assertEqual([line.split(":")[0] for line in missing], ["carol", "dave", "erin", "frank"])
        self.assertIn("log " + str(self.plan.run / "slurm" / "12_1.out"), missing[0])
        self.assertEqual((self.plan.run / "grade" / "missing.txt").read_text(), "".join(m + "\n" for m in missing))
        self.assertEqual([s.task for s in states if s.waiting], [4])  # --only-missing leaves it alone
        self.assertEqual((self.plan.run / "grade" / "alice" / "report.txt").read_text(), "alice\n")
        self.assertFalse((self.plan.run / "grade" / "carol").exists())
        self.assertIn("0,12_0,done (exit status 0),node7,2", (self.plan.run / "grade" / "tasks.csv").read_text())

    def test_merging_twice_writes_the_same_files(self):
        def snapshot():
            return {str(p.relative_to(self.plan.run)): p.read_bytes()
                    for p in sorted((self.plan.run / "grade").rglob("*")) if p.is_file()}
        self.merge()
        first = snapshot()
        self.merge()
        self.assertEqual(snapshot(), first)

    def test_a_task_graded_again_replaces_its_missing_rows(self):
        self.merge()
        shutil.rmtree(self.plan.task_folder(1))
        self.task(1, started=True, done=0, csv=SLURM_CSV_HEADER + "carol,5,passed,5,5,0,all 5 points,,\r\n",
                  students=("carol",))
        _, missing = self.merge()
        self.assertEqual([line.split(":")[0] for line in missing], ["dave", "erin", "frank"])
        self.assertIn(b"\r\ncarol,5,passed,5,5,0,all 5 points,,\r\n", self.plan.csv.read_bytes())
        self.assertTrue((self.plan.run / "grade" / "carol" / "report.txt").is_file())

    def test_merge_of_a_folder_that_is_no_run(self):
        done = subprocess.run([sys.executable, str(GRADE), "--merge", str(self.tmp)], capture_output=True, text=True)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("no slurm.json", done.stderr)


class SlurmSubmitTests(unittest.TestCase):
    """grade.py --slurm --submit on a cluster whose nodes offer no GPU (a stand-in sinfo and sbatch)."""

    def test_submit_stops_before_sbatch_and_says_what_to_pass(self):
        tmp = Path(tempfile.mkdtemp(prefix="slurm-submit-", dir=TMP))
        make_class(tmp / "class")
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "sinfo").write_text("#!/bin/sh\necho 'course* (null)'\n")
        (bin_dir / "sbatch").write_text(f"#!/bin/sh\necho called >>{tmp / 'sbatch-calls'}\necho 1\n")
        for tool in ("sinfo", "sbatch"):
            (bin_dir / tool).chmod(0o755)
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
        common = ("--batch", str(tmp / "class"), "--slurm", "--out", str(tmp / "run"), "--lessons", "01,04")
        done = run_grader(*common, "--submit", env=env)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("asks for --gpus-per-task=2, but the nodes of partition course offer no 'gpu' resource",
                      done.stderr)
        self.assertIn("--gpus-per-task 0", done.stderr)
        self.assertIn("Nothing was submitted", done.stderr)
        self.assertFalse((tmp / "sbatch-calls").exists())
        self.assertTrue((tmp / "run" / "grade.sbatch").is_file())  # written, for a submission by hand
        warned = run_grader(*common, env=env)  # without --submit: a warning
        self.assertEqual(warned.returncode, 0, warned.stderr)
        self.assertIn("warning: the array asks for --gpus-per-task=2", warned.stderr)
        accepted = run_grader(*common, "--gpus-per-task", "0", "--submit", env=env)
        self.assertEqual(accepted.returncode, 0, accepted.stderr)
        self.assertEqual((tmp / "sbatch-calls").read_text().count("called"), 3)  # build, array, merge


@needs_tools
class SlurmRunWithoutClusterTests(unittest.TestCase):
    """The fixture's class through --slurm, its job scripts run by hand as Slurm would run them
    (one task left out, then run): the merged CSV is the local batch's, byte for byte."""

    @classmethod
    def setUpClass(cls):
        cls.batch = TMP / "slurm-class"
        make_class(cls.batch)
        common = ("--batch", str(cls.batch), "--build-dir", str(TMP / "slurm-build"), "--lessons", "01,02")
        cls.local = run_grader(*common, "--out", str(TMP / "slurm-local"))
        cls.run_dir = TMP / "slurm-run"
        cls.written = run_grader(*common, "--slurm", "--out", str(cls.run_dir), "--gpus-per-task", "0")

    def script(self, name, task=None):
        env = dict(os.environ, COURSE_GRADER_TEST_GPU_COUNT="0", TMPDIR=str(TMP))
        if task is not None:
            env.update(SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_JOB_ID="9")
        return subprocess.run(["bash", str(self.run_dir / name)], env=env, capture_output=True, text=True, timeout=600)

    def merge(self):
        return subprocess.run([sys.executable, str(GRADE), "--merge", str(self.run_dir)], capture_output=True, text=True,
                              env=dict(os.environ, PATH="/nonexistent"))  # no sacct, no scontrol

    def test_scripts_run_by_hand_give_the_local_csv(self):
        self.assertEqual(self.local.returncode, 0, self.local.stderr)
        self.assertEqual(self.written.returncode, 0, self.written.stderr)
        self.assertIn("2 submissions in 2 array tasks, 0 GPU(s) each", self.written.stdout)
        self.assertNotIn("--gpus-per-task", (self.run_dir / "grade.sbatch").read_text())
        done = self.script("prepare.sbatch")
        self.assertEqual(done.returncode, 0, done.stderr)
        done = self.script("grade.sbatch", 0)
        self.assertEqual(done.returncode, 0, done.stderr)
        merged = self.merge()
        self.assertEqual(merged.returncode, slurm_jobs.EXIT_MISSING, merged.stderr)
        self.assertIn("bob: Slurm job unknown (task 1): never ran", merged.stdout)
        done = self.script("grade.sbatch", 1)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("Compiling", (self.run_dir / "tasks" / "0001" / "bob" / "logs" / "01-passing.log").read_text())
        self.assertNotIn("fixture_support", (self.run_dir / "tasks" / "0001" / "bob" / "logs" / "01-passing.log").read_text())
        merged = self.merge()
        self.assertEqual(merged.returncode, 0, merged.stdout + merged.stderr)
        self.assertEqual((self.run_dir / "grade" / "grades.csv").read_bytes(),
                         (TMP / "slurm-local" / "grades.csv").read_bytes())
        self.assertEqual((self.run_dir / "grade" / "missing.txt").read_text(), "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
