# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""JUnit XML (junit.xml): a testsuite per lesson, a testcase per case.

- failed                         -> <failure type="failed">
- crashed, timed_out             -> <error type="crashed"> / <error type="timed_out">
- build_failed, missing          -> <error type="build_failed"> / <error type="missing">
- skipped (ungraded)             -> <skipped message="needs 2 GPUs, found 1"/>

Each testsuite carries the lesson's points and the machine record as properties; a lesson
whose cases are unknown (it did not build) has one testcase named after its target.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from catch2_runner import FAILED, PASSED, SKIPPED, CaseResult, stderr_tail
from machine import describe
from scoring import Grade, LessonGrade
from text_safety import printable

_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def junit_xml(grade: Grade) -> str:
    """The whole document as text."""
    root = ET.Element("testsuites", name=f"grade of {grade.student}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for lesson in grade.lessons:
        suite = lesson_suite(grade, lesson)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key))
    for key, value in totals.items():
        root.set(key, str(value))
    for element in root.iter():  # every text and attribute, whoever wrote it
        element.text = xml_safe(element.text) if element.text else element.text
        element.attrib = {key: xml_safe(value) for key, value in element.attrib.items()}
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def lesson_suite(grade: Grade, lesson: LessonGrade) -> ET.Element:
    suite = ET.Element("testsuite", name=lesson.lesson.slug)
    properties = ET.SubElement(suite, "properties")
    for name, value in [("points_earned", lesson.earned), ("points_possible", lesson.possible),
                        ("points_ungraded", lesson.ungraded), ("status", lesson.status()),
                        ("ungraded_note", grade.ungraded_note()), ("student", grade.student),
                        ("machine", describe(grade.machine)), ("sandbox", grade.sandbox),
                        ("findings", " | ".join(lesson.findings))]:
        ET.SubElement(properties, "property", name=name, value=str(value))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    time = 0.0
    if not lesson.results and lesson.problem:
        case = ET.SubElement(suite, "testcase", classname=lesson.lesson.slug, name=lesson.lesson.target, time="0")
        _problem(case, "error", lesson.problem_status, lesson.problem)
        counts["tests"], counts["errors"] = 1, 1
    for result in lesson.results:
        suite.append(case_element(lesson, result))
        counts["tests"] += 1
        time += result.seconds
        if result.status == FAILED:
            counts["failures"] += 1
        elif result.status == SKIPPED:
            counts["skipped"] += 1
        elif result.status != PASSED:
            counts["errors"] += 1
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{time:.3f}")
    return suite


def case_element(lesson: LessonGrade, result: CaseResult) -> ET.Element:
    task = result.case.task if result.case.task is not None else 0
    case = ET.Element("testcase", classname=f"{lesson.lesson.slug}.task{task}", name=result.case.name,
                      time=f"{result.seconds:.3f}")
    if result.status == SKIPPED:
        ET.SubElement(case, "skipped", message=xml_safe(result.message))
    elif result.status == FAILED:
        _problem(case, "failure", result.status, result.message)
    elif result.status != PASSED:
        _problem(case, "error", result.status, result.message)
    if result.status != PASSED and stderr_tail(result.stderr):  # more than the GPU inventory
        ET.SubElement(case, "system-err").text = xml_safe(result.stderr)
    return case


def _problem(case: ET.Element, tag: str, status: str, message: str) -> None:
    first = message.splitlines()[0] if message else status
    ET.SubElement(case, tag, type=status, message=xml_safe(first)).text = xml_safe(message)


def xml_safe(text: str) -> str:
    """The text with its control characters escaped (text_safety.printable), and without the
    noncharacters XML 1.0 forbids (a program's output may hold them)."""
    return _FORBIDDEN.sub("?", printable(text))
