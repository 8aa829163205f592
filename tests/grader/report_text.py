# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The terminal table (also written as report.txt).

    Lesson        Points  Cases passed  Cases lost  Cases skipped  Points ungraded  Status  |  Findings
    01-passing       5/5             3           0              0                0  passed
    02-assertion     1/3             1           1              0                0  failed 1 of 2 cases: REQUIRE( ... ) ...
    03-starter       0/4             0           2              0                0  missing: no file starter.cpp in the submission
    04-two-gpus      0/0             0           0              2                5  ungraded: needs 2 GPUs, found 0
    TOTAL           6/12             4           3              2                5
    graded 12 of 17 points here; 5 points need more GPUs than this machine has (--require-gpus makes that an error)

"Cases ..." count test cases; "Points ungraded" counts the points of the cases skipped for
missing GPUs, and the line under the total says what that means. "Status" says why a lesson
lost points, in the words of the class CSV (scoring.LessonGrade.status). Then one short line
per case that lost points, and every finding (what a person should look at: refused headers or
symbols, too much output, time-outs). Control characters are escaped (text_safety.printable).
"""

from __future__ import annotations

from catch2_runner import SKIPPED
from machine import describe
from scoring import AMBIGUOUS, BUILD_FAILED, INVALID, LOST, MISSING, REJECTED, Grade, label, short_findings
from text_safety import printable

STATUS_WIDTH = 100  # the status column: a lesson's first error or failure, cut to this many characters
CASE_LINE_WIDTH = 160


def clip(text: str, width: int) -> str:
    """The text on one line, its control characters escaped, cut to `width` characters with '...'."""
    text = " ".join(printable(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def render(grade: Grade) -> str:
    """The whole report of one grade; every text a graded program wrote is printable
    (text_safety: no escape sequence reaches the terminal that shows it)."""
    lines = [f"Grade of: {grade.source}", f"Machine:  {describe(grade.machine)}", f"Sandbox:  {grade.sandbox}", ""]
    lines += _table(grade)
    if grade.ungraded:
        lines.append(grade.ungraded_note())
    lines += _lost_cases(grade)
    graded = [f"  {lesson.lesson.slug}: {lesson.graded_file}" for lesson in grade.lessons if lesson.graded_file]
    if graded:
        lines += ["", "Files graded (in the submission):"] + graded
    if grade.findings:
        lines += ["", "Findings (for a person to look at):"] + [f"  {finding}" for finding in grade.findings]
    lines += _ungraded_note(grade)
    if grade.warnings:
        lines += ["", "Warnings:"] + [f"  {warning}" for warning in grade.warnings]
    return printable("\n".join(lines) + "\n")


def _table(grade: Grade) -> list[str]:
    header = ["Lesson", "Points", "Cases passed", "Cases lost", "Cases skipped", "Points ungraded",
              "Status  |  Findings"]
    rows = []
    for lesson in grade.lessons:
        if lesson.cases_known:
            counts = [str(lesson.count("passed")), str(len(lesson.lost_results)), str(lesson.count(SKIPPED))]
            points = f"{lesson.earned}/{lesson.possible}"
        else:
            counts, points = ["-", "-", "-"], f"{lesson.earned}/?"
        status = printable(lesson.status(STATUS_WIDTH), keep="")
        findings = printable(short_findings(lesson.findings), keep="")
        rows.append([lesson.lesson.slug, points] + counts +
                    [str(lesson.ungraded), status + (f"  |  {findings}" if findings else "")])
    totals = [sum(lesson.count("passed") for lesson in grade.lessons),
              sum(len(lesson.lost_results) for lesson in grade.lessons),
              sum(lesson.count(SKIPPED) for lesson in grade.lessons)]
    rows.append(["TOTAL", f"{grade.earned}/{grade.possible}"] + [str(n) for n in totals] + [str(grade.ungraded), ""])
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header) - 1)]

    def line(row: list[str]) -> str:
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, len(widths))]
        return ("  ".join(cells) + "  " + row[-1]).rstrip()

    separator = "-" * (sum(widths) + 2 * len(widths) + len(header[-1]))
    return [line(header), separator] + [line(row) for row in rows[:-1]] + [separator, line(rows[-1])]


def _lost_cases(grade: Grade) -> list[str]:
    """One line per case that lost points; one per lesson that did not build or was missing."""
    lines = []
    for lesson in grade.lessons:
        if lesson.problem_status in (BUILD_FAILED, MISSING, REJECTED, INVALID, AMBIGUOUS):
            lines.append(f"  {lesson.lesson.slug}: {label(lesson.problem_status)}: {lesson.problem.splitlines()[0]}")
            continue
        for result in lesson.results:
            if result.status in LOST:
                text = f"{lesson.lesson.slug} \"{result.case.name}\" ({result.case.points} pt): " \
                       f"{label(result.status)}: {result.summary}"
                lines.append("  " + clip(text, CASE_LINE_WIDTH))
    return (["", "Lost points:"] + lines) if lines else []


def _ungraded_note(grade: Grade) -> list[str]:
    notes = []
    if grade.ungraded:
        notes.append(f"Ungraded: {grade.ungraded_note()}. Which cases, and the GPUs each needs: results.json, "
                     "junit.xml and logs/.")
    unknown = [lesson.lesson.slug for lesson in grade.lessons if not lesson.cases_known]
    if unknown:
        notes.append(f"Possible points unknown for {', '.join(unknown)} (the lesson did not build): "
                     "they are not in the total.")
    return ([""] + notes) if notes else []
