# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Where a grader run spends its time (`grade.py --profile`).

Every step the grader takes is recorded as one row: the submission, the lesson ('' for a step of
the whole submission or run), the step, its seconds, and a detail (a case's name, how a run
ended). The steps, in the order they happen:

    sandbox start          once per grader run: /bin/true inside the sandbox, what every sandboxed run pays
    gpu probe              once per grader run: the grader's own GPU count, outside and inside the sandbox
    stage                  per submission: the course copied outside itself, the student files put in place
    configure              per submission: meson setup (skipped when the build folder is configured already)
    build all lessons      per submission: one sandboxed build of every graded lesson at once
    compile student file   per lesson: the student's object, from Ninja's log of that build
    link                   per lesson: the test program, from Ninja's log
    build lesson           per lesson: the lesson's own sandboxed build (its log; nothing left to do when the
                           build of all lessons built it)
    source checks, object checks   per lesson: integrity.py before the build and on the student's object
    list cases             per lesson: --list-tests in the sandbox
    shared run             per lesson: one process running many cases (detail: how many, how it ended)
    case                   per case of a shared run: from the previous result (the first case's from the
                           process's start, so it holds CUDA's and NCCL's start-up)
    alone                  per case run again in a process of its own
    reports                per submission: report.txt, results.json, junit.xml, machine.json, logs/

`profile.json` holds the rows; `profile.txt` a table of them with each lesson's total.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path


class Profile:
    """The rows of one grader run."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.submission = ""  # the submission being graded now
        self._start = time.monotonic()

    def add(self, step: str, seconds: float, lesson: str = "", detail: str = "", submission: str | None = None,
            **extra) -> None:
        row = {"submission": self.submission if submission is None else submission, "lesson": lesson,
               "step": step, "seconds": round(seconds, 3), "detail": detail,
               "at": round(time.monotonic() - self._start, 3)}
        row.update(extra)
        self.rows.append(row)

    @contextlib.contextmanager
    def span(self, step: str, lesson: str = "", detail: str = ""):
        start = time.monotonic()
        try:
            yield
        finally:
            self.add(step, time.monotonic() - start, lesson, detail)

    def add_runs(self, lesson: str, timings: list[dict]) -> None:
        """The shared runs, cases and lone runs that catch2_runner.run_cases recorded."""
        for timing in timings:
            if timing["step"] == "shared run":
                self.add("shared run", timing["seconds"], lesson,
                         f"{timing['cases']} cases, {timing['reported']} reported, ended: {timing['ended']}")
            elif timing["step"] == "case":
                self.add("case", timing["seconds"], lesson, timing["case"], status=timing["status"],
                         first=timing["first"])
            else:
                self.add("alone", timing["seconds"], lesson, timing["case"], status=timing["status"])

    def lesson_totals(self) -> dict[tuple[str, str], float]:
        """{(submission, lesson): seconds} over the steps that are not parts of another step."""
        totals: dict[tuple[str, str], float] = {}
        for row in self.rows:
            if row["lesson"] and row["step"] not in PARTS:
                key = (row["submission"], row["lesson"])
                totals[key] = totals.get(key, 0.0) + row["seconds"]
        return totals

    def text(self) -> str:
        """The rows as a table, then each lesson's total and the run's."""
        lines = [f"{'at s':>8} {'seconds':>8}  {'submission':16} {'lesson':20} {'step':22} detail"]
        for row in self.rows:
            step = ("  " if row["step"] in PARTS else "") + row["step"]
            lines.append(f"{row['at']:8.1f} {row['seconds']:8.2f}  {row['submission'][:16]:16} "
                         f"{row['lesson'][:20]:20} {step:22} {row['detail']}")
        lines.append("")
        lines.append("per lesson (build lesson, checks, listing, runs; not counting the shared build of all lessons):")
        for (submission, lesson), seconds in self.lesson_totals().items():
            lines.append(f"  {submission[:16]:16} {lesson:20} {seconds:8.1f} s")
        lines.append(f"whole run: {time.monotonic() - self._start:.1f} s")
        return "\n".join(lines) + "\n"

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile.json").write_text(json.dumps({"rows": self.rows}, indent=1) + "\n")
        (out / "profile.txt").write_text(self.text())


# Steps that are parts of another step (not added again into a lesson's total).
PARTS = frozenset({"case", "compile student file", "link"})


def ninja_log_offset(build: Path) -> int:
    """Where Ninja's log of `build` ends now (read the steps of a build that starts after this)."""
    try:
        return (build / ".ninja_log").stat().st_size
    except OSError:
        return 0


def ninja_steps(build: Path, offset: int) -> dict[str, float]:
    """{output: seconds} of what Ninja built since `offset` in its log."""
    try:
        with open(build / ".ninja_log", "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return {}
    steps = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 4 and fields[0].isdigit() and fields[1].isdigit():
            steps[fields[3]] = (int(fields[1]) - int(fields[0])) / 1000
    return steps
