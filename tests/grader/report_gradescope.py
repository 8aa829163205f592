# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Gradescope's results.json: one test entry per task (lesson + task number).

    {"score": 12, "output": "Graded on ...", "extra_data": {...},
     "tests": [{"name": "02-assertion task 1", "number": "02.1", "score": 0, "max_score": 2,
                "status": "failed", "output": "FAILED (2 pt) multiplies ...: REQUIRE( ... )"}]}

A task whose cases were all skipped is worth 0 of 0; its name says "(ungraded)" (or, for a
lesson that was missing or did not build, that status: "(missing)"), its output says why, and
its status is "failed": Gradescope shows a test without a status by its score, and 0 of 0
reads as passed to a student whose points were never graded.
"""

from __future__ import annotations

from catch2_runner import PASSED, SKIPPED, CaseResult
from machine import describe
from scoring import Grade, LessonGrade, label
from text_safety import printable_tree


def results_json(grade: Grade, seconds: float) -> dict:
    """The whole results.json document, every text in it printable (text_safety: a failure
    message's escape codes are written as `\\x1b`, not as the character)."""
    tests = []
    for lesson in grade.lessons:
        tests += lesson_tests(lesson)
    summary = f"{grade.earned}/{grade.possible} points"
    if grade.ungraded:
        summary += f"; {grade.ungraded_note()} (the skipped cases below say what each needs)"
    summary += "".join(f"\n  {lesson.lesson.slug}: {lesson.status()}" for lesson in grade.lessons)
    summary += "".join(f"\n  {lesson.lesson.slug} graded {lesson.graded_file}" for lesson in grade.lessons
                       if lesson.graded_file)
    return printable_tree({
        "score": grade.earned,
        "execution_time": round(seconds),
        "output": f"Graded on: {describe(grade.machine)}\nSandbox: {grade.sandbox}\n{summary}"
                  + ("\nFindings:\n" + "\n".join(f"  {finding}" for finding in grade.findings) if grade.findings else ""),
        "tests": tests,
        "extra_data": {"student": grade.student, "possible": grade.possible, "ungraded": grade.ungraded,
                       "ungraded_note": grade.ungraded_note(),
                       "machine": grade.machine, "sandbox": grade.sandbox, "findings": grade.findings,
                       "warnings": grade.warnings},
    })


def lesson_tests(lesson: LessonGrade) -> list[dict]:
    """The lesson's task entries; one entry for the lesson when its cases are unknown."""
    if not lesson.results:
        if not lesson.problem:
            return []
        return [{"name": f"{lesson.lesson.slug} ({label(lesson.problem_status)})", "number": lesson.lesson.number,
                 "score": 0, "max_score": 0, "status": "failed",
                 "output": f"{label(lesson.problem_status).upper()}: {lesson.problem}\n"
                           "(Possible points unknown until the lesson builds.)"}]
    tasks: dict[int, list[CaseResult]] = {}
    for result in lesson.results:
        tasks.setdefault(result.case.task if result.case.task is not None else 0, []).append(result)
    return [task_entry(lesson, task, results) for task, results in sorted(tasks.items())]


def task_entry(lesson: LessonGrade, task: int, results: list[CaseResult]) -> dict:
    """One task: its score, its maximum, and each case's line."""
    graded = [r for r in results if r.status != SKIPPED]
    entry = {
        "name": f"{lesson.lesson.slug} task {task}",
        "number": f"{lesson.lesson.number}.{task}",
        "score": sum(r.case.points for r in graded if r.status == PASSED),
        "max_score": sum(r.case.points for r in graded),
        "output": "\n".join(case_line(r) for r in results),
    }
    if graded:
        entry["status"] = "passed" if all(r.status == PASSED for r in graded) else "failed"
    elif lesson.problem:
        entry["name"] += f" ({label(lesson.problem_status)})"
        entry["status"] = "failed"
        entry["output"] = (f"{label(lesson.problem_status).upper()}: {lesson.problem}\n(These cases also need more "
                           "GPUs than the machine that graded this has: their points are not counted here.)\n"
                           + "\n".join(f"{label(lesson.problem_status).upper()} ({r.case.points} pt) {r.case.name}"
                                        for r in results))
    else:
        entry["name"] += " (ungraded)"
        entry["status"] = "failed"
        entry["output"] = ("UNGRADED on this machine: every case of this task was skipped (its points are in no "
                           "score; the machine lacks the GPUs they need).\n" + entry["output"])
    return entry


def case_line(result: CaseResult) -> str:
    """'PASSED (2 pt) name' or 'FAILED (2 pt) name: message' (message lines indented)."""
    head = f"{label(result.status).upper()} ({result.case.points} pt) {result.case.name}"
    if not result.message:
        return head
    return head + ":\n" + "\n".join("    " + line for line in result.message.splitlines())
