#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# The student's command, ./course, on the grader's fake course (tests/grader/fixture: C++ and
# Catch2 only, no CUDA), whose lessons pass, fail an assertion, throw NOT_IMPLEMENTED, skip for
# missing GPUs, crash and do not compile: check on each kind, the same numbers as the grader,
# watch over two saves and its two ways to stop, hints one at a time in order, reset from the
# edition's copy and from git, and a machine without a GPU. The GPU count is the grader's test
# override (COURSE_GRADER_TEST_GPU_COUNT, and the fixture's FAKE_GPU_COUNT). About a minute on two cores.
"""Usage: test_course_command.py [COURSE_ROOT]"""

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

ROOT = Path(sys.argv.pop(1) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]).resolve()
COMMAND = ROOT / "course"
GRADE = ROOT / "tests" / "grader" / "grade.py"
FIXTURE = ROOT / "tests" / "grader" / "fixture"
CHANNEL_SOURCES = [ROOT / "common" / "testing" / name for name in ("result_channel.h", "result_channel.cpp")]
TOOLS_MISSING = [tool for tool in ("meson", "ninja", "pkg-config") if not shutil.which(tool)]
if not TOOLS_MISSING and subprocess.run(["pkg-config", "--exists", "catch2"]).returncode != 0:
    TOOLS_MISSING.append("Catch2 v3 (pkg-config catch2)")

TMP: Path = Path()
COURSE: Path = Path()  # the fixture course, without its hanging lesson, with hints added

STARTER_03 = "lessons/03-starter/starter.cpp"
SQUARE_DONE = """#include "starter.h"

#include "fixture_support.h"

int square(int x) { return x * x; }

int cube(int x) {
  (void)x;
  NOT_IMPLEMENTED("task 2");
}
"""
BOTH_DONE = SQUARE_DONE.replace('  (void)x;\n  NOT_IMPLEMENTED("task 2");\n', "  return x * x * x;\n")

README_03 = """# Lesson 03: a starter

## Hints

Try first.

<details><summary>Hints for task 1</summary>

1. Multiply.
2. A number times itself,
   on two lines.
</details>

<details><summary>Task 2: cube, step by step</summary>

`return x * x * x;`
</details>

<details><summary>Task 2: the result is a square</summary>

One factor is missing.
</details>

<details><summary>Task 1 or 2: the test does not build</summary>

Read the first error.
</details>

## Going further
"""

HINTS_01 = """# Lesson 01, task 1: hints

## Look at the test

The test calls `add`.

## Step by step

```cpp
## not a heading: inside a code block
return a + b;
```
"""


def setUpModule():
    global TMP, COURSE
    TMP = Path(tempfile.mkdtemp(prefix="course-command-test-"))
    COURSE = TMP / "fixture"
    shutil.copytree(FIXTURE, COURSE)
    for source in CHANNEL_SOURCES:
        shutil.copy(source, COURSE / "common")
    # Lesson 06 hangs on purpose: the grader's own tests pay its time-out; these need not.
    for path in ("lessons/06-hang", "solutions/06-hang", "tests/lesson_06.cpp"):
        shutil.rmtree(COURSE / path) if (COURSE / path).is_dir() else (COURSE / path).unlink()
    table = COURSE / "tests" / "meson.build"
    table.write_text("".join(line for line in table.read_text().splitlines(keepends=True) if "06-hang" not in line))
    (COURSE / "lessons" / "03-starter" / "README.md").write_text(README_03)
    (COURSE / "lessons" / "01-passing" / "hints").mkdir()
    (COURSE / "lessons" / "01-passing" / "hints" / "task-1.md").write_text(HINTS_01)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def environment(gpus: int, program_gpus: int | None = None) -> dict:
    """The grader's probe reports `gpus`; the fixture's programs see `program_gpus` (the same by default)."""
    env = dict(os.environ, COURSE_GRADER_TEST_GPU_COUNT=str(gpus),
               FAKE_GPU_COUNT=str(gpus if program_gpus is None else program_gpus), GIT_CEILING_DIRECTORIES=str(TMP))
    env.pop("NO_COLOR", None)
    return env


def course(*args: str, gpus: int = 1, program_gpus: int | None = None, cwd: Path | None = None,
           course_root: Path | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, str(COMMAND), *args, "--course", str(course_root or COURSE), "--case-timeout", "10"]
    if args[0] in ("hint", "reset"):
        argv = argv[:-2]  # they run no test
    return subprocess.run(argv, capture_output=True, text=True, env=environment(gpus, program_gpus),
                          cwd=cwd or TMP, timeout=600)


