#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Tests of the grader (grade.py, catch2_runner.py, ...) and of tests/course/expect.py.

They grade a small fake course, tests/grader/fixture/ (C++ and Catch2 only, no CUDA), whose
lessons pass, fail an assertion, throw NOT_IMPLEMENTED, skip for missing GPUs, crash in one
of two cases, hang, trip the watchdog, and do not compile. Needs Meson, Ninja, a C++
compiler and Catch2 v3 (pkg-config catch2); no GPU.

    python3 tests/grader/test_grader.py        (about two minutes on two cores)
"""

from __future__ import annotations

import csv
import io
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
import text_safety  # noqa: E402
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


def grade_default() -> None:
    """The grading of the fixture's working tree that DefaultGradeTests and others read."""
    done = run_grader("--build-dir", str(shared_build()), "--profile")
    DEFAULT.update(rc=done.returncode, stdout=done.stdout, stderr=done.stderr)
    if done.returncode == 0:
        DEFAULT.update(read_outputs(shared_build() / "grade"))


WHOLE_MODULE = False  # set by load_tests: every class runs, so setUpModule prepares them together
PREPARED: dict = {}  # a class (or grade_default) -> None once prepared, or the exception it raised


def load_tests(loader, tests, pattern):
    """unittest's hook, called when the whole module is loaded (not for one class or test)."""
    global WHOLE_MODULE
    WHOLE_MODULE = True
    return tests


def prepare(step) -> None:
    """Runs a slow preparation once (a class's prepare(), or grade_default); a failure is kept and
    raised again where the class is set up, so only that class's tests error."""
    if step not in PREPARED:
        try:
            (step.prepare if isinstance(step, type) else step)()
            PREPARED[step] = None
        except Exception as error:  # noqa: BLE001  raised again by the class that needs it
            PREPARED[step] = error
    if PREPARED[step] is not None:
        raise PREPARED[step]


def prepare_in_turn(steps) -> None:
    for step in steps:
        try:
            prepare(step)
        except Exception:  # noqa: BLE001  kept in PREPARED
            pass


def setUpModule():
    global TMP, COURSE
    TMP = Path(tempfile.mkdtemp(prefix="grader-test-"))
    COURSE = TMP / "fixture"
    shutil.copytree(FIXTURE, COURSE)
    for source in CHANNEL_SOURCES:
        shutil.copy(source, COURSE / "common")
    if TOOLS_MISSING:
        return
    if not WHOLE_MODULE:
        prepare(grade_default)  # one class or test: it prepares what it needs itself
        return
    # The whole module: its slow gradings and compilations, each a chain of steps that share a build
    # folder, run beside each other (a grading spends most of its time on one core: one student's
    # file compiled, checked and run after another). Every one ends here, before any test: tests that
    # run programs in this process (RunCasesTests, ProbeTests, ...) stop every process it started.
    import concurrent.futures
    chains = [[grade_default, BatchTests, ClassTests, SlurmRunWithoutClusterTests], [AttackTests],
              [AllowlistObjectTests]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(chains)) as pool:
        for chain in [pool.submit(prepare_in_turn, chain) for chain in chains]:
            chain.result()


def tearDownModule():
    if TMP is not None:  # never the current folder, when setUpModule did not run
        shutil.rmtree(TMP, ignore_errors=True)


def needs_tools(cls):
    return unittest.skipIf(TOOLS_MISSING, f"missing: {', '.join(TOOLS_MISSING)}")(cls)


def shared_build() -> Path:
    """The --build-dir of every grading of the fixture course here, as an instructor keeps one from
    run to run: each way of grading builds in its own subfolder (working-tree/, submission/, batch/),
    and the course's own starters (pristine/, batch/build.clean) are built by the first run that needs
    them and only brought up to date by the later ones, not built again for each test class."""
    return TMP / "default"


def program(number: str) -> Path:
    return shared_build() / "working-tree" / "build" / "tests" / f"lesson-{number}"


# ============================================================================ unit tests

def outcome(code, stderr="", timed_out=False, channel=b"", token="t0k", **kwargs) -> Outcome:
    return Outcome(exit_code=code, timed_out=timed_out, stdout="", stderr=stderr, seconds=0.1, channel=channel,
                   token=token, **kwargs)


def record_line(case="a case", status="passed", message="", seq=1, token="t0k") -> bytes:
    """A case's result record, as the course's listener writes it."""
    return (json.dumps({"token": token, "seq": seq, "event": "result", "case": case, "status": status,
                        "message": message}) + "\n").encode()


def begin_line(case="a case", seq=1, token="t0k") -> bytes:
    return (json.dumps({"token": token, "seq": seq, "event": "begin", "case": case}) + "\n").encode()


def end_line(cases: int, exit_code: int, seq: int, token="t0k") -> bytes:
    return (json.dumps({"token": token, "seq": seq, "event": "end", "cases": cases, "exit": exit_code})
            + "\n").encode()


def transcript(*results: tuple[str, str], end: int | None = None) -> bytes:
    """The records of a run of `results` ((case, status), ...), closed with exit status `end` if given."""
    data, seq = b"", 0
    for case, status in results:
        data += begin_line(case, seq + 1) + record_line(case, status, seq=seq + 2)
        seq += 2
    return data + (end_line(len(results), end, seq + 1) if end is not None else b"")


class RunnerUnitTests(unittest.TestCase):
    case = runner.TestCase(name="a case", tags=["01-x", "task:1", "points:2"])

    def classify(self, status=None, message="", code=0, stderr="", closed=True, **kwargs):
        record = None if status is None else {"status": status, "message": message}
        return runner.classify(self.case, outcome(code, stderr, **kwargs), record, 5, closed)

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

    def test_read_transcript(self):
        good = transcript(("a", "passed"), ("b", "failed"), end=1)
        read = runner.read_transcript(outcome(1, channel=good), ["a", "b", "c"])
        self.assertEqual((read.records["a"]["status"], read.records["b"]["status"]), ("passed", "failed"))
        self.assertEqual((read.began, read.running, read.end["exit"]), (["a", "b"], None, 1))
        stopped = runner.read_transcript(outcome(-11, channel=transcript(("a", "passed")) + begin_line("b", 3)),
                                         ["a", "b"])
        self.assertEqual((stopped.running, stopped.end), ("b", None))
        bad = {
            "token": begin_line("a", token="forged"),
            "numbered": begin_line("a", seq=2),
            "was not run": begin_line("z"),
            "two results": transcript(("a", "passed")) + record_line("a", seq=3),
            "not one the course's listener writes": b'{"case": "a"}\n',
            "middle of a record": begin_line("a")[:-5],
            "which had not begun": begin_line("a") + record_line("b", seq=2),
            "began twice": transcript(("a", "passed")) + begin_line("a", 3),
            "began while the case 'a' had no result": begin_line("a") + begin_line("b", 2),
            "after the run was closed": transcript(("a", "passed"), end=0) + begin_line("b", 4),
            "closed while the case 'b' had no result": transcript(("a", "passed")) + begin_line("b", 3) + end_line(1, 0, 4),
            "closed with 2 results, but 1 came": transcript(("a", "passed")) + end_line(2, 0, 3),
            "result record 3 is not one": transcript(("a", "passed")) + end_line(True, 0, 3),
        }
        for why, data in bad.items():
            with self.assertRaises(runner.ChannelError, msg=why) as caught:
                runner.read_transcript(outcome(0, channel=data), ["a", "b"])
            self.assertIn(why, str(caught.exception))
        with self.assertRaises(runner.ChannelError):
            runner.read_transcript(outcome(0, channel=b"", channel_exceeded=True), ["a"])

    def test_a_run_counts_only_from_a_clean_end(self):
        def unclean(code, data, cases=2, **kwargs):
            return runner.unclean_end(outcome(code, **kwargs), runner.read_transcript(outcome(code, channel=data),
                                                                                   ["a", "b"]), cases)
        both = transcript(("a", "passed"), ("b", "failed"), end=1)
        self.assertEqual(unclean(1, both), "")
        self.assertEqual(unclean(-9, both), "SIGKILL (signal 9)")  # the records say nothing about the end
        self.assertEqual(unclean(1, transcript(("a", "passed"), ("b", "failed"))),
                         "exit code 1 without closing its run")
        self.assertEqual(unclean(0, both), "exit code 0 after closing its run with exit code 1")
        self.assertEqual(unclean(0, transcript(("a", "passed"), ("b", "failed"), end=0)),
                         "exit code 0, not the status its results imply")
        self.assertEqual(unclean(0, transcript(("a", "passed"), end=0)), "exit code 0 with results for 1 of 2 cases")
        self.assertEqual(unclean(70, both), "exit code 70")
        self.assertEqual(unclean(1, both, left_behind=1), "left 1 process(es) running")
        self.assertEqual(unclean(1, both, timed_out=True), "timed out")
        # a lone run's passed record counts only when main() closed the run
        status, message = self.classify("passed", code=0, closed=False)
        self.assertEqual(status, runner.CRASHED)
        self.assertIn("other than as its test main closed the run", message)
        self.assertEqual(self.classify("skipped", "x", code=77, closed=False)[0], runner.CRASHED)

    def test_skips_judged_by_the_probe(self):
        two = runner.TestCase(name="two", tags=[], gpus=2)
        skipped = runner.judge_skip(runner.CaseResult(two, runner.FAILED, "boom"), gpus=1)
        self.assertEqual((skipped.status, skipped.message), (runner.SKIPPED, "needs 2 GPUs, found 1"))
        own = runner.judge_skip(runner.CaseResult(two, runner.SKIPPED, "needs 2 GPUs, found 0"), gpus=2)
        self.assertEqual(own.status, runner.FAILED)
        self.assertIn("only a missing GPU makes a case ungraded", own.message)
        trusted = runner.judge_skip(runner.CaseResult(two, runner.SKIPPED, "needs 2 GPUs"), gpus=None)
        self.assertEqual(trusted.status, runner.SKIPPED)  # the course's own suite (expect.py)


