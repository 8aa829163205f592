# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The CSV of a batch: one row per student.

    student,01-passing,02-assertion,...,total,possible,ungraded,findings,problem
    alice,5,3,...,21,21,5,,
    carol,0,3,...,3,21,5,"01-passing: refused: calls exit() (...)",
    bob,,,...,,,,,"internal error: ..."      (a student the grader itself failed on)

`ungraded` counts points (of cases skipped for missing GPUs); `findings` lists, separated by
" | ", what a person should read: refused headers or symbols, too much output, time-outs.

`possible` excludes ungraded points (cases skipped on this machine), so it can differ
between machines; it does not differ between students graded on the same machine.
"""

from __future__ import annotations

import csv
from pathlib import Path

from course_layout import Lesson
from scoring import Grade


def header(lessons: list[str]) -> list[str]:
    """The CSV's first row, for these lesson slugs."""
    return ["student"] + lessons + ["total", "possible", "ungraded", "findings", "problem"]


def row(student: str, lessons: list[Lesson], grade: Grade | None, problem: str) -> list:
    """One student's row; a student the grader failed on (grade None) has only the problem."""
    if grade is None:
        return [student] + [""] * (len(lessons) + 4) + [problem]
    earned = {lesson_grade.lesson.slug: lesson_grade.earned for lesson_grade in grade.lessons}
    return [student] + [earned.get(lesson.slug, "") for lesson in lessons] + \
        [grade.earned, grade.possible, grade.ungraded, " | ".join(grade.findings), problem]


def write_table(path: Path, first: list[str], rows: list[list]) -> None:
    """The header and the rows, as Python's csv module writes them (a Slurm merge rewrites the
    rows its tasks wrote through this same function, so its CSV is byte for byte a local one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(first)
        writer.writerows(rows)


def write_csv(path: Path, lessons: list[Lesson], rows: list[tuple[str, Grade | None, str]]) -> None:
    """rows: (student, grade or None, problem text)."""
    write_table(path, header([lesson.slug for lesson in lessons]),
                [row(student, lessons, grade, problem) for student, grade, problem in rows])
