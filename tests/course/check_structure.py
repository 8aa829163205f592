#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# The course's structure check (suite `course`): every lesson has its reading, contract,
# starter with TODO(task N) markers, solution, test files (each built) and table entry; the task numbers
# agree between the README, the starter and the test tags; every graded test case carries
# its tags and is named in the README's "What the tests check" table; the table's student file
# is the one the grader takes from a submission (tests/grader/course_layout.py decides that, and
# this check holds the build's table to it); outside its TODO regions the starter is the
# solution, line for line; and where a lesson has hints/ files, each is one that ./course hint
# reads and the README's Hints section links to it.
"""Usage: check_structure.py COURSE_ROOT  (exit 0 when the course is consistent, 1 otherwise)."""

import difflib
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grader"))

import course_layout  # noqa: E402  the grader's rule for which file is a lesson's student file

README_SECTIONS = [
    "What you will learn",
    "Concepts and APIs",
    "Tasks",
    "What the tests check",
    "What to ignore for now",
    "Run",
    "Expected output",
    "Hints",
    "Going further",
]
SOURCE_SUFFIXES = {".cpp", ".cu", ".h", ".cuh"}
TEST_CASE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"\s*,\s*"([^"]*)"')


def lesson_folders(root):
    return sorted(p for p in (root / "lessons").iterdir() if p.is_dir() and re.match(r"\d\d-", p.name))


def student_file(lesson, root):
    """(contract header, starter): the lesson table's 'student' file, read as the grader reads it,
    and the header of the same stem."""
    name = course_layout.student_files_of_build(root).get(lesson.name)
    if name is None:
        return None, None
    starter = lesson / name
    return starter.with_suffix(".h"), starter


def lesson_entry(lesson, table):
    """The text of the lesson's entry in the table of tests/meson.build ('' when it has none)."""
    m = re.search(r"'folder':\s*'" + re.escape(lesson.name) + r"'", table)
    if not m:
        return ""
    end = re.compile(r"'folder':|^\]", re.M).search(table, m.end())
    return table[m.start():end.start() if end else len(table)]


def test_files(root, lesson, table):
    """(the lesson's test sources as the build lists them, those on disk): test_NN_name.cpp, and
    where the entry has 'tests', that list; on disk, every tests/test_NN_name*.cpp."""
    stem = f"test_{lesson.name.replace('-', '_')}"
    m = re.search(r"'tests':\s*\[([^\]]*)\]", lesson_entry(lesson, table))
    listed = re.findall(r"'([^']+)'", m.group(1)) if m else [f"{stem}.cpp"]
    on_disk = sorted(p.name for p in (root / "tests").glob(f"{stem}*.cpp")
                     if p.stem == stem or p.stem.startswith(stem + "_"))
    return [root / "tests" / name for name in listed], on_disk


def section_text(readme_text, title):
    """The text of the README section whose heading contains `title`, up to the next heading of
    the same or a higher level ('' when there is none)."""
    m = re.search(rf"^(#+) .*{re.escape(title)}.*$", readme_text, re.M | re.I)
    if not m:
        return ""
    end = re.compile(rf"^#{{1,{len(m.group(1))}}} ", re.M).search(readme_text, m.end())
    return readme_text[m.end():end.start() if end else len(readme_text)]


def todo_regions(lines):
    """(first, last) line indexes of each TODO region: a TODO(task N) line up to NOT_IMPLEMENTED("task N")."""
    regions, start, task = [], None, None
    for i, line in enumerate(lines):
        m = re.search(r"TODO\(task (\d+)\)", line)
        if m and start is None:
            start, task = i, m.group(1)
        if start is not None and f'NOT_IMPLEMENTED("task {task}")' in line:
            regions.append((start, i))
            start = None
    return regions


def differences_outside_todo(starter_lines, solution_lines):
    regions = todo_regions(starter_lines)

    def inside(i1, i2):
        if i1 == i2:  # an insertion before starter line i1
            return any(first <= i1 <= last + 1 for first, last in regions)
        return any(first <= i1 and i2 - 1 <= last for first, last in regions)

    matcher = difflib.SequenceMatcher(a=starter_lines, b=solution_lines, autojunk=False)
    problems = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal" and not inside(i1, i2):
            shown = (starter_lines[i1:i2] or solution_lines[j1:j2])[:3]
            problems.append(f"starter line {i1 + 1} / solution line {j1 + 1} differ outside a TODO region: "
                            + " | ".join(s.strip() for s in shown))
    return problems


def check_lesson(root, lesson, table):
    problems = []
    name = lesson.name
    readme = lesson / "README.md"
    header, starter = student_file(lesson, root)
    solution = root / "solutions" / name / starter.name if starter else None
    if starter is None:
        return [f"{name}: not listed (with its 'student' file) in the lesson table of tests/meson.build"]
    tests, on_disk = test_files(root, lesson, table)
    for path, what in [(readme, "README.md"), (header, "a contract header"), (starter, "a starter file"),
                       (solution, "a solution")] + [(t, "a test file") for t in tests]:
        if path is None or not path.exists():
            problems.append(f"{name}: no {what}" + (f" ({path.relative_to(root)})" if path else ""))
    unbuilt = sorted(set(on_disk) - {t.name for t in tests})
    if unbuilt:
        problems.append(f"{name}: tests/{', tests/'.join(unbuilt)} not in the entry's 'tests' list of "
                        "tests/meson.build: its cases would never run")
    if problems:
        return problems

    readme_text = readme.read_text()
    for section in README_SECTIONS:
        if not re.search(rf"^##+ .*{re.escape(section)}", readme_text, re.M | re.I):
            problems.append(f"{name}: README.md has no section '{section}'")

    starter_text, solution_text = starter.read_text(), solution.read_text()
    readme_tasks = set(re.findall(r"^###+ Task (\d+)", readme_text, re.M))
    todo_tasks = set(re.findall(r"TODO\(task (\d+)\)", starter_text))
    stub_tasks = set(re.findall(r'NOT_IMPLEMENTED\("task (\d+)"\)', starter_text))
    test_texts = {t.name: t.read_text() for t in tests}
    cases = [case for text in test_texts.values() for case in TEST_CASE.findall(text)]
    tag_tasks = set()
    for case_name, tags in cases:
        if "[." in tags:  # hidden helper cases (run as child processes) are not graded
            continue
        for needed in (f"[{name}]", "[task:", "[gpus:", "[points:"):
            if needed not in tags:
                problems.append(f"{name}: test case '{case_name}' has no {needed} tag")
        tag_tasks.update(re.findall(r"\[task:(\d+)\]", tags))
        if case_name not in section_text(readme_text, "What the tests check"):
            problems.append(f"{name}: test case '{case_name}' is not named in the README's 'What the tests check' table")
    if not todo_tasks:
        problems.append(f"{name}: the starter has no TODO(task N) marker")
    for label, tasks in [("README headings '### Task N'", readme_tasks),
                         ('NOT_IMPLEMENTED("task N") calls in the starter', stub_tasks),
                         ("[task:N] test tags", tag_tasks)]:
        if tasks != todo_tasks:
            problems.append(f"{name}: TODO(task N) markers name tasks {sorted(todo_tasks)} but {label} name {sorted(tasks)}")
    # "file:line" in the README (expected output) must still point where it says: a starter line at a
    # NOT_IMPLEMENTED, a test file line at a TEST_CASE or an assertion.
    for file_name, number in re.findall(r"([\w.]+\.(?:cu|cpp)):(\d+)", readme_text):
        target = {starter.name: (starter_text, "NOT_IMPLEMENTED")}
        target.update({file: (text, "TEST_CASE|CHECK|REQUIRE") for file, text in test_texts.items()})
        if file_name in target:
            text, expected = target[file_name]
            lines = text.splitlines()
            line = lines[int(number) - 1] if 0 < int(number) <= len(lines) else ""
            if not re.search(expected, line):
                problems.append(f"{name}: README.md points at {file_name}:{number}, which is not a {expected} line")
    if re.search(r"TODO\(task \d", solution_text) or 'NOT_IMPLEMENTED("' in solution_text:
        problems.append(f"{name}: the solution still has a TODO(task N) or NOT_IMPLEMENTED")
    problems += [f"{name}: {p}" for p in differences_outside_todo(starter_text.splitlines(), solution_text.splitlines())]
    problems += check_hints(lesson, readme_text, todo_tasks)
    return problems + check_variants(root, lesson, table)


def hint_titles(text):
    """[(title, has text)] of a hints file's hints: each '## ' heading outside a fenced code block."""
    hints, fence = [], None
    for line in text.splitlines()[1:]:
        marker = re.match(r"^\s*(```+|~~~+)", line)
        if marker:
            fence = None if fence and marker.group(1)[0] == fence[0] else (fence or marker.group(1))
        if fence is None and line.startswith("## "):
            hints.append([line[3:].strip(), False])
        elif hints and line.strip():
            hints[-1][1] = True
    return hints


def check_hints(lesson, readme_text, tasks):
    """A lesson's hints/task-N.md files, where it has them (the README's folded blocks still serve
    the others): named for a task of the lesson; first line '# Lesson NN, task N: hints', then one
    blank line; at least one hint, each a '## ' heading with text under it (./course hint shows
    them one at a time, in order); linked from the README's Hints section."""
    folder = lesson / "hints"
    if not folder.is_dir():
        return []
    name, problems = lesson.name, []
    links = section_text(readme_text, "Hints")
    for path in sorted(folder.iterdir()):
        shown = f"hints/{path.name}"
        task = re.fullmatch(r"task-(\d+)\.md", path.name)
        if not task:
            problems.append(f"{name}: {shown} is not named hints/task-N.md")
            continue
        if task.group(1) not in tasks:
            problems.append(f"{name}: {shown} is for task {task.group(1)}, which the lesson does not have")
        lines = path.read_text().splitlines()
        title = f"# Lesson {name[:2]}, task {task.group(1)}: hints"
        if lines[:2] != [title, ""]:
            problems.append(f"{name}: {shown} does not begin with the line '{title}' and a blank line")
        hints = hint_titles(path.read_text())
        if not hints:
            problems.append(f"{name}: {shown} has no hint (each hint begins with a '## ' heading)")
        problems += [f"{name}: {shown}: the hint '## {title}' has no text" for title, has_text in hints if not has_text]
        if not re.search(rf"\]\(\s*(\./)?hints/{re.escape(path.name)}\s*\)", links):
            problems.append(f"{name}: {shown} is not linked from the README's Hints section")
    return problems


def check_variants(root, lesson, table):
    """Every stored variant of the solution (tests/wrong/NN-name/*.wrong, a mistake; *.right, a
    correct answer written differently) is listed in the lesson's 'wrong' or 'right' list, and
    every listed one is there: a variant the table leaves out is never built nor checked."""
    name = lesson.name
    listed = set(re.findall(r"'([^'/]+\.(?:wrong|right))'", lesson_entry(lesson, table)))
    folder = root / "tests" / "wrong" / name
    stored = {p.name for p in folder.iterdir() if p.suffix in (".wrong", ".right")} if folder.is_dir() else set()
    problems = [f"{name}: tests/wrong/{name}/{file} is in no 'wrong' or 'right' list of tests/meson.build: it is "
                "never built nor checked" for file in sorted(stored - listed)]
    if folder.is_dir():  # the student edition has neither the folder nor the lists
        problems += [f"{name}: tests/meson.build lists {file}, which is not in tests/wrong/{name}/"
                     for file in sorted(listed - stored)]
    return problems


def check_student_files(root):
    """The grader takes each lesson's student file from the same table the build uses: it must
    find every lesson folder there (a lesson it leaves out would be graded as nothing)."""
    left_out = []
    try:
        found = {lesson.slug for lesson in course_layout.discover_lessons(root, warn=left_out.append)}
    except course_layout.LayoutError as error:
        return [f"the grader finds no lessons: {error}"]
    problems = [f"the grader leaves a lesson out: {text}" for text in left_out]
    problems += [f"{lesson.name}: the grader does not find it" for lesson in lesson_folders(root)
                 if lesson.name not in found and not any(lesson.name in text for text in left_out)]
    return problems


def check_headers(root):
    problems = []
    for folder in ("common", "lessons", "solutions", "tests"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and "fixture" not in path.parts:
                if not path.read_text().startswith("// SPDX-License-Identifier:"):
                    problems.append(f"{path.relative_to(root)}: no SPDX header on its first line")
    return problems


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = Path(argv[1]).resolve()
    table = (root / "tests" / "meson.build").read_text()
    lessons = lesson_folders(root)
    problems = [] if lessons else ["no lesson folders under lessons/"]
    for lesson in lessons:
        found = check_lesson(root, lesson, table)
        print(f"{lesson.name}: {'ok' if not found else f'{len(found)} problem(s)'}")
        problems += found
    problems += check_headers(root)
    problems += check_student_files(root)
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"{len(lessons)} lessons checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
