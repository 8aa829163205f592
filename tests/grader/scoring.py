# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Points: what a lesson and a whole submission earned, could earn, and could not be graded.

- A case is worth the points of its `[points:N]` tag, earned only when it passed.
- A skipped case (e.g. "needs 2 GPUs, found 1") is ungraded: its points leave the possible
  total, and the report says why.
- A lesson that could not be built or was not submitted keeps the cases of the course's
  own program (when they are known), each marked `build_failed` or `missing`, worth 0; so
  does a lesson whose object the integrity check refused (`rejected`, never run) and one whose
  result channel held what the course's listener never writes (`invalid`).
- Findings are what a person should look at: refused headers or symbols, too much output,
  time-outs, processes left running, a tampered result channel.
- Every lesson has a status in words (`LessonGrade.status()`): "passed", or why it lost points
  ("missing", "does not build: <first error>", "refused: <why>", "failed 2 of 5 cases: <first
  failure>", "crashed 1 of 2 cases: SIGSEGV ...", "timed out ..."), and what is ungraded. The
  terminal table and the class CSV both show it, so no lost point goes without its reason.
"""

from __future__ import annotations

import dataclasses
import re

from catch2_runner import CRASHED, FAILED, PASSED, SKIPPED, TIMED_OUT, CaseResult
from course_layout import Lesson

BUILD_FAILED = "build_failed"  # the lesson's program did not compile, link, or list its cases
MISSING = "missing"  # the submission has no file for this lesson
REJECTED = "rejected"  # the integrity check refused the student's object: it was never run
INVALID = "invalid"  # the result channel held extra, repeated or malformed results
AMBIGUOUS = "ambiguous"  # the submission holds several files that could be the lesson's: none was graded
LOST = (FAILED, CRASHED, TIMED_OUT, BUILD_FAILED, MISSING, REJECTED, INVALID, AMBIGUOUS)
# Errors of the machine rather than of the student's code: CUDA without a driver or a device.
MACHINE_ERROR = re.compile(r"cudaErrorInsufficientDriver|cudaErrorNoDevice|CUDA driver version is insufficient"
                           r"|no CUDA-capable device|cudaErrorSystemDriverMismatch|ncclSystemError")


@dataclasses.dataclass
class LessonGrade:
    """The results of one lesson."""

    lesson: Lesson
    results: list[CaseResult] = dataclasses.field(default_factory=list)
    problem: str = ""  # why the lesson's program could not run, if it could not
    problem_status: str = ""  # BUILD_FAILED, MISSING, REJECTED or INVALID when `problem` is set
    log: str = ""  # build log and per-case output, for the logs folder
    findings: list[str] = dataclasses.field(default_factory=list)  # what a person should look at
    graded_file: str = ""  # the submission's file that was graded ("v2/x.cu (812 bytes)"), when one was

    @property
    def cases_known(self) -> bool:
        """False when the lesson could not be built and its cases are unknown."""
        return bool(self.results) or not self.problem

    @property
    def earned(self) -> int:
        return sum(r.case.points for r in self.results if r.status == PASSED)

    @property
    def possible(self) -> int:
        return sum(r.case.points for r in self.results if r.status != SKIPPED)

    @property
    def ungraded(self) -> int:
        return sum(r.case.points for r in self.results if r.status == SKIPPED)

    def count(self, *statuses: str) -> int:
        return sum(1 for r in self.results if r.status in statuses)

    @property
    def lost_results(self) -> list[CaseResult]:
        return [r for r in self.results if r.status in LOST]

    @property
    def graded_cases(self) -> int:
        return sum(1 for r in self.results if r.status != SKIPPED)

    def status(self, width: int | None = None) -> str:
        """Why the lesson lost points, or "passed", on one line; ungraded points are named too.
        With `width`, the reason is cut so that the whole fits, never the ungraded part.

            passed
            missing: no file x.cu in the submission
            does not build: lessons/01-x/x.cpp:2:40: error: expected ';' before '}' token
            refused: x.cpp calls exit() (process control ...)
            failed 2 of 5 cases: "adds two numbers": REQUIRE( f(2) == 4 ) with expansion: 3 == 4
            lost 2 of 5 cases (1 failed and 1 crashed): "reads a file": crashed: SIGSEGV (signal 11) ...
            passed; 5 pt ungraded (needs 2 GPUs, found 0)
            ungraded: 3 pt need 2 GPUs, 2 pt need 1 GPU; found 0
        """
        skips = [r for r in self.results if r.status == SKIPPED]
        ungraded = f"{self.ungraded} pt ungraded ({self.skip_reason()})" if skips and self.graded_cases else ""
        if self.problem:
            head = f"{label(self.problem_status)}: {one_line(self.problem)}"
        elif not self.results:
            head = "no test cases"
        elif not self.graded_cases:
            return clip(f"{label(SKIPPED)}: {self.skip_reason()}", width)
        elif not self.lost_results:
            head = "passed"
        else:
            head = f"{self.lost_counts()}: {self._first_lost()}"
        tail = f"; {ungraded}" if ungraded else ""
        return clip(head, None if width is None else max(20, width - len(tail))) + tail

    def skip_reason(self) -> str:
        """Why the skipped cases are ungraded: the first one's message ('needs 2 GPUs, found 1'), or, where
        they need different GPU counts, the points per count ('4 pt need 2 GPUs, 2 pt need 1 GPU; found 1')."""
        skips = [r for r in self.results if r.status == SKIPPED]
        by_gpus: dict[int, int] = {}
        for r in skips:
            if r.gpu_skip:
                by_gpus[r.case.gpus] = by_gpus.get(r.case.gpus, 0) + r.case.points
        if len(by_gpus) < 2:
            return skips[0].summary if skips else ""
        found = next((m.group(1) for r in skips if (m := _FOUND.search(r.message))), None)
        return gpu_needs(by_gpus, None if found is None else int(found))

    def lost_counts(self) -> str:
        """'failed 2 of 5 cases', or 'lost 3 of 5 cases (2 failed and 1 crashed)' when they differ."""
        counts = {status: self.count(status) for status in LOST if self.count(status)}
        total, graded = sum(counts.values()), self.graded_cases
        cases = "case" if graded == 1 else "cases"
        if len(counts) == 1:
            return f"{label(next(iter(counts)))} {total} of {graded} {cases}"
        parts = [f"{number} {label(status)}" for status, number in counts.items()]
        return f"lost {total} of {graded} {cases} ({', '.join(parts[:-1])} and {parts[-1]})"

    def _first_lost(self) -> str:
        """The case that says most about the student's code, named, with its message: the first
        lost case whose message is not an error of the machine (no driver, no device), which
        every case of a GPU-less machine shares."""
        lost = self.lost_results
        first = next((r for r in lost if not MACHINE_ERROR.search(r.message)), lost[0])
        kinds = {r.status for r in lost}
        named = f'"{first.case.name}": {first.summary}'
        return named if len(kinds) == 1 else f'"{first.case.name}": {label(first.status)}: {first.summary}'

    def first_lost_case(self) -> CaseResult | None:
        """The case _first_lost names (None when none was lost)."""
        lost = self.lost_results
        return next((r for r in lost if not MACHINE_ERROR.search(r.message)), lost[0]) if lost else None

    def short_status(self) -> str:
        """The status without its message: 'missing', 'does not build', 'failed 2 of 5 cases', ..."""
        if self.problem:
            return label(self.problem_status)
        if self.lost_results:
            return self.lost_counts()
        return "passed" if self.graded_cases else label(SKIPPED) if self.results else "no test cases"

    def first_problem(self) -> str:
        """The first reason this lesson lost points (or has ungraded points), on one line."""
        if self.problem:
            return f"{label(self.problem_status)}: {one_line(self.problem)}"
        for result in self.lost_results + [r for r in self.results if r.status == SKIPPED]:
            return f"{label(result.status)}: {result.summary}"
        return ""


@dataclasses.dataclass
class Grade:
    """The grade of one submission (or of the course's own working tree)."""

    student: str
    source: str  # what was graded, in words
    lessons: list[LessonGrade]
    machine: dict
    warnings: list[str] = dataclasses.field(default_factory=list)
    sandbox: str = "off (unknown)"  # "on (...)" or "off (why)"
    gpus_required: bool = False  # graded with --require-gpus: an ungraded point is an error

    @property
    def findings(self) -> list[str]:
        return [f"{lesson.lesson.slug}: {finding}" for lesson in self.lessons for finding in lesson.findings]

    @property
    def earned(self) -> int:
        return sum(lesson.earned for lesson in self.lessons)

    @property
    def possible(self) -> int:
        return sum(lesson.possible for lesson in self.lessons)

    @property
    def ungraded(self) -> int:
        return sum(lesson.ungraded for lesson in self.lessons)

    def lost_lessons(self) -> list[LessonGrade]:
        """The lessons that lost points (or could not be run at all)."""
        return [lesson for lesson in self.lessons if lesson.problem or lesson.lost_results]

    def ungraded_note(self) -> str:
        """'graded N of M points here; K points need more GPUs than this machine has (...)', or ''
        when every point was graded: where an ungraded count appears, this sentence goes with it."""
        return ungraded_note(self.possible, self.ungraded, self.gpus_required)

    def gpu_skips(self) -> list[tuple[LessonGrade, CaseResult]]:
        """Cases skipped because this machine has too few GPUs."""
        return [(lesson, r) for lesson in self.lessons for r in lesson.results if r.gpu_skip]


def label(status: str) -> str:
    """A status in words, for tables and messages."""
    return {PASSED: "passed", FAILED: "failed", SKIPPED: "ungraded", CRASHED: "crashed",
            TIMED_OUT: "timed out", BUILD_FAILED: "does not build", MISSING: "missing", REJECTED: "refused",
            INVALID: "invalid results", AMBIGUOUS: "ambiguous"}.get(status, status)


_FOUND = re.compile(r"\bfound (\d+)\b")  # "needs 2 GPUs, found 1"


def gpu_needs(points_by_gpus: dict[int, int], found: int | None) -> str:
    """The GPUs that ungraded cases need, counted case by case: '3 pt need 2 GPUs, 2 pt need 1 GPU; found 0'
    (most GPUs first; '; found N' where the machine's count is known)."""
    parts = [f"{pts} pt need{'s' if pts == 1 else ''} {gpus} GPU{'' if gpus == 1 else 's'}"
             for gpus, pts in sorted(points_by_gpus.items(), reverse=True)]
    return ", ".join(parts) + ("" if found is None else f"; found {found}")


def ungraded_note(possible: int, ungraded: int, required: bool = False) -> str:
    """The sentence that goes wherever a count of ungraded points appears (see Grade.ungraded_note);
    `required`: graded with --require-gpus, which made it an error already."""
    if not ungraded:
        return ""
    return (f"graded {possible} of {possible + ungraded} points here; {ungraded} points need more GPUs than this "
            "machine has " + ("(an error: --require-gpus)" if required else "(--require-gpus makes that an error)"))


def clip(text: str, width: int | None) -> str:
    """The text on one line, cut to `width` characters with '...' (None: whole)."""
    text = " ".join(text.split())
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def short_findings(findings: list[str], width: int = 60) -> str:
    """Findings on one line for a table cell: the first, and how many more."""
    if not findings:
        return ""
    first = " ".join(findings[0].split())
    first = first if len(first) <= width else first[: width - 3] + "..."
    return first + (f" (+{len(findings) - 1} more)" if len(findings) > 1 else "")


def one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())
