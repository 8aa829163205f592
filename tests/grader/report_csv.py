# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The CSV of a batch: one row per student.

    student,01-passing,02-assertion,...,total,possible,ungraded,problem
    alice,5,3,...,21,21,5,
    bob,,,...,,,,"internal error: ..."      (a student the grader itself failed on)

`possible` excludes ungraded points (cases skipped on this machine), so it can differ
between machines; it does not differ between students graded on the same machine.
"""

from __future__ import annotations

import csv
from pathlib import Path

from course_layout import Lesson
from scoring import Grade


def write_csv(path: Path, lessons: list[Lesson], rows: list[tuple[str, Grade | None, str]]) -> None:
    """rows: (student, grade or None, problem text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        header = ["student"] + [lesson.slug for lesson in lessons] + ["total", "possible", "ungraded", "problem"]
        writer.writerow(header)
        for student, grade, problem in rows:
            if grade is None:
                writer.writerow([student] + [""] * (len(lessons) + 3) + [problem])
                continue
            earned = {lesson_grade.lesson.slug: lesson_grade.earned for lesson_grade in grade.lessons}
            writer.writerow([student] + [earned.get(lesson.slug, "") for lesson in lessons] +
                            [grade.earned, grade.possible, grade.ungraded, problem])
