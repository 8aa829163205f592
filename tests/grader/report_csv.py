# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The CSV of a batch: one row per student, each lesson's points beside its status.

    student,01-passing,01-passing status,02-assertion,02-assertion status,total,possible,ungraded,graded here,findings,problem
    alice,5,passed,1,failed 1 of 2 cases: REQUIRE( ... ) ...,6,8,0,all 8 points,,02-assertion: failed 1 of 2 cases
    carol,0,refused: passing.cpp calls exit() (...),3,...,"01-passing: refused: calls exit() (...)",01-passing: refused
    bob,,,,,,,,,,"internal error: ..."      (a student the grader itself failed on)

- `<lesson>`: the points earned; `<lesson> status`: "passed", or why points were lost (missing,
  does not build: <first error>, refused: <why>, failed / crashed / timed out N of M cases:
  <first message>), and the points ungraded for missing GPUs (scoring.LessonGrade.status).
- `total`, `possible`: the points earned and the points graded on this machine (`possible`
  excludes ungraded points, so it can differ between machines, never between students graded
  on the same machine); `ungraded`: the points of the cases skipped for missing GPUs; `graded
  here`: "all N points", or "graded N of M points here; K points need more GPUs than this
  machine has (--require-gpus makes that an error)".
- `findings`: what a person should read (refused headers or symbols, too much output,
  time-outs), separated by " | ".
- Every text cell is made safe (text_safety.csv_cell): control characters escaped (`\x1b`), and
  an apostrophe before a cell that would start a spreadsheet formula (`'=...`).
- `problem`: each lesson that lost points, with its status in short ("01-passing: does not
  build; 03-starter: missing"); empty for a student who lost nothing. For a student without a
  grade it says why ("internal error: ...", or the Slurm merge's "not graded: Slurm job ...").
"""

from __future__ import annotations

import csv
from pathlib import Path

from course_layout import Lesson
from scoring import Grade
from text_safety import csv_cell

STATUS_WIDTH = 160  # a lesson's status cell: its first error or failure, cut to this many characters
STATUS = " status"  # the status column of lesson L is named L + STATUS


def clip(text: str, width: int = STATUS_WIDTH) -> str:
    """The text on one line, cut to `width` characters with '...'."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def header(lessons: list[str]) -> list[str]:
    """The CSV's first row, for these lesson slugs."""
    columns = ["student"]
    for slug in lessons:
        columns += [slug, slug + STATUS]
    return columns + ["total", "possible", "ungraded", "graded here", "findings", "problem"]


def ungraded_row(student: str, lessons: int, problem: str) -> list[str]:
    """The row of a student without a grade (the grader failed on them, or a Slurm task gave no
    result): every cell empty but the student and the problem."""
    return [student] + [""] * (2 * lessons + 5) + [problem]


def row(student: str, lessons: list[Lesson], grade: Grade | None, problem: str) -> list:
    """One student's row; a student the grader failed on (grade None) has only the problem."""
    if grade is None:
        return ungraded_row(student, len(lessons), problem)
    graded = {lesson_grade.lesson.slug: lesson_grade for lesson_grade in grade.lessons}
    cells: list = [student]
    for lesson in lessons:
        lesson_grade = graded.get(lesson.slug)
        cells += [lesson_grade.earned, lesson_grade.status(STATUS_WIDTH)] if lesson_grade else ["", ""]
    lost = "; ".join(f"{lesson.lesson.slug}: {lesson.short_status()}" for lesson in grade.lost_lessons())
    every_point = f"all {grade.possible} points"
    return cells + [grade.earned, grade.possible, grade.ungraded, grade.ungraded_note() or every_point,
                    " | ".join(grade.findings), "; ".join(part for part in (problem, lost) if part)]


def write_table(path: Path, first: list[str], rows: list[list]) -> None:
    """The header and the rows, as Python's csv module writes them (a Slurm merge rewrites the
    rows its tasks wrote through this same function, so its CSV is byte for byte a local one).
    Every text cell goes through text_safety.csv_cell: control characters escaped, and no cell
    starts a spreadsheet formula (what a student's program printed is in the status cells)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow([csv_cell(cell) for cell in first])
        writer.writerows([csv_cell(cell) for cell in row] for row in rows)


def write_csv(path: Path, lessons: list[Lesson], rows: list[tuple[str, Grade | None, str]]) -> None:
    """rows: (student, grade or None, problem text)."""
    write_table(path, header([lesson.slug for lesson in lessons]),
                [row(student, lessons, grade, problem) for student, grade, problem in rows])