class ChannelDataTests(unittest.TestCase):
    """Whatever a program writes into the result channel is a verdict on its lesson ("invalid
    results"), never an exception of the grader's own (issue 43: a nested JSON line was an
    internal error, the student had no grade, the batch exited 1)."""

    def test_malformed_oversized_or_nested_records_are_invalid_results(self):
        token = b'{"token": "t0k", "seq": 1, "case": "a", "status": "passed", "message": '
        bad = {
            "nested as a whole line": b"[" * 200000 + b"\n",
            "nested in the message": token + b"[" * 100000 + b"]" * 100000 + b"}\n",
            "a nested object as the message": token + b'{"a": ' * 50000 + b"1" + b"}" * 50000 + b"}\n",
            "longer than a record can be": record_line("a", message="x" * (runner.RECORD_BYTES + 1)),
            "a sequence number that is a truth value": record_line("a", seq=True),
            "a sequence number that is a fraction": token.replace(b'"seq": 1', b'"seq": 1.0') + b'""}\n',
            "a number too long to convert": token.replace(b'"seq": 1', b'"seq": ' + b"9" * 5000) + b'""}\n',
            "a case name that is not a text": record_line(["a"]),
            "a token that is not a text": token.replace(b'"t0k"', b'["t0k"]') + b'""}\n',
            "not UTF-8": record_line("a")[:-3] + b'\xff"}\n',
        }
        for why, data in bad.items():
            with self.subTest(why):
                with self.assertRaises(runner.ChannelError) as caught:
                    runner.read_transcript(outcome(0, channel=data), ["a"])
                self.assertIn("is not one the course's listener writes", str(caught.exception))

    def test_a_record_as_the_listener_writes_it_is_read(self):
        longest = record_line("a", "failed", "\x1b" * 2003, seq=2)  # the listener's longest message, every byte escaped
        self.assertLess(len(longest), runner.RECORD_BYTES)
        channel = begin_line("a") + longest + end_line(1, 1, 3)
        self.assertEqual(runner.read_transcript(outcome(1, channel=channel), ["a"]).records["a"]["message"], "\x1b" * 2003)