def course_json(*args: str, **kwargs) -> tuple[int, dict]:
    done = course(*args, "--json", **kwargs)
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"not JSON (exit status {done.returncode}):\n{done.stdout}\n{done.stderr}") from None


def needs_tools(cls):
    return unittest.skipIf(TOOLS_MISSING, f"missing: {', '.join(TOOLS_MISSING)}")(cls)


class TheCommandLine(unittest.TestCase):
    def test_help_names_every_command(self):
        done = subprocess.run([sys.executable, str(COMMAND), "--help"], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        for command in ("check", "watch", "hint", "reset", "progress"):
            self.assertIn(f"./course {command}", done.stdout)

    def test_an_unknown_lesson_is_a_usage_error(self):
        done = course("hint", "42", "1")
        self.assertEqual(done.returncode, 2)
        self.assertIn("no lesson '42' (the course has 01, 02, 03, 04, 05, 07, 08)", done.stderr)


@needs_tools
class Check(unittest.TestCase):
    def test_a_starter_fails_task_by_task_with_its_not_implemented_message(self):
        done = course("check", "03")
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertRegex(done.stdout, r"Task 1 +FAILED +0/2 points")
        self.assertIn("NOT_IMPLEMENTED: task 1 in square() at lessons/03-starter/starter.cpp:7", done.stdout)
        self.assertRegex(done.stdout, r"Task 2 +FAILED +0/2 points")
        self.assertIn("0 of 4 points gradable here.\nNext: task 1 (a hint: ./course hint 03 1).", done.stdout)
        rc, report = course_json("check", "3")
        self.assertEqual((rc, report["status"], report["earned"], report["possible"]), (1, "failed", 0, 4))
        self.assertEqual([task["status"] for task in report["tasks"]], ["failed", "failed"])

    def test_a_wrong_answer_shows_the_first_failed_check_and_the_passed_task_its_points(self):
        done = course("check", "02")
        self.assertEqual(done.returncode, 1)
        self.assertIn('failed: "multiplies, with commas [and brackets]"', done.stdout)
        self.assertIn("REQUIRE( multiply(2, 3) == 6 ) with expansion: 5 == 6", done.stdout)
        self.assertRegex(done.stdout, r"Task 2 +passed +1/1 point\n")

    def test_a_lesson_that_passes_exits_0(self):
        done = course("check", "01")
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertIn("5 of 5 points gradable here.\nEvery case this machine can run passed.", done.stdout)

    def test_a_crash_costs_its_own_case(self):
        rc, report = course_json("check", "05")
        self.assertEqual(rc, 1)
        self.assertEqual([task["status"] for task in report["tasks"]], ["passed", "failed"])
        self.assertEqual(report["tasks"][1]["cases"][0]["status"], "crashed")

    def test_a_lesson_that_does_not_build_says_where(self):
        done = course("check", "08")
        self.assertEqual(done.returncode, 1)
        self.assertIn("DOES NOT BUILD (lesson-08)", done.stdout)
        self.assertRegex(done.stdout, r"lessons/08-broken/broken\.cpp:4:\d+: error")

    def test_on_a_machine_without_a_gpu_every_gpu_case_is_ungraded(self):
        done = course("check", "04", gpus=0)
        self.assertEqual(done.returncode, 77, done.stdout)
        self.assertRegex(done.stdout, r"Task 1 +ungraded 3 points: needs 2 GPUs, found 0")
        self.assertRegex(done.stdout, r"Task 2 +ungraded 2 points: needs 1 GPU, found 0")
        self.assertIn("This machine can grade no case of this lesson.", done.stdout)
        rc, report = course_json("check", "04", gpus=0)
        self.assertEqual((report["earned"], report["possible"], report["ungraded"]), (0, 0, 5))
        self.assertEqual(report["needs_gpus"], {"1": 2, "2": 3})

    def test_with_one_gpu_only_the_two_gpu_case_is_ungraded(self):
        done = course("check", "04", gpus=1)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertRegex(done.stdout, r"Task 1 +ungraded 3 points: needs 2 GPUs, found 1")
        self.assertRegex(done.stdout, r"Task 2 +passed +2/2 points")

    def test_a_case_that_skips_itself_on_a_machine_with_its_gpus_fails_as_the_grader_says(self):
        # The grader's probe finds 2 GPUs; the program claims none and skips: only the probe counts.
        rc, report = course_json("check", "04", gpus=2, program_gpus=0)
        self.assertEqual(rc, 1)
        self.assertIn("the case skipped itself", report["tasks"][0]["cases"][0]["message"])


@needs_tools
class Progress(unittest.TestCase):
    def test_progress_gives_the_numbers_the_grader_gives(self):
        graded = subprocess.run([sys.executable, str(GRADE), "--course", str(COURSE), "--build-dir", str(TMP / "grade"),
                                 "--timeout", "10", "--quiet", "-j", "2"], capture_output=True, text=True,
                                env=environment(1), timeout=600)
        self.assertEqual(graded.returncode, 0, graded.stderr)
        results = json.loads((TMP / "grade" / "grade" / "results.json").read_text())
        rc, progress = course_json("progress")
        self.assertEqual(rc, 0)
        lessons = {lesson["number"]: lesson for lesson in progress["lessons"]}
        self.assertEqual(sorted(lessons), ["01", "02", "03", "04", "05", "07", "08"])
        for test in results["tests"]:
            number, _, task = test["number"].partition(".")
            if not task:  # a lesson whose cases are unknown: it did not build
                self.assertEqual((lessons[number]["status"], lessons[number]["possible"]), ("does not build", None))
                continue
            row = next(row for row in lessons[number]["tasks"] if row["task"] == int(task))
            self.assertEqual((row["earned"], row["possible"], row["status"]),
                             (test["score"], test["max_score"],
                              "ungraded" if test["name"].endswith("(ungraded)") else test["status"]), test["name"])
        self.assertEqual((progress["total"]["earned"], progress["total"]["possible"], progress["total"]["ungraded"]),
                         (results["score"], results["extra_data"]["possible"], results["extra_data"]["ungraded"]))

    def test_the_table_shows_every_lesson_and_what_this_machine_cannot_grade(self):
        done = course("progress")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stdout, r"01 passing +2 of 2 +5 of 5 +-")
        # Task 1 of lesson 04 has nothing gradable on one GPU: named beside the count, never "passed".
        self.assertRegex(done.stdout, r"04 two-gpus +1 of 1, 1 not gradable here: need 2 GPUs +2 of 2 +3 points need 2 GPUs")
        self.assertRegex(done.stdout, r"08 broken +0 of 0 +0 of \? +- +does not build")
        self.assertRegex(done.stdout, r"Total +\d+ of \d+, 1 not gradable here +\d+ of \d+ +3 points")

    def test_a_task_with_nothing_gradable_here_is_not_counted_as_passed(self):
        rc, progress = course_json("progress", gpus=0)
        self.assertEqual(rc, 0)
        two_gpus = next(lesson for lesson in progress["lessons"] if lesson["number"] == "04")
        self.assertEqual((two_gpus["tasks_passed"], two_gpus["tasks_gradable"], two_gpus["tasks_ungradable"]),
                         (0, 0, 2))
        done = course("progress", gpus=0)
        self.assertRegex(done.stdout, r"04 two-gpus +0 of 0, 2 not gradable here: need 1 or 2 GPUs +0 of 0 +"
                                      r"5 points: 2 need 1 GPU, 3 need 2 GPUs")

    def test_the_gpus_that_ungraded_points_need_are_counted_case_by_case(self):
        # Lesson 04 of the fixture without a GPU: 3 points need 2 GPUs and 2 points need 1.
        done = course("check", "04", gpus=0)
        self.assertIn("5 points not gradable on this machine (3 pt need 2 GPUs, 2 pt need 1 GPU; found 0)",
                      done.stdout)
        self.assertNotIn("needs 1 or 2 GPUs", done.stdout)


