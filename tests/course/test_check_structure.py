#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# The structure check must itself be able to fail: each test copies the course, breaks one
# rule, and expects check_structure.py to name the problem.
"""Usage: test_check_structure.py COURSE_ROOT"""

import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECK = Path(__file__).with_name("check_structure.py")
ROOT = Path(sys.argv.pop(1) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
LESSON = "01-device-enumeration"


class StructureCheckCatchesBrokenLessons(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        for folder in ("lessons", "solutions", "tests", "common"):
            shutil.copytree(ROOT / folder, self.root / folder,
                            ignore=shutil.ignore_patterns("fixture", "__pycache__"))

    def tearDown(self):
        self.tmp.cleanup()

    def run_check(self):
        result = subprocess.run([sys.executable, CHECK, self.root], capture_output=True, text=True)
        return result.returncode, result.stdout

    def assert_reported(self, problem):
        code, out = self.run_check()
        self.assertEqual(code, 1, out)
        self.assertIn(problem, out)

    def edit(self, relative, old, new):
        path = self.root / relative
        text = path.read_text()
        self.assertIn(old, text, f"fixture text not found in {relative}")
        path.write_text(text.replace(old, new, 1))

    def test_the_pristine_course_passes(self):
        code, out = self.run_check()
        self.assertEqual(code, 0, out)

    def test_a_stored_variant_that_no_list_names_is_reported(self):
        (self.root / "tests" / "wrong" / LESSON / "forgotten.right").write_text("# a correct variant\n")
        self.assert_reported("forgotten.right is in no 'wrong' or 'right' list")

    def test_a_solution_that_differs_outside_a_todo_region_is_reported(self):
        self.edit(f"solutions/{LESSON}/device_enumeration.cpp", "namespace lesson01 {", "namespace lesson01 {\n// extra")
        self.assert_reported("differ outside a TODO region")

    def test_a_test_tag_for_a_task_the_starter_lacks_is_reported(self):
        # Lesson 01's task 4 cases are in its second test file.
        self.edit(f"tests/test_{LESSON.replace('-', '_')}_select.cpp", "[task:4][gpus:0]", "[task:5][gpus:0]")
        self.assert_reported("[task:N] test tags name")

    def test_a_test_case_without_points_is_reported(self):
        self.edit(f"tests/test_{LESSON.replace('-', '_')}.cpp", "[task:1][gpus:1][points:1]", "[task:1][gpus:1]")
        self.assert_reported("has no [points: tag")

    def test_a_test_file_the_build_does_not_list_is_reported(self):
        stem = f"tests/test_{LESSON.replace('-', '_')}"
        (self.root / f"{stem}_more.cpp").write_text("// SPDX-License-Identifier: MIT\n")
        self.assert_reported("not in the entry's 'tests' list")
        # Listed beside the first file, it is part of the lesson and its cases are checked too.
        self.edit("tests/meson.build", f"'tests': ['{stem[6:]}.cpp',", f"'tests': ['{stem[6:]}.cpp', '{stem[6:]}_more.cpp',")
        (self.root / f"{stem}_more.cpp").write_text(
            '// SPDX-License-Identifier: MIT\nTEST_CASE("an extra case", "[01-device-enumeration][task:1][gpus:0]") {}\n')
        self.assert_reported("test case 'an extra case' has no [points: tag")

    def test_a_missing_readme_section_is_reported(self):
        self.edit(f"lessons/{LESSON}/README.md", "## Going further", "## Later")
        self.assert_reported("no section 'Going further'")

    def test_a_solution_with_a_stub_left_is_reported(self):
        self.edit(f"solutions/{LESSON}/device_enumeration.cpp", "  return count;\n}",
                  '  return count;\n  NOT_IMPLEMENTED("task 1");\n}')
        self.assert_reported("the solution still has")

    def test_a_test_case_missing_from_the_readme_table_is_reported(self):
        self.edit(f"lessons/{LESSON}/README.md", "| the device count matches the runtime's |", "| (forgotten) |")
        self.assert_reported("is not named in the README's 'What the tests check' table")

    def test_a_lesson_the_grader_cannot_find_is_reported(self):
        # The grader reads the student file from the build's lesson table: one it names that is
        # not there leaves the lesson ungraded.
        self.edit("tests/meson.build", "'student': 'device_enumeration.cpp'", "'student': 'missing.cpp'")
        self.assert_reported("the grader leaves a lesson out")

    def test_a_readme_pointing_at_a_wrong_line_is_reported(self):
        self.edit(f"lessons/{LESSON}/README.md", "device_enumeration.cpp:23", "device_enumeration.cpp:24")
        self.assert_reported("README.md points at device_enumeration.cpp:24")

    def add_hints(self, text, link="[task 1](hints/task-1.md)"):
        folder = self.root / "lessons" / LESSON / "hints"
        folder.mkdir(exist_ok=True)
        (folder / "task-1.md").write_text(text)
        readme = self.root / "lessons" / LESSON / "README.md"
        # The lesson's own README may link the file already: take every link to it out first.
        readme.write_text(re.sub(r"^.*\(hints/task-1\.md\).*\n", "", readme.read_text(), flags=re.M))
        if link:
            self.edit(f"lessons/{LESSON}/README.md", "## Hints\n", f"## Hints\n\n- {link}\n")

    GOOD_HINTS = "# Lesson 01, task 1: hints\n\n## A nudge\n\nCount.\n\n## Step by step\n\n```\n## code\n```\n"

    def test_a_well_formed_hints_file_linked_from_the_readme_passes(self):
        self.add_hints(self.GOOD_HINTS)
        code, out = self.run_check()
        self.assertEqual(code, 0, out)

    def test_a_hints_file_without_its_title_line_is_reported(self):
        self.add_hints(self.GOOD_HINTS.replace("# Lesson 01, task 1: hints", "# Hints"))
        self.assert_reported("hints/task-1.md does not begin with the line '# Lesson 01, task 1: hints'")

    def test_a_hints_file_without_a_hint_is_reported(self):
        self.add_hints("# Lesson 01, task 1: hints\n\nJust text.\n```\n## inside a code block\n```\n")
        self.assert_reported("hints/task-1.md has no hint")

    def test_a_hint_without_text_is_reported(self):
        self.add_hints(self.GOOD_HINTS + "## Empty\n")
        self.assert_reported("the hint '## Empty' has no text")

    def test_a_hints_file_the_readme_does_not_link_is_reported(self):
        self.add_hints(self.GOOD_HINTS, link=None)
        self.assert_reported("hints/task-1.md is not linked from the README's Hints section")

    def test_a_hints_file_for_a_task_the_lesson_lacks_is_reported(self):
        self.add_hints(self.GOOD_HINTS)
        (self.root / "lessons" / LESSON / "hints" / "task-9.md").write_text(
            self.GOOD_HINTS.replace("task 1", "task 9"))
        self.edit(f"lessons/{LESSON}/README.md", "## Hints\n", "## Hints\n\n- [task 9](hints/task-9.md)\n")
        self.assert_reported("hints/task-9.md is for task 9, which the lesson does not have")


if __name__ == "__main__":
    unittest.main(verbosity=2)