class TextSafetyTests(unittest.TestCase):
    """What a graded program printed reaches the terminal, report.txt, results.json, junit.xml,
    the logs and the CSV with its control characters escaped; no CSV cell starts a formula."""

    HOSTILE = "REQUIRE( x )\x1b[1A\x1b[2K\rTOTAL 5/5 points\u202e\ud800\x07\x9b"

    def hostile_grade(self) -> scoring.Grade:
        failed = lesson_grade("01", ("failed", 2, self.HOSTILE, 0), ("passed", 1, "", 0))
        failed.results[0].stderr = "stderr \x1b]0;title\x07 line\n" * 3
        failed.findings.append("result channel: \x1b[31mforged")
        failed.log = "build \x1b[2J log\n"
        grade = a_grade(failed)
        grade.student = "=HYPERLINK(\"http://x\")\x1b"
        return grade

    def assert_printable(self, text: str, where: str) -> None:
        unsafe = re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\ud800-\udfff]", text)
        self.assertEqual(unsafe, [], f"{where} holds control characters")

    def test_printable_escapes_and_is_idempotent(self):
        import text_safety
        self.assertEqual(text_safety.printable("a\x1b[2Kb\r\n\tc\u202e\ud800"), "a\\x1b[2Kb\\r\n\tc\\u202e\\ud800")
        self.assertEqual(text_safety.printable("a\nb\tc", keep=""), "a\\nb\\tc")
        once = text_safety.printable(self.HOSTILE)
        self.assertEqual(text_safety.printable(once), once)
        for cell, safe in [("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
                           ("\t=1", "\\t=1"), ("\r=1", "\\r=1"), ("passed", "passed"), (5, 5), ("", "")]:
            self.assertEqual(text_safety.csv_cell(cell), safe, repr(cell))
            self.assertEqual(text_safety.csv_cell(text_safety.csv_cell(cell)), safe, repr(cell))

    def test_every_report_escapes_what_a_program_printed(self):
        import report_gradescope
        import report_junit
        hostile = self.hostile_grade()
        self.assert_printable(report_text.render(hostile), "report.txt")
        self.assertIn("\\x1b[1A", report_text.render(hostile))
        document = report_gradescope.results_json(hostile, 1.0)
        self.assert_printable(json.dumps(document, ensure_ascii=False), "results.json")
        xml_text = report_junit.junit_xml(hostile)
        self.assert_printable(xml_text, "junit.xml")
        ET.fromstring(xml_text.encode())
        with tempfile.TemporaryDirectory() as folder:
            hostile.machine = {"gpus": 0}
            grade.write_outputs(hostile, Path(folder), 1.0)  # a lone surrogate cannot be written as UTF-8 raw
            for path in Path(folder).rglob("*"):
                if path.is_file():
                    self.assert_printable(path.read_text(), str(path.name))
            lessons = [lesson.lesson for lesson in hostile.lessons]
            report_csv.write_csv(Path(folder) / "grades.csv", lessons, [(hostile.student, hostile, "")])
            text = (Path(folder) / "grades.csv").read_text()
            self.assert_printable(text.replace("\r\n", "\n"), "grades.csv")
            for row in csv.reader(io.StringIO(text)):
                for cell in row:
                    self.assertFalse(cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell)
            self.assertTrue(list(csv.reader(io.StringIO(text)))[1][0].startswith("'=HYPERLINK"))


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
# some (a comma-separated list, as run_cases writes it); "fail" fails, "crash" dies of SIGSEGV,
# "hang" sleeps, "hang-after-a" sleeps only when case a ran before it in the same process;
# "hang-with-helper" hangs after starting a process in a session of its own (as a GPU process
# killed in a hung NCCL call outlives the kill of its group for a while). A hang under
# COURSE_WATCHDOG_CAP_MS ends as the course's watchdog ends one: its line on stderr and exit
# code 70, after that many ms. The forgers, which implement nothing (their case fails):
# "forge-kill" writes a passed result for its own case, then ends with SIGKILL; "forge-later"
# writes passed results for its case and every later case of the lesson (each begun), the run's
# closing record too, then ends with SIGKILL; "forge-abort" does that and ends with SIGABRT;
# "forge-return" does that and returns (its case then fails, as the listener says);
# "forge-twice" writes a passed result for its own case and returns.
FAKE_PROGRAM = """#!/usr/bin/env python3
import json, os, signal, subprocess, sys, time
setup = os.fdopen(int(os.environ["COURSE_RESULT_SETUP_FD"]), "rb").read().decode().split("\\n")
channel = os.fdopen(int(os.environ["COURSE_RESULT_FD"]), "w")
chosen = [a for a in sys.argv[1:] if not a.startswith("-") and a != "console"]
ran, seq, results, failed = [], 0, 0, False
def write(**record):
    global seq
    seq += 1
    channel.write(json.dumps({"token": setup[0], "seq": seq, **record}) + "\\n")
    channel.flush()
cases = [entry.split(":") for entry in os.environ["FAKE_CASES"].split(",")]
every_name = [name for name, _ in cases]
cases = [(name, how) for name, how in cases if not chosen or name in chosen[0].split(",")]
for index, (name, how) in enumerate(cases):
    write(event="begin", case=name)
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
    if how == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how in ("forge-kill", "forge-twice"):
        write(event="result", case=name, status="passed", message="")
        if how == "forge-kill":
            os.kill(os.getpid(), signal.SIGKILL)
    if how in ("forge-later", "forge-abort", "forge-return"):
        write(event="result", case=name, status="passed", message="")
        for later in every_name[every_name.index(name) + 1:]:  # the lesson's, as a forger knows them
            write(event="begin", case=later)
            write(event="result", case=later, status="passed", message="")
        write(event="end", cases=len(every_name), exit=0)
        if how != "forge-return":
            os.kill(os.getpid(), signal.SIGKILL if how == "forge-later" else signal.SIGABRT)
    ran.append(name)
    status = "failed" if how == "fail" or how.startswith("forge") else "passed"
    failed = failed or status == "failed"
    results += 1
    write(event="result", case=name, status=status, message="NOT_IMPLEMENTED: task 1" if status == "failed" else "")
write(event="end", cases=results, exit=int(failed))
sys.exit(int(failed))
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
        self.findings = {result.case.name: result.findings for result in results}
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
        # a's result came from a run that did not end cleanly: a runs again, last (alone, under its cap,
        # once the lesson is known to deadlock)
        self.assertEqual(runs, [("shared run", 4, "stalled"), ("shared run", 3, "stalled"), ("alone", "c", "timed_out"),
                                ("alone", "d", "passed"), ("alone", "a", "passed")])
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
                                ("alone", "d", "timed_out"), ("alone", "a", "passed")])

    def test_the_finding_of_a_shared_run_that_hung_names_the_case_that_hung(self):
        self.run_fake("a:pass,b:hang,c:pass")
        shared = {name: [f for f in found if "the run of all cases together" in f] for name, found in self.findings.items()}
        self.assertEqual(shared["a"], [])  # the first case of the run did not hang
        self.assertTrue(shared["b"], self.findings)

    def test_processes_of_a_stopped_run_are_not_left_behind_and_its_results_are_run_again(self):
        statuses, timings = self.run_fake("a:pass,b:hang-with-helper,c:pass")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.TIMED_OUT, "c": runner.PASSED})
        # the stalled run's result for a does not count; b gets its own process and hangs there:
        # the lesson deadlocks, and c runs alone, then a (the helper was the stopped run's own)
        self.assertEqual(self.runs_of(timings), [("shared run", 3, "stalled"), ("shared run", 2, "stalled"),
                                                 ("alone", "c", "passed"), ("alone", "a", "passed")])

    def test_a_case_that_hangs_only_after_another_gets_a_fresh_process(self):
        statuses, timings = self.run_fake("a:pass,b:hang-after-a,c:pass")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.PASSED, "c": runner.PASSED})
        runs = [(t["step"], t.get("cases"), t.get("ended")) for t in timings if t["step"] != "case"]
        self.assertEqual(runs, [("shared run", 3, "stalled"), ("shared run", 2, "exit code 0"),
                                ("shared run", 1, "exit code 0")])

    def test_a_crash_costs_its_own_case_and_one_run_of_the_cases_before_it(self):
        statuses, timings = self.run_fake("a:pass,b:crash,c:pass,d:fail")
        self.assertEqual(statuses, {"a": runner.PASSED, "b": runner.CRASHED, "c": runner.PASSED, "d": runner.FAILED})
        # the first run's result for a does not count: b crashes first in a fresh process (its own
        # run), c and d run on together, and a runs again with the other cases a run claimed
        self.assertEqual(self.runs_of(timings), [("shared run", 4, "SIGSEGV (signal 11)"),
                                                 ("shared run", 3, "SIGSEGV (signal 11)"),
                                                 ("shared run", 2, "exit code 1"), ("shared run", 1, "exit code 0")])

    def test_a_result_forged_before_a_signal_counts_for_nothing(self):
        """The round-3 attack: case b writes a passed result for itself, then ends the process with
        a signal no test framework catches. Before, the run 'stopped at' c kept b's result."""
        statuses, timings = self.run_fake("a:fail,b:forge-kill,c:fail")
        self.assertEqual(statuses, {"a": runner.FAILED, "b": runner.CRASHED, "c": runner.FAILED})
        self.assertTrue(self.messages["b"].startswith("SIGKILL (signal 9)"), self.messages["b"])
        self.assertIn("the case reported 'passed', then the program ended (SIGKILL (signal 9)) without closing its "
                      "run: not counted", " ".join(self.findings["b"]))
        self.assertEqual(self.runs_of(timings), [("shared run", 3, "SIGKILL (signal 9)"), ("shared run", 1, "exit code 1"),
                                                 ("shared run", 2, "SIGKILL (signal 9)"), ("alone", "a", "failed"),
                                                 ("alone", "b", "crashed")])

    def test_forged_records_for_other_cases_or_twice_for_one_are_tampering(self):
        for how, why in (("forge-later", "a result for a case that was not run: 'c'"),
                         ("forge-abort", "a result for a case that was not run: 'c'"),
                         ("forge-return", "result record 8 comes after the run was closed"),
                         ("forge-twice", "two results for the case 'b'")):
            with self.assertRaises(runner.ChannelError, msg=how) as caught:
                self.run_fake(f"a:fail,b:{how},c:fail")
            self.assertIn(why, str(caught.exception), how)

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
            "failed 1 of 2 cases: \"case 1\": REQUIRE( f() == 2 ); with expansion: 1 == 2":
                lesson_grade("01", ("passed", 2, "", 0), ("failed", 3, "REQUIRE( f() == 2 )\nwith expansion: 1 == 2", 0)),
            "crashed 1 of 1 case: \"case 0\": SIGSEGV (signal 11)": lesson_grade("01", ("crashed", 2, "SIGSEGV (signal 11)", 0)),
            "timed out 1 of 2 cases: \"case 0\": no result after 3 s":
                lesson_grade("01", ("timed_out", 2, "no result after 3 s", 0), ("passed", 1, "", 0)),
            "lost 3 of 4 cases (2 failed and 1 crashed): \"case 0\": failed: boom":
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

    def test_require_gpus_names_a_few_students_and_counts_the_rest(self):
        # issue 45: 35 lines a student on a machine short of GPUs (1,400 for a class of 40)
        grades = []
        for k in range(40):
            one = a_grade(lesson_grade("01", ("skipped", 2, "needs 2 GPUs, found 1", 2),
                                       ("skipped", 1, "needs 2 GPUs, found 1", 2), ("passed", 1, "", 1)))
            one.student = f"student{k:02d}"
            grades.append(one)
        lines = grade.gpu_skip_report(grades)
        self.assertLessEqual(len(lines), grade.GPU_SKIP_STUDENTS + 2, "\n".join(lines))
        self.assertIn("student00: 2 cases (01-x: 2); needs 2 GPUs, found 1", lines[0])
        self.assertIn("and 30 more students the same way", "\n".join(lines))
        self.assertEqual(grade.gpu_skip_report(grades[:1])[0].count("needs 2 GPUs"), 1)

    def test_a_cut_status_keeps_its_ungraded_points(self):
        long = lesson_grade("01", ("failed", 2, "REQUIRE( x == y ) " * 30, 0), self.gpus)
        cell = long.status(report_csv.STATUS_WIDTH)
        self.assertLessEqual(len(cell), report_csv.STATUS_WIDTH)
        self.assertTrue(cell.endswith("; 5 pt ungraded (needs 2 GPUs, found 0)"), cell)
        grade = a_grade(long)
        row = report_csv.row("alice", [long.lesson], grade, "")
        self.assertTrue(row[2].endswith("; 5 pt ungraded (needs 2 GPUs, found 0)"), row[2])

    def test_ungraded_cases_are_counted_per_gpu_count(self):
        mixed = lesson_grade("01", ("skipped", 1, "needs 1 GPU, found 0", 1), ("skipped", 1, "needs 1 GPU, found 0", 1),
                             ("skipped", 2, "needs 2 GPUs, found 0", 2))
        self.assertEqual(mixed.status(), "ungraded: 2 pt need 2 GPUs, 2 pt need 1 GPU; found 0")
        mixed.results.append(runner.CaseResult(runner.TestCase(name="host", tags=[], points=1), "passed", ""))
        self.assertEqual(mixed.status(), "passed; 4 pt ungraded (2 pt need 2 GPUs, 2 pt need 1 GPU; found 0)")

    def test_the_status_names_the_students_failing_case_before_a_machine_error(self):
        grade = lesson_grade("01", ("failed", 1, "CUDA error: cudaErrorInsufficientDriver: CUDA driver version is "
                                                 "insufficient", 0), ("failed", 2, "REQUIRE( sum == 10 ) with expansion: 9 == 10", 0))
        self.assertEqual(grade.status(), 'failed 2 of 2 cases: "case 1": REQUIRE( sum == 10 ) with expansion: 9 == 10')

    def test_with_require_gpus_the_note_does_not_advise_it(self):
        grade = a_grade(lesson_grade("01", ("passed", 2, "", 0), self.gpus))
        self.assertIn("--require-gpus makes that an error", grade.ungraded_note())
        grade.gpus_required = True
        self.assertNotIn("makes that an error", grade.ungraded_note())
        self.assertIn("(an error: --require-gpus)", grade.ungraded_note())

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
        self.assertEqual((row["02-x"], row["02-x status"]), (1, 'failed 1 of 2 cases: "case 0": REQUIRE( a == b ), with commas'))
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

    def test_the_readme_keeps_class_data_out_of_the_course_and_reads_csvs_right(self):
        readme = (HERE / "README.md").read_text()
        self.assertNotRegex(readme, r"column -s, -t <")  # it splits the quoted commas of status cells
        for command in re.findall(r"grade\.py --batch [^\n]*", readme):
            self.assertNotRegex(command, r"--csv [\w.-]+\.csv|--batch class\b", command)  # relative: inside the course

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


class NvshmemReferenceTests(unittest.TestCase):
    """Lesson 10's student file calls NVSHMEM's host API: what a PE needs is allowed, by prefix; what ends
    every PE, and the library's internals, are refused."""

    def test_what_a_pe_needs_is_allowed(self):
        import integrity
        for name in ("nvshmem_malloc", "nvshmem_calloc", "nvshmem_free", "nvshmem_ptr", "nvshmem_barrier_all",
                     "nvshmem_my_pe", "nvshmem_n_pes", "nvshmemx_barrier_all_on_stream", "nvshmemx_collective_launch",
                     "nvshmemx_collective_launch_query_gridsize"):
            self.assertEqual(integrity.reference_refused(name, name), "", name)

    def test_host_api_declared_with_cxx_linkage_is_judged_by_its_name(self):
        """NVSHMEM 3.4.5 (the GPU hosts') declares the collective launch outside extern "C": its mangled names
        were refused (the reference graded 0/25 on two H200s). A C++ free function of NVSHMEM's prefixes is
        judged as the C name; a member, a namespaced name, or what ends every PE stays refused."""
        import integrity
        allowed = {
            "_Z26nvshmemx_collective_launchPKv4dim3S1_PPvmP11CUstream_st":
                "nvshmemx_collective_launch(void const*, dim3, dim3, void**, unsigned long, CUstream_st*)",
            "_Z41nvshmemx_collective_launch_query_gridsizePKv4dim3PPvmPi":
                "nvshmemx_collective_launch_query_gridsize(void const*, dim3, void**, unsigned long, int*)",
        }
        for name, demangled in allowed.items():
            self.assertEqual(integrity.demangle(name), demangled)
            self.assertEqual(integrity.reference_refused(name, demangled), "", demangled)
        for demangled in ("nvshmem_global_exit(int)", "nvshmemi_init_thread(int)", "evil::nvshmem_malloc(unsigned long)",
                          "nvshmem_malloc::steal(int)"):
            self.assertNotEqual(integrity.reference_refused("_Zdummy", demangled), "", demangled)

    def test_what_ends_every_pe_or_reaches_inside_the_library_is_refused(self):
        import integrity
        why = integrity.reference_refused("nvshmem_global_exit", "nvshmem_global_exit")
        self.assertIn("throw an exception", why)
        self.assertIn("ends every PE", why)
        for name in ("nvshmemi_init_thread", "nvshmemi_device_state_d", "nvshmem_global_exit_all"):
            self.assertNotEqual(integrity.reference_refused(name, name), "", name)


def find_nvcc() -> str | None:
    import integrity
    for root in integrity.cuda_roots():
        if (root / "bin" / "nvcc").is_file():
            return str(root / "bin" / "nvcc")
    return shutil.which("nvcc")


@unittest.skipIf(find_nvcc() is None, "no nvcc")
class RelocatableDeviceCodeTests(unittest.TestCase):
    """Lesson 10's file is compiled with nvcc -rdc=true (device-linked with NVSHMEM's device library): its
    host object has nvcc's .nvHR* sections and a registration that calls __cudaRegisterLinkedBinary_<id>.
    A correct file passes the section and before-main() checks; a constructor of its own is still refused."""

    SOURCE = ("__device__ int counter;\n"
              "__global__ void add_one(int* out) { out[threadIdx.x] += 1; atomicAdd(&counter, 1); }\n"
              "void launch(int* out, cudaStream_t stream) { add_one<<<1, 32, 0, stream>>>(out); }\n")

    @classmethod
    def setUpClass(cls):
        cls.folder = Path(tempfile.mkdtemp(prefix="rdc-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def compile(self, source: str, name: str) -> Path:
        path = self.folder / name
        path.write_text(source)
        obj = self.folder / f"{name}.o"  # ends in .cu.o: a CUDA object, as the build names it
        done = subprocess.run([find_nvcc(), "-rdc=true", "-arch=sm_90", "-std=c++20", "-O2", "-c", str(path), "-o",
                               str(obj)], capture_output=True, text=True, cwd=self.folder, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return obj

    def test_relocatable_device_code_passes_the_section_and_before_main_checks(self):
        import integrity
        obj = self.compile(self.SOURCE, "kernels.cu")
        elf = integrity.ElfObject(obj)
        self.assertTrue(any(name.startswith(".nvHR") for name in elf.sections), sorted(elf.sections))
        self.assertTrue(any(s.name.startswith("__cudaRegisterLinkedBinary_") for s in elf.symbols))
        self.assertEqual(integrity.check_sections(elf), [])
        self.assertEqual(integrity.check_before_main(elf), [])

    def test_relocatable_markers_are_the_compilers_own_only_as_nvcc_emits_them(self):
        """nvcc -rdc=true's hostRef*Array*Linkage markers, weak in every relocatable object (NVSHMEM's
        device library's too), are no replacement of the library's; a strong one is the student's."""
        import integrity
        import policy
        markers = [s for s in integrity.read_symbols(self.compile(self.SOURCE, "markers.cu"))
                   if s["name"].startswith("hostRef") and not s["undefined"]]
        self.assertEqual({s["name"] for s in markers}, set(policy.NVCC_RDC_WEAK_SYMBOLS))
        self.assertTrue(all(s["weak"] and integrity.compilers_own(s) for s in markers), markers)
        # nvcc -rdc=true itself refuses a definition of the name (its stub declares it); in a C++ file
        # it is an ordinary, strong definition:
        source = self.folder / "strong.cpp"
        source.write_text("int hostRefKernelArrayExternalLinkage = 1;\n")
        obj = self.folder / "strong.cpp.o"
        done = subprocess.run([shutil.which("g++") or "c++", "-c", str(source), "-o", str(obj)], capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        mine = [s for s in integrity.read_symbols(obj)
                if s["name"] == "hostRefKernelArrayExternalLinkage" and not s["undefined"]]
        self.assertTrue(mine and not any(integrity.compilers_own(s) for s in mine), mine)

    def test_a_constructor_beside_relocatable_device_code_is_still_refused(self):
        import integrity
        source = self.SOURCE + ("#include <cstdio>\n"
                                "__attribute__((constructor)) static void early() { std::puts(\"before main\"); }\n")
        elf = integrity.ElfObject(self.compile(source, "early.cu"))
        problems = integrity.check_before_main(elf)
        self.assertTrue(any("before main()" in what for what, _ in problems), problems)


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
        prepare(cls)  # by setUpModule, beside the other slow preparations, when the whole module runs

    @classmethod
    def prepare(cls):
        cls.folder = Path(tempfile.mkdtemp(prefix="allowlist-"))
        cls.objects: dict[tuple, Path | str] = {}
        nvtx, mpi = nvtx_include(), mpi_include()
        jobs = [("accepted_stdlib.cpp", (), "-O2"), ("accepted_stdlib.cpp", (), "-O0"),
                ("accepted_probed.cpp", (), "-O2"), ("accepted_probed.cpp", (), "-O0"),
                ("refused_jump_into_syscall.cpp", (), "-O2"),
                ("refused_outside.cpp", (), "-O2"), ("refused_handmade_exception.cpp", (), "-O2"),
                ("global_function_table.cpp", (), "-O2")]
        if nvtx:
            jobs += [("accepted_nvtx.cpp", (*nvtx, *course_nvtx_flags()), level) for level in ("-O2", "-O0")]
            jobs += [("refused_nvtx_loader.cpp", (*nvtx, *course_nvtx_flags()), "-O2")]
        if mpi:
            jobs += [("accepted_mpi.cpp", tuple(mpi), "-O2"), ("refused_mpi.cpp", tuple(mpi), "-O2")]
        cls.checked: dict[Path, tuple] = {}  # object -> (its stat when checked, problems())

        def compile_and_check(job):
            result = cls._compile(ALLOWLIST / job[0], job[1], job[2])
            if isinstance(result, Path):  # the object checks run objdump: most of the time of these tests
                try:
                    cls.checked[result] = (cls._stamp(result), cls._problems(result))
                except Exception:  # noqa: BLE001  the test that reads it checks it again, and fails there
                    pass
            return result

        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # about 30 s on 2 cores
            for job, result in zip(jobs, pool.map(compile_and_check, jobs)):
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

    @staticmethod
    def _stamp(obj: Path) -> tuple:
        status = obj.stat()
        return status.st_mtime_ns, status.st_size, status.st_ino

    @staticmethod
    def _problems(obj: Path) -> str:
        import integrity
        return "\n".join(f"{what} ({why})" for what, why in integrity.check_object(obj))

    def problems(self, obj: Path) -> str:
        """What the object checks say of `obj`: checked once, in setUpClass, for the objects compiled
        there (unless a test compiled another object in its place since)."""
        stamp, found = self.checked.get(obj, (None, ""))
        return found if stamp == self._stamp(obj) else self._problems(obj)

    # ------------------------------------------------------------ what the compilers emit themselves

    def test_gcc12_and_gcc13_listings_of_the_same_correct_files_are_accepted(self):
        import integrity
        names = sorted(path.name for path in LISTINGS.glob("*.s"))
        self.assertEqual(names, ["gcc12-01-iostream.s", "gcc12-04-thrust-iostream.s", "gcc13-01-iostream.s",
                                 "gcc13-04-thrust-iostream.s"])
        for name in names:
            self.assertEqual(integrity.check_listing((LISTINGS / name).read_text(), "-04-" in name), [], name)

    def test_relocatable_device_code_embedding_is_accepted_once(self):
        """nvcc -rdc=true (lesson 10) embeds the device code in section __nv_relfatbin, otherwise
        line for line as .nv_fatbin: accepted as the embedding; a second one, of either name, is refused."""
        import integrity
        text = (LISTINGS / "gcc12-04-thrust-iostream.s").read_text()
        embedding = '.section .nv_fatbin, "a"'
        self.assertIn(embedding, text)
        relocatable = text.replace(embedding, '.section __nv_relfatbin, "a"')
        self.assertEqual(integrity.check_listing(relocatable, True), [])
        twice = relocatable + "#APP\n" + integrity._FATBIN.search(text).group(0) + "#NO_APP\n"
        problems = integrity.check_listing(twice, True)
        self.assertTrue(any("second fat binary" in what for what, _ in problems), problems)

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

    def test_a_global_table_built_with_the_stack_protector_is_accepted(self):
        # Ubuntu's GCC protects the stack by default (-fstack-protector-strong): a global's
        # initializer then calls __stack_chk_fail, a correct file refused on the GPU host (GCC 13.3).
        source = ("#include <map>\n#include <string>\n#include <vector>\n"
                  "const std::map<std::string, std::vector<int>> kTable = {{\"rows\", {1, 2}}, {\"columns\", {3}}};\n"
                  "int table_size() { return static_cast<int>(kTable.size()); }\n")
        for level in ("-O2", "-O0"):
            obj = self.compile(source, "-fstack-protector-all", level=level, name="protected_table.cpp")
            self.assertEqual(self.problems(obj), "", level)

    def test_a_fortified_gethostname_is_accepted(self):
        # Ubuntu's GCC defines _FORTIFY_SOURCE by default: gethostname into an array of known size with
        # a length known only at run time becomes __gethostname_chk, a correct file refused on the GPU
        # host (GCC 13.3); a lesson-07 corpus file puts the host's name into its error messages so.
        source = ("#include <unistd.h>\n#include <cstddef>\n"
                  "int host_initial(std::size_t length) {\n  char name[256];\n"
                  "  if (gethostname(name, length) != 0) return -1;\n"
                  "  return name[0];\n}\n")
        obj = self.compile(source, "-D_FORTIFY_SOURCE=2", name="fortified_hostname.cpp")
        self.assertIn("__gethostname_chk", subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True,
                                                          check=True).stdout)
        self.assertEqual(self.problems(obj), "")

    def test_everyday_cxx_is_accepted_optimised_or_not(self):
        for level in ("-O2", "-O0"):
            self.assertEqual(self.problems(self.compiled("accepted_stdlib.cpp", level)), "", level)

    def test_what_probing_found_refused_is_accepted(self):
        # Issue 43: correct idioms a probe of GCC 12 and 13 found refused: a futex wait or wake beside a
        # switch's jump table or a call through a pointer, std::shared_timed_mutex's timed locks,
        # setvbuf, abi::__cxa_demangle, std::to_wstring, std::strtoimax, <cfenv>.
        for level in ("-O2", "-O0"):
            self.assertEqual(self.problems(self.compiled("accepted_probed.cpp", level)), "", level)
        obj = self.compiled("accepted_probed.cpp")
        code = subprocess.run(["objdump", "-d", str(obj)], capture_output=True, text=True, check=True).stdout
        self.assertRegex(code, r"jmp\s+\*%r", "no indirect jump next to the futex: the case proves nothing")
        self.assertIn("syscall", subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True).stdout)

    def test_names_only_other_compilers_emit_for_correct_code_are_accepted(self):
        # What GCC 13 makes of correct code and GCC 12 cannot show here: <format>'s __float128
        # comparisons (every std::format), the ISO C23 names of the strto* family.
        import integrity
        for name in ("__unordtf2", "__gttf2", "__lttf2", "__eqtf2", "__extenddftf2", "__trunctfdf2",
                     "__isoc23_strtoimax", "__isoc23_wcstol", "pthread_rwlock_clockwrlock", "__vswprintf_chk"):
            self.assertEqual(integrity.reference_refused(name, name), "", name)

    def test_a_spin_hint_alone_is_the_only_asm_allowed_in_host_code(self):
        # CCCL's host-side waits (cuda::std::latch, cuda::std::counting_semaphore, atomic wait) spin
        # with asm("pause"); anything more in the statement, or at file scope, stays refused.
        import integrity
        place = '#APP\n# 57 "/usr/local/cuda/include/cccl/cuda/std/__thread/threading_support.h" 1\n'
        self.assertEqual(integrity.check_listing(place + "\tpause\n# 0 \"\" 2\n#NO_APP\n", False), [])
        for body in ("\tpause\n\tsyscall\n", "\tpause; syscall\n", "\tnop\n", "\tpause\n\t.byte 0x0f,0x05\n"):
            self.assertNotEqual(integrity.check_listing(place + body + '# 0 "" 2\n#NO_APP\n', False), [], body)
        self.assertNotEqual(integrity.check_listing("#APP\n\tpause\n#NO_APP\n", False), [])  # file scope
        cccl = [root / "include" / "cccl" for root in integrity.cuda_roots()
                if (root / "include" / "cccl" / "cuda" / "std" / "latch").is_file()]
        if not cccl:
            self.skipTest("no CCCL headers (CUDA Toolkit 13) on this machine")
        source = ("#include <cuda/std/atomic>\n#include <cuda/std/latch>\n#include <cuda/std/semaphore>\n"
                  "#include <thread>\n"
                  "int cccl_waits(int n) {\n  cuda::std::latch done(n);\n"
                  "  cuda::std::counting_semaphore<4> slots(2);\n  cuda::std::atomic<int> flag{0};\n"
                  "  std::thread t([&] { slots.acquire(); flag.store(1); flag.notify_all(); slots.release();"
                  " done.count_down(n); });\n"
                  "  flag.wait(0);\n  done.wait();\n  t.join();\n  return flag.load();\n}\n")
        obj = self.compile(source, f"-I{cccl[0]}", f"-I{cccl[0].parent}", name="cccl_waits.cpp")
        listing = next(self.folder.glob("cccl_waits*.s"))  # -save-temps: what check_listing reads
        self.assertIn("\tpause\n", listing.read_text())
        self.assertEqual(integrity.check_listing(listing.read_text(), False), [])
        self.assertEqual(self.problems(obj), "")

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

    def test_a_jump_that_lands_after_the_futex_number_stays_refused(self):
        # A jump table's entry or a computed goto's label between the futex number and the call: the
        # call may run with another number (the landings of indirect jumps are read from the object).
        problems = self.problems(self.compiled("refused_jump_into_syscall.cpp"))
        self.assertIn("uses syscall", problems)
        self.assertIn("only the futex", problems)

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
    def test_the_courses_own_starter_as_the_submission_is_staged(self):
        """grade.py --submission lessons (the course's own starter, an instructor's baseline) crashed: the
        submission was left out of the staged course, and with it lessons/; a folder outside stays out."""
        from grading import Settings
        elsewhere, inside = TMP / "submissions", FIXTURE / "lessons" / "alice"  # a student's folder, not a lesson
        settings = Settings(course=FIXTURE, build_root=TMP / "stage-build", lessons=[], quiet=True,
                            keep_out=[FIXTURE / "lessons", FIXTURE / "lessons" / "03-starter", FIXTURE, elsewhere,
                                      inside])
        self.assertEqual(settings.staging_exclusions(), [TMP / "stage-build", elsewhere, inside])

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

    def test_the_staged_course_holds_only_what_the_build_reads(self):
        with tempfile.TemporaryDirectory() as folder:
            course, stage = Path(folder) / "course", Path(folder) / "stage"
            shutil.copytree(FIXTURE, course)
            left_out = ("tests/wrong/01-passing/off_by_one.wrong", "tests/course/expect.py", "tests/host/test_x.cpp",
                        "tests/grader/attacks/correct/passing.cpp", "tests/grader/fixture/x.cpp", "README.md",
                        ".ci/run", "solutions/01-passing/passing.cpp", "tests/grader/correct/01-passing/x.right",
                        "tests/grader/listings/x.s", "tests/grader/allowlist/x.cpp", "tests/grader/slurm/x.sh")
            kept = ("tests/grader/grade.py", "tests/meson.build", "lessons/01-passing/hints/task-1.md", "meson.options")
            for extra in left_out + kept:
                (course / extra).parent.mkdir(parents=True, exist_ok=True)
                (course / extra).write_text("x")
            layout.stage_course(course, stage)
            self.assertEqual([path for path in left_out if (stage / path).exists()], [])
            self.assertEqual([path for path in kept if not (stage / path).exists()], [])
            self.assertFalse((stage / "tests/wrong").exists() or (stage / "tests/grader/attacks").exists())


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
            "02-assertion": "failed 1 of 2 cases: \"multiplies, with commas [and brackets]\": REQUIRE( multiply(2, 3) == 6 )",
            "03-starter": "failed 2 of 2 cases: \"squares a number\": NOT_IMPLEMENTED: task 1 in square() at lessons/03-",
            "04-two-gpus": "ungraded: 3 pt need 2 GPUs, 2 pt need 1 GPU; found 0",  # counted case by case
            "05-crash": "crashed 1 of 2 cases: \"divides by zero gives zero\": SIGSEGV",
            "06-hang": f"timed out 1 of 1 case: \"answers without hanging\": no result after {CASE_TIMEOUT} s",
            "07-watchdog": "timed out 1 of 1 case: \"joins every rank\": WATCHDOG: join_all(2) did not finish within 1 s",
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
        self.assertEqual((tests["04.1"]["max_score"], tests["04.1"]["status"]), (0, "failed"))  # 0/0 reads as passed
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
        done = run_grader("--submission", str(FIXTURE / "solutions"), "--build-dir", str(shared_build()),
                          "--out", str(out), "--lessons", "03,04,06,07,08")
        self.assertEqual(done.returncode, 0, done.stderr)
        results = read_outputs(out)["results"]
        self.assertEqual((results["score"], results["extra_data"]["possible"], results["extra_data"]["ungraded"]),
                         (11, 11, 5))
        self.assertFalse((shared_build() / "submission" / "course" / "solutions").exists())


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
        prepare(cls)  # by setUpModule, beside the other slow preparations, when the whole module runs

    @classmethod
    def prepare(cls):
        batch = TMP / "class"
        make_class(batch)
        cls.csv = TMP / "class.csv"
        cls.done = run_grader("--batch", str(batch), "--build-dir", str(shared_build()), "--out",
                              str(TMP / "batch-grade"), "--csv", str(cls.csv), "--lessons", "01,02,03,04,05,07")
        with cls.csv.open() as table:
            cls.rows = {row["student"]: row for row in csv.DictReader(table)}

    def test_each_students_build_starts_from_the_course_starters(self):
        # bob has no lesson 03: his build must not hold alice's lesson-03 object (or its listings),
        # but the one compiled from the course's starter, as the clean copy of the batch's build has it
        build = shared_build() / "batch" / "build"
        clean = shared_build() / "batch" / "build.clean"
        self.assertTrue(clean.is_dir(), "the batch has no clean build to start each student from")
        entries = json.loads((build / "compile_commands.json").read_text())
        outputs = [entry["output"] for entry in entries if entry["file"].endswith("lessons/03-starter/starter.cpp")]
        self.assertTrue(outputs)
        for output in outputs:
            self.assertEqual((build / output).read_bytes(), (clean / output).read_bytes(), output)

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
            ("bob", "02-assertion"): "failed 1 of 2 cases: \"multiplies, with commas [and brackets]\": REQUIRE( multiply(2, 3) == 6 ) with expansion: 5 == 6",
            ("bob", "03-starter"): "missing: no file starter.cpp in the submission",
            ("bob", "04-two-gpus"): "ungraded: 3 pt need 2 GPUs, 2 pt need 1 GPU; found 0",  # counted case by case
            ("bob", "05-crash"): "crashed 1 of 2 cases: \"divides by zero gives zero\": SIGSEGV (signal 11)",
            ("bob", "07-watchdog"): "timed out 1 of 1 case: \"joins every rank\": WATCHDOG: join_all(2) did not finish within 1 s",
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


@needs_tools
class ClassTests(unittest.TestCase):
    """An instructor's class: ambiguous and renamed files, a regrade of one student, the roster's
    LMS files and the class page (lessons 01 and 02 only)."""

    @classmethod
    def setUpClass(cls):
        prepare(cls)  # by setUpModule, beside the other slow preparations, when the whole module runs

    @classmethod
    def prepare(cls):
        cls.batch = batch = TMP / "class-week"
        for name in ("alice", "-dash"):
            shutil.copytree(FIXTURE / "solutions", batch / name / "lessons", ignore=shutil.ignore_patterns("0[3-8]*"))
        for version, source in (("v1", FIXTURE / "lessons"), ("v2", FIXTURE / "solutions")):  # the starter, the solution
            (batch / "bob" / version).mkdir(parents=True)
            shutil.copy(source / "01-passing/passing.cpp", batch / "bob" / version)
        (batch / "carol").mkdir()
        shutil.copy(FIXTURE / "solutions/01-passing/passing.cpp", batch / "carol" / "passing-1.cpp")
        shutil.copy(FIXTURE / "lessons/02-assertion/assertion.cpp", batch / "carol")
        cls.roster = TMP / "roster.csv"
        cls.roster.write_text("student,SIS User ID\nalice,1001\nbob,1002\ncarol,1003\n-dash,1004\nzoe,1009\n")
        cls.out = TMP / "class-week-out"
        cls.common = ("--batch", str(batch), "--build-dir", str(shared_build()), "--lessons", "01,02")
        cls.done = run_grader(*cls.common, "--out", str(cls.out), "--roster", str(cls.roster))
        cls.first_csv = (cls.out / "grades.csv").read_text()

    def rows(self):
        with (self.out / "grades.csv").open() as table:
            # the folder's name as the CSV guards a cell a spreadsheet would read as a formula ('-dash)
            return {text_safety.from_csv_cell(row["student"]): row for row in csv.DictReader(table)}

    def test_ambiguous_copies_are_reported_not_graded(self):
        self.assertEqual(self.done.returncode, 0, self.done.stderr)
        bob = self.rows()["bob"]
        self.assertTrue(bob["01-passing status"].startswith("ambiguous: 2 files passing.cpp at the same depth "
                                                            "(v1/passing.cpp, v2/passing.cpp)"), bob)
        self.assertIn("ambiguous", bob["findings"])

    def test_a_renamed_file_is_named_with_what_the_folder_held(self):
        carol = (self.out / "carol" / "report.txt").read_text()
        self.assertIn("it has passing-1.cpp: renamed on upload?", self.rows()["carol"]["01-passing status"])
        self.assertIn("the submission holds: assertion.cpp, passing-1.cpp", carol)

    def test_the_report_says_which_file_was_graded(self):
        report = (self.out / "carol" / "report.txt").read_text()
        self.assertIn("Files graded (in the submission):\n  02-assertion: assertion.cpp (", report)

    def test_a_folder_named_with_a_dash_is_graded(self):
        self.assertEqual(self.rows()["-dash"]["total"], "8")

    def test_the_lms_files_and_the_class_page(self):
        total = (self.out / "lms" / "total.csv").read_text().splitlines()
        self.assertEqual(total[0], "SIS User ID,total")
        self.assertEqual(sorted(total[1:]), ["1001,8", "1002,0", "1003,1", "1004,8"])
        self.assertEqual((self.out / "lms" / "01-passing.csv").read_text().splitlines()[0], "SIS User ID,01-passing")
        self.assertIn("zoe (id 1009): in the roster, no submission", self.done.stderr)
        page = (self.out / "class.html").read_text()
        for needed in ('<a href="alice/report.txt">alice</a>', '<a href="-dash/report.txt">-dash</a>', "<svg",
                       'id="01-passing"', "multiplies, with commas [and brackets]"):
            self.assertIn(needed, page)
        for forbidden in ("<script", "http://", "https://"):
            self.assertNotIn(forbidden, page.replace('xmlns="http://www.w3.org/2000/svg"', ""))
        lines = self.done.stdout.splitlines()
        glance = lines.index(next(line for line in lines if line.startswith("Class at a glance (4 students")))
        self.assertEqual(lines[glance + 1].split(), ["01-passing", "full", "2", "partial", "0", "zero", "1", "missing", "1"])
        self.assertIn('lost by 1: "multiplies, with commas [and brackets]" (2 pt): REQUIRE', "\n".join(lines))

    def test_regrading_one_student_keeps_the_others(self):
        regrade = run_grader(*self.common, "--out", str(self.out), "--student", "carol", "-q")
        self.assertEqual(regrade.returncode, 0, regrade.stderr)
        self.assertIn("(1 rows graded now, 3 kept from before)", regrade.stdout)
        self.assertEqual((self.out / "grades.csv").read_text(), self.first_csv)  # the same grades, every row

    def test_class_reports_stay_out_of_the_course(self):
        inside = run_grader(*self.common, "--csv", str(COURSE / "grades.csv"))
        self.assertEqual(inside.returncode, 2)
        self.assertIn("lies inside the course", inside.stderr)
        self.assertNotEqual(grade.make_settings(grade.parse_args(["--course", str(COURSE), "--batch", str(self.batch)])).out,
                            grade.make_settings(grade.parse_args(["--course", str(COURSE), "--submission",
                                                                  str(self.batch / "alice")])).out)


class GradescopePackageTests(unittest.TestCase):
    def test_the_package_has_what_gradescope_runs_and_says_it_has_no_gpu(self):
        import zipfile
        output = Path(tempfile.mkdtemp(prefix="gradescope-", dir=TMP)) / "autograder.zip"
        done = subprocess.run([sys.executable, str(HERE / "gradescope_package.py"), "--output", str(output),
                               "--lessons", "01,02"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("a student whose code is perfect gets 8 of 49 points", done.stderr)
        with zipfile.ZipFile(output) as package:
            names = set(package.namelist())
            run = package.read("run_autograder").decode()
            self.assertEqual(package.getinfo("run_autograder").external_attr >> 16 & 0o111, 0o111)
            self.assertIn("8 of 49", package.read("README.txt").decode())
        self.assertLessEqual({"setup.sh", "run_autograder", "course/tests/grader/grade.py"}, names)
        self.assertFalse(any(name.startswith("course/solutions/") for name in names))
        self.assertIn("--submission /autograder/submission", run)
        self.assertIn("--lessons 01,02", run)
        self.assertIn("/autograder/results/results.json", run)


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
    # Issue 43: the result channel found in memory, forged results, then a signal, an abort, a
    # return; results for cases that have not begun; two for one case (files and descriptors
    # are refused; RUNTIME_REASONS: what the result protocol says of each without the checks).
    "forged_signal": "uses write (not on the list of what student code may use",
    "forged_abort": "uses write (not on the list of what student code may use",
    "forged_return": "uses write (not on the list of what student code may use",
    "forged_later": "uses write (not on the list of what student code may use",
    "forged_twice": "uses write (not on the list of what student code may use",
}
RUNTIME_REASONS = {  # attack -> what the report says when only the run-time defences stand
    "control_exception": "the test framework's own control exception",
    "exit_zero": "the program ended (exit code 0) before the case finished",
    # its records come after main() closed the channel: they reach nothing, the tests' own results stand
    "atexit_forgery": "REQUIRE( add(2, 3) == 5 ) with expansion: 6 == 5",
    # forged before main(), without the token, in the protocol before issue 43 (no "event")
    "constructor_argv": "results tampered with: result record 1 is not one the course's listener writes",
    "handmade_exception": "the test framework's own control exception",
    "huge_object": "the build wrote a file larger than 512 MB",
    "peek_outside": "REQUIRE( add(2, 3) == 5 ) with expansion: -1 == 5",
    "fake_inventory": "REQUIRE( add(2, 3) == 5 ) with expansion: 6 == 5",
    # Issue 43: every forger is caught by the result protocol: in the shared run, or (the signal:
    # its run keeps no results) in a lone run, where it writes results for cases not run.
    "forged_signal": "results tampered with: a result for a case that was not run: 'adds negative numbers'",
    "forged_abort": "results tampered with: result record 8 is numbered 2",
    "forged_return": "results tampered with: result record 8 is numbered 2",
    "forged_later": "results tampered with: a result for the case 'adds negative numbers', which had not begun",
    "forged_twice": "results tampered with: result record 3 is numbered 2",
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
        prepare(cls)  # by setUpModule, beside the other slow preparations, when the whole module runs

    @classmethod
    def prepare(cls):
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
        self.assertTrue(rows["forged_signal"]["01-passing status"].startswith(
            "invalid results: the results of lesson-01 cannot be trusted: a result for a case that was not run"))
        self.assertIn("results tampered with", rows["forged_signal"]["findings"])
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


# ============================================================================ the corpus of correct files

REPOSITORY = HERE.parents[1]  # the course this grader belongs to (its solutions/ and tests/wrong/)
CORRECT = HERE / "correct"


@unittest.skipUnless((REPOSITORY / "solutions").is_dir() and (REPOSITORY / "tests/wrong/mutate.py").is_file(),
                     "the corpus is made from solutions/ by tests/wrong/mutate.py (the full course only)")
class CorpusTests(unittest.TestCase):
    """tests/grader/correct/: the correct-but-different files, stored as mutations of the reference
    solutions (NN-name/NAME.right); grade_corpus.py makes them whole before it grades them (on a GPU
    host). A solution that changes the lines a mutation replaces fails here, naming the file."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, str(CORRECT))
        import corpus
        import grade_corpus
        cls.corpus, cls.grade_corpus = corpus, grade_corpus

    def test_verdict_of_a_lesson_graded_where_none_of_its_cases_can_run(self):
        """Lesson 10 without a GPU: every case needs one, none ran, none was lost: the file is accepted
        (its object checks passed); a failed case or a refusal is not."""
        verdict = self.grade_corpus.verdict
        self.assertEqual(verdict("ungraded: 16 pt need 2 GPUs, 9 pt need 1 GPU; found 0"), "accepted")
        self.assertEqual(verdict("passed; 5 pt ungraded (needs 2 GPUs, found 0)"), "accepted")
        self.assertEqual(verdict("refused: x.cu calls exit()"), "refused")
        self.assertEqual(verdict("failed 2 of 5 cases: \"adds\": REQUIRE( f(2) == 4 )"), "accepted, lost points")

    def test_every_stored_corpus_mutation_applies_to_its_solution(self):
        stored = [m for variants in self.corpus.mutations().values() for m in variants]
        self.assertEqual(sorted({m.parent.name for m in stored}),
                         sorted(p.name for p in (REPOSITORY / "solutions").glob("[0-9][0-9]-*") if p.is_dir()),
                         "a lesson of the corpus has no file")
        self.assertEqual(self.corpus.check(REPOSITORY), [])
        for mutation in stored:
            name, text = self.corpus.whole_file(mutation)
            lesson = mutation.parent.name
            self.assertEqual(Path(name).suffix, self.corpus.solution_of(lesson).suffix)
            self.assertIn(f"// Correct-but-different lesson {lesson[:2]} file", text, mutation.name)
            self.assertTrue(text.startswith("// SPDX-License-Identifier: MIT\n"), mutation.name)
        self.assertEqual(sorted(p.relative_to(CORRECT).as_posix() for p in CORRECT.glob("[0-9][0-9]-*/*")
                                if p.suffix != ".right"), [],
                         "whole files beside the stored mutations: store them (corpus.py store)")

    def test_a_whole_file_stored_then_made_whole_again_is_the_same_bytes(self):
        for mutation in [m for variants in self.corpus.mutations().values() for m in variants]:
            solution = self.corpus.solution_of(mutation.parent.name).read_text()
            name, whole = self.corpus.whole_file(mutation)
            stored = self.corpus.store(solution, whole)
            self.assertEqual(self.corpus.reconstruct(solution, stored, "s", "m"), whole, mutation.name)

    def test_store_keeps_the_header_and_finds_a_context_that_occurs_once(self):
        solution = ("// SPDX-License-Identifier: MIT\n// Copyright\n//\n// The reference.\n#include <a>\n\n"
                    "int f() {\n  return 1;\n}\n\nint g() {\n  return 1;\n}\n")
        whole = ("// SPDX-License-Identifier: MIT\n// Copyright\n//\n// Correct-but-different: g returns 1 another way.\n"
                 "//   (indented, kept as it is)\n#include <a>\n#include <b>\n\nint f() {\n  return 1;\n}\n\n"
                 "int g() {\n  return 2 - 1;\n}\n")
        stored = self.corpus.store(solution, whole)
        self.assertTrue(stored.startswith("# SPDX-License-Identifier: MIT\n# Copyright\n#\n# Correct-but-different"))
        self.assertIn("#   (indented, kept as it is)\n@@ replace\n", stored)
        self.assertIn("@@ replace\nint g() {\n  return 1;\n@@ with\nint g() {\n  return 2 - 1;\n@@ end\n", stored)
        self.assertEqual(self.corpus.reconstruct(solution, stored, "s", "m"), whole)
        with self.assertRaisesRegex(self.corpus.CorpusError, "occurs 0 times"):
            self.corpus.reconstruct(solution.replace("int g()", "int h()"), stored, "s", "m")

    def test_grade_corpus_makes_the_files_whole_in_its_work_folder_and_reports_a_stale_one(self):
        with tempfile.TemporaryDirectory() as folder:
            work = Path(folder)
            files, stale = self.grade_corpus.corpus({"01", "09"}, set(), work / "corpus")
            self.assertEqual(stale, {})
            self.assertEqual(sorted(files), ["01-device-enumeration", "09-multi-process"])
            for lesson, paths in files.items():
                self.assertEqual([p.parent for p in paths], [work / "corpus" / lesson] * len(paths))
                self.assertEqual([p.stem for p in paths], [m.stem for m in self.corpus.mutations()[lesson]])
            names = self.grade_corpus.student_files(REPOSITORY)
            placed = self.grade_corpus.stage(files, names, work / "class")
            self.assertEqual(len(placed), len(files["01-device-enumeration"]) + len(files["09-multi-process"]))
            first = work / "class" / "corpus-01" / "01-device-enumeration" / names["01-device-enumeration"]
            self.assertEqual(first.read_text(), files["01-device-enumeration"][0].read_text())
            broken = work / "stale" / "01-device-enumeration" / "broken.right"
            broken.parent.mkdir(parents=True)
            broken.write_text("# SPDX-License-Identifier: MIT\n@@ replace\nno such line\n@@ with\n@@ end\n")
            files, stale = self.grade_corpus.corpus(None, set(), work / "corpus", root=work / "stale")
            self.assertEqual((files, list(stale)), ({}, [broken]))
            self.assertIn("broken.right: block 1 occurs 0 times in solutions/01-device-enumeration/", stale[broken])


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
        plan = slurm_plan(self.tmp / "run", [["alice", "bob o'neil", "-dash"], ["carol"]])
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
        students = [a[len("--student="):] for a in argv if a.startswith("--student=")]
        self.assertEqual(students, ["alice", "bob o'neil", "-dash"])  # a name that starts with '-' too
        self.assertEqual(grade.parse_args(["--batch", "x"] + [f"--student={s}" for s in students]).student, students)
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

    def test_require_gpus_failures_reach_the_merge(self):
        self.plan.require_gpus = True
        slurm_jobs.write_run(self.plan, slurm_jobs.Resources())
        shutil.rmtree(self.plan.task_folder(0))
        self.task(0, started=True, done=3, csv=SLURM_CSV_HEADER + "alice,5,passed; 5 pt ungraded (needs 2 GPUs, found 0),"
                  "5,5,5,graded 5 of 10 points here,,\r\n", students=("alice",))
        self.plan.tasks[0] = ["alice"]
        slurm_jobs.write_run(self.plan, slurm_jobs.Resources())
        states, missing = self.merge()
        self.assertTrue(states[0].complete and states[0].short_of_gpus)
        self.assertTrue(missing[0].startswith("alice: Slurm job 12_0 (task 0): done (exit status 3), cases skipped for "
                                              "missing GPUs on node7 (2 GPUs)"), missing[0])
        self.plan.tasks = [["alice"]]  # every task done, alice's short of GPUs: the merge exits 3
        slurm_jobs.write_run(self.plan, slurm_jobs.Resources())
        self.assertEqual(grade.main(["--merge", str(self.plan.run)]), grade.EXIT_GPUS)
        self.assertIn("alice", (self.plan.run / "grade" / "missing.txt").read_text())

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
        planned = run_grader(*common, "--gpus-per-task", "0", env=env)
        submit = next(line for line in planned.stdout.splitlines() if line.startswith("Submit with:"))
        for option in ("--lessons 01,04", "--gpus-per-task 0", "--submit", "--timeout " + CASE_TIMEOUT):
            self.assertIn(option, submit)  # every option given, not only --batch and --out
        accepted = run_grader(*common, "--gpus-per-task", "0", "--submit", env=env)
        self.assertEqual(accepted.returncode, 0, accepted.stderr)
        self.assertEqual((tmp / "sbatch-calls").read_text().count("called"), 3)  # build, array, merge


@needs_tools
class SlurmRunWithoutClusterTests(unittest.TestCase):
    """The fixture's class through --slurm, its job scripts run by hand as Slurm would run them
    (one task left out, then run): the merged CSV is the local batch's, byte for byte."""

    @classmethod
    def setUpClass(cls):
        prepare(cls)  # by setUpModule, beside the other slow preparations, when the whole module runs

    @classmethod
    def prepare(cls):
        cls.batch = TMP / "slurm-class"
        make_class(cls.batch)
        common = ("--batch", str(cls.batch), "--build-dir", str(shared_build()), "--lessons", "01,02")
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