class TheGradersStatusCell(unittest.TestCase):
    """The grader's status of a lesson (its table and CSV cell) counts the GPUs case by case as ./course does."""

    def grade(self, skipped: list[tuple[int, int]], passed: int = 1):
        sys.path.insert(0, str(ROOT / "tests" / "grader"))
        try:
            import catch2_runner as runner
            import course_layout
            import scoring
        finally:
            sys.path.pop(0)
        lesson = course_layout.Lesson("07", "07-all-reduce", "all_reduce", ".cu")
        results = [runner.CaseResult(runner.TestCase(f"passes {n}", [], task=1, gpus=1, points=1), runner.PASSED)
                   for n in range(passed)]
        for n, (gpus, points) in enumerate(skipped):
            results.append(runner.CaseResult(runner.TestCase(f"skips {n}", [], task=2, gpus=gpus, points=points),
                                             runner.SKIPPED, f"needs {gpus} GPU{'' if gpus == 1 else 's'}, found 0"))
        return scoring.LessonGrade(lesson, results)

    def test_cases_that_need_different_gpu_counts_are_counted_per_count(self):
        grade = self.grade([(1, 2), (2, 4)])
        self.assertEqual(grade.status(), "passed; 6 pt ungraded (4 pt need 2 GPUs, 2 pt need 1 GPU; found 0)")
        self.assertEqual(self.grade([(1, 2), (2, 4)], passed=0).status(),
                         "ungraded: 4 pt need 2 GPUs, 2 pt need 1 GPU; found 0")

    def test_cases_that_all_need_the_same_count_keep_the_programs_words(self):
        self.assertEqual(self.grade([(2, 3), (2, 1)]).status(), "passed; 4 pt ungraded (needs 2 GPUs, found 0)")


class Reader(threading.Thread):
    """Collects a process's output lines, so that a test can wait for one."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.lines, self.text = stream, queue.Queue(), ""
        self.start()

    def run(self):
        for line in self.stream:
            self.lines.put(line)

    def wait_for(self, pattern: str, seconds: float = 120) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self.text += self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if re.search(pattern, self.text):
                return self.text
        raise AssertionError(f"no {pattern!r} within {seconds} s in:\n{self.text}")


@needs_tools
class Watch(unittest.TestCase):
    def setUp(self):
        self.starter = (COURSE / STARTER_03).read_text()

    def tearDown(self):
        (COURSE / STARTER_03).write_text(self.starter)

    def save(self, text: str) -> None:
        """As an editor that writes a new file and renames it over the old one does."""
        fresh = (COURSE / STARTER_03).with_suffix(".saving")
        fresh.write_text(text)
        fresh.rename(COURSE / STARTER_03)

    def test_each_save_prints_what_changed_and_ctrl_c_stops_it(self):
        argv = [sys.executable, str(COMMAND), "watch", "03", "--course", str(COURSE), "--case-timeout", "10"]
        watch = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=environment(1), cwd=TMP)
        try:
            output = Reader(watch.stdout)
            output.wait_for(r"Watching lessons/03-starter/starter\.cpp \(inotify\)")
            self.assertIn("NOT_IMPLEMENTED: task 1", output.text)
            first = len(output.text)
            self.save(SQUARE_DONE)
            output.wait_for(r"Next: task 2")
            after_first = output.text[first:]
            self.assertIn("saved: task 1: failed -> passed (+2 points)", after_first)
            self.assertNotIn("task 1 in square()", after_first)  # only what changed, and the next failing task
            self.assertIn("NOT_IMPLEMENTED: task 2 in cube()", after_first)
            self.save(SQUARE_DONE)
            output.wait_for(r"saved without a change: the last check stands \(2 of 4 points\)")
            self.save(BOTH_DONE)
            output.wait_for(r"Every case this machine can run passed")
            self.assertIn("saved: task 2: failed -> passed (+2 points)", output.text)
            watch.send_signal(signal.SIGINT)
            self.assertEqual(watch.wait(timeout=60), 0)  # the last check passed
            output.join(timeout=10)
            while not output.lines.empty():
                output.text += output.lines.get()
            self.assertIn("Stopped watching.", output.text)
            self.assertNotIn("Traceback", output.text)
        finally:
            if watch.poll() is None:
                watch.kill()
                watch.wait()
            watch.stdout.close()

    def test_it_stops_on_its_time_out_and_can_poll(self):
        start = time.monotonic()
        done = course("watch", "01", "--poll", "--timeout", "2")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("(polling twice a second)", done.stdout)
        self.assertIn("Stopped watching: --timeout 2 s reached.", done.stdout)
        self.assertLess(time.monotonic() - start, 120)

    def test_with_json_each_check_is_one_line(self):
        done = course("watch", "03", "--json", "--timeout", "1")
        lines = done.stdout.splitlines()
        self.assertEqual(len(lines), 1, done.stdout)
        self.assertEqual((json.loads(lines[0])["earned"], done.returncode), (0, 1))


class Hints(unittest.TestCase):
    def setUp(self):
        (COURSE / "build" / "course-state" / "hints.json").unlink(missing_ok=True)  # no hint shown yet

    def test_the_readmes_hints_come_one_at_a_time_in_order(self):
        first = course("hint", "03", "1")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("Lesson 03, starter, task 1: hint 1 of 3", first.stdout)
        self.assertIn("Multiply.", first.stdout)
        self.assertNotIn("A number times itself", first.stdout)
        second = course("hint", "03", "1")
        self.assertIn("hint 2 of 3", second.stdout)
        self.assertIn("A number times itself,\non two lines.", second.stdout)
        third = course("hint", "03", "1")
        self.assertIn("hint 3 of 3: the test does not build", third.stdout)  # "Task 1 or 2: ..." counts for both
        self.assertIn("That was the last hint of task 1", third.stdout)
        self.assertIn("No more hints for task 1", course("hint", "03", "1").stdout)
        self.assertIn("hint 1 of 3", course("hint", "03", "1", "--restart").stdout)

    def test_step_by_step_comes_last_and_all_prints_every_hint(self):
        rc, shown = course_json("hint", "03", "2", "--all")
        self.assertEqual(rc, 0)
        self.assertEqual([hint["title"] for hint in shown["hints"]],
                         ["the result is a square", "the test does not build", "cube, step by step"])

    def test_a_hints_file_comes_before_the_readme(self):
        rc, shown = course_json("hint", "01", "1", "--all")
        self.assertEqual([hint["title"] for hint in shown["hints"]], ["Look at the test", "Step by step"])
        self.assertIn("## not a heading: inside a code block", shown["hints"][1]["text"])
        self.assertEqual(shown["source"], "lessons/01-passing/hints/task-1.md")

    def test_a_task_without_hints_is_an_error_that_names_those_with(self):
        done = course("hint", "03", "3")
        self.assertEqual(done.returncode, 2)
        self.assertIn("has no hints for task 3 (tasks with hints: 1, 2)", done.stderr)


class Reset(unittest.TestCase):
    """Lesson 02's file (a wrong attempt in the fixture) plays the starter."""

    FILE = "lessons/02-assertion/assertion.cpp"

    def setUp(self):
        self.root = TMP / f"reset-{self._testMethodName}"
        shutil.copytree(FIXTURE, self.root)
        self.starter = (self.root / self.FILE).read_text()

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def edit(self):
        (self.root / self.FILE).write_text(self.starter + "// my work\n")

    def backups(self):
        return sorted((self.root / self.FILE).parent.glob("assertion.cpp.*"))

    def test_it_refuses_without_yes_then_keeps_the_students_file_beside_the_starter(self):
        kept = self.root / ".course" / "starters" / "02-assertion" / "assertion.cpp"
        kept.parent.mkdir(parents=True)
        kept.write_text(self.starter)
        self.edit()
        refused = course("reset", "02", course_root=self.root)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("differs from the starter (1 lines added or removed)", refused.stderr)
        self.assertEqual(self.backups(), [])
        self.assertIn("// my work", (self.root / self.FILE).read_text())
        done = course("reset", "02", "--yes", course_root=self.root)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("the starter is back (.course/starters/02-assertion/assertion.cpp)", done.stdout)
        self.assertEqual((self.root / self.FILE).read_text(), self.starter)
        backups = self.backups()
        self.assertEqual(len(backups), 1)
        self.assertRegex(backups[0].name, r"^assertion\.cpp\.\d{8}-\d{6}$")
        self.assertIn("// my work", backups[0].read_text())
        again = course("reset", "02", course_root=self.root)
        self.assertEqual(again.returncode, 0)
        self.assertIn("is the starter already", again.stdout)
        rc, said = course_json("reset", "02", course_root=self.root)
        self.assertEqual((rc, said["status"], said["kept"]), (0, "unchanged", None))

    @unittest.skipIf(not shutil.which("git"), "git is not installed")
    def test_in_a_git_checkout_the_starter_is_the_committed_file(self):
        git = ["git", "-C", str(self.root), "-c", "user.name=t", "-c", "user.email=t@t"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the course"]):
            subprocess.run(git + args, check=True, capture_output=True)
        self.edit()
        done = course("reset", "02", "--yes", course_root=self.root)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("(git HEAD:lessons/02-assertion/assertion.cpp)", done.stdout)
        self.assertEqual((self.root / self.FILE).read_text(), self.starter)
        self.assertEqual(len(self.backups()), 1)
        wrong = course("reset", "02", "--yes", "--from", "no-such-revision", course_root=self.root)
        self.assertEqual(wrong.returncode, 2)

    def test_without_a_kept_starter_or_git_it_says_so_and_changes_nothing(self):
        self.edit()
        done = course("reset", "02", "--yes", course_root=self.root)
        self.assertEqual(done.returncode, 2)
        self.assertIn("no starter to go back to", done.stderr)
        self.assertIn("// my work", (self.root / self.FILE).read_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
