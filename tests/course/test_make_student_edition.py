#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# The student edition must hold the lessons and nothing that gives their answers away: no
# solutions/, no tests/wrong/ and no 'wrong' lists in the lesson table, no course checks, no
# text marked instructor-only. These tests export the real course (no build: fast) and check
# the result, and break copies of the course to see the exporter refuse what it cannot do right.
"""Usage: test_make_student_edition.py [COURSE_ROOT]"""

import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

EXPORT = Path(__file__).with_name("make_student_edition.py")
ROOT = Path(sys.argv.pop(1) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]).resolve()
sys.path.insert(0, str(EXPORT.parent))

import make_student_edition as edition  # noqa: E402


def export(course, *args):
    return subprocess.run([sys.executable, EXPORT, "--course", course, *map(str, args)],
                          capture_output=True, text=True)


def files_under(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def instructor_only_lines(readme_text):
    """The distinctive lines inside the README's instructor-only spans (long enough to be unique)."""
    lines = []
    for span in re.findall(r"<!-- instructor-only -->(.*?)<!-- /instructor-only -->", readme_text, re.S):
        lines += [line.strip() for line in span.splitlines() if len(line.strip()) >= 30]
    return lines


class TheEditionOfThisCourse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = Path(cls.tmp.name) / "edition"
        cls.tar = Path(cls.tmp.name) / "course-student.tar.gz"
        cls.done = export(ROOT, "--output", cls.out, "--tar", cls.tar)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_export_succeeds(self):
        self.assertEqual(self.done.returncode, 0, self.done.stderr)

    def test_solutions_wrong_variants_course_checks_and_ci_are_left_out(self):
        for path in ("solutions", "tests/wrong", "tests/course", ".ci", "tests/grader/fixture",
                     "tests/grader/test_grader.py", "build"):
            self.assertFalse((self.out / path).exists(), f"{path} is in the student edition")
        self.assertFalse([f for f in files_under(self.out)
                          if "solution" in f.split("/")[0] or f.endswith((".wrong", ".right"))])

    def test_every_lesson_and_what_builds_and_grades_it_are_there(self):
        lessons = sorted(p.name for p in (ROOT / "lessons").iterdir() if p.is_dir())
        self.assertTrue(lessons)
        for lesson in lessons:
            self.assertEqual(files_under(ROOT / "lessons" / lesson), files_under(self.out / "lessons" / lesson))
            self.assertTrue((self.out / "tests" / f"test_{lesson.replace('-', '_')}.cpp").is_file(), lesson)
        for path in ("README.md", "meson.build", "meson.options", "tests/meson.build", "common/meson.build",
                     "tests/grader/grade.py", ".gitignore"):
            self.assertTrue((self.out / path).is_file(), path)

    def test_the_course_command_and_a_copy_of_each_starter_for_its_reset_are_there(self):
        command = self.out / "course"
        self.assertTrue(command.is_file() and command.stat().st_mode & 0o111, "./course is missing or not executable")
        table = (ROOT / "tests" / "meson.build").read_text()
        students = re.findall(r"'folder':\s*'([^']+)',\s*'student':\s*'([^']+)'", table)
        self.assertTrue(students)
        for folder, student in students:
            kept = self.out / edition.STARTERS / folder / student
            self.assertEqual(kept.read_bytes(), (self.out / "lessons" / folder / student).read_bytes(), kept)
        self.assertEqual(len(files_under(self.out / edition.STARTERS)), len(students))

    def test_the_lesson_table_keeps_its_lessons_and_loses_its_wrong_lists(self):
        table = (self.out / "tests" / "meson.build").read_text()
        self.assertNotRegex(table, r"'(wrong|right)'\s*:")
        self.assertNotIn(".wrong'", table)
        self.assertNotIn(".right'", table)
        self.assertNotIn("tests/wrong", table)
        for lesson in (ROOT / "lessons").iterdir():
            if lesson.is_dir():
                self.assertRegex(table, r"'folder':\s*'" + re.escape(lesson.name) + r"',\s*'student':")
        # In the table only the 'wrong' entries went; outside it, only the lines marked instructor-only.
        full = (ROOT / "tests" / "meson.build").read_text()
        full_table, table_table = (re.search(r"(?ms)^lessons = \[\n.*?^\]\n", text).group(0) for text in (full, table))
        removed = [line for line in full_table.splitlines() if line not in table_table.splitlines()]
        self.assertTrue(removed)
        for line in removed:
            self.assertTrue(re.search(r"\.(wrong|right)'|'(wrong|right)'", line) or line.strip() == "],", line)
        self.assertEqual(table.replace(table_table, ""),
                         re.sub(r"(?ms)^[ \t]*# instructor-only\n.*?^[ \t]*# /instructor-only\n", "",
                                full.replace(full_table, "")))

    def test_the_readme_has_no_instructor_only_text_and_says_it_is_the_student_edition(self):
        full = (ROOT / "README.md").read_text()
        text = (self.out / "README.md").read_text()
        hidden = instructor_only_lines(full)
        self.assertTrue(hidden, "the course README marks no instructor-only text")
        for line in hidden:
            if line not in re.sub(r"<!-- instructor-only -->.*?<!-- /instructor-only -->", "", full, flags=re.S):
                self.assertNotIn(line, text)
        self.assertNotIn("instructor-only", text)
        self.assertNotIn("student-edition", text)
        self.assertIn("student edition", text.lower())
        self.assertNotRegex(text, edition.MISSING_IN_EDITION)
        self.assertNotIn("\n\n\n", text)

    def test_nothing_in_the_edition_names_what_it_lacks_not_even_a_comment(self):
        _, warnings = edition.make_edition(ROOT)
        self.assertEqual(warnings, [])  # what --strict refuses
        table = (self.out / "tests" / "meson.build").read_text()
        self.assertNotRegex(table, r"solution-(demo|bench)-NN|\bsolution-NN\b")
        self.assertIn("#   demo-NN ", table)

    def test_the_tarball_holds_the_folder_under_one_top_folder(self):
        with tarfile.open(self.tar) as archive:
            members = {m.name: m for m in archive.getmembers() if m.isfile()}
            self.assertEqual(sorted(members), ["course-student/" + f for f in files_under(self.out)])
            readme = archive.extractfile(members["course-student/README.md"]).read()
        self.assertEqual(readme, (self.out / "README.md").read_bytes())


class TheExporterRefuses(unittest.TestCase):
    """Each test copies the course, breaks one thing and expects a clear refusal."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.course = Path(self.tmp.name) / "course"
        shutil.copytree(ROOT, self.course, ignore=shutil.ignore_patterns(".git", "build*", "__pycache__", ".gpuhost"))
        self.out = Path(self.tmp.name) / "edition"

    def tearDown(self):
        self.tmp.cleanup()

    def edit(self, relative, old, new):
        path = self.course / relative
        text = path.read_text()
        self.assertIn(old, text, f"fixture text not found in {relative}")
        path.write_text(text.replace(old, new, 1))

    def assert_refused(self, message, *args):
        done = export(self.course, "--output", self.out, *args)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn(message, done.stderr)
        self.assertFalse(self.out.exists() and any(self.out.iterdir()), "a refused edition was written")

    def test_a_copy_without_git_exports_the_same_files(self):
        done = export(self.course, "--output", self.out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertFalse((self.out / "solutions").exists())
        self.assertTrue((self.out / "tests" / "grader" / "grade.py").is_file())

    def test_class_data_in_a_git_checkout_is_left_out_and_named(self):
        git = ["git", "-C", str(self.course), "-c", "user.name=t", "-c", "user.email=t@t"]
        for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
            subprocess.run(git + step, check=True, capture_output=True)
        (self.course / "class" / "alice").mkdir(parents=True)
        (self.course / "class" / "alice" / "notes.cpp").write_text("// alice's full-marks file\n")
        (self.course / "grades-week2.csv").write_text("student,total\nalice,49\n")
        done = export(self.course, "--output", self.out, "--strict")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertFalse((self.out / "class").exists() or (self.out / "grades-week2.csv").exists())
        self.assertIn("left out 2 file(s) that git does not track", done.stderr)
        self.assertIn("class/alice/notes.cpp, grades-week2.csv", done.stderr)

    def test_an_unclosed_instructor_only_block_is_refused_with_its_place(self):
        lesson = sorted(p for p in (self.course / "lessons").iterdir() if p.is_dir())[0]
        readme = lesson / "README.md"
        readme.write_text(readme.read_text() + "\n<!-- instructor-only -->\nthe answer is 42\n")
        self.assert_refused(f"lessons/{lesson.name}/README.md:")

    def test_an_unclosed_line_marker_in_a_meson_file_is_refused(self):
        path = self.course / "meson.options"
        path.write_text(path.read_text() + "# instructor-only\n")
        self.assert_refused("meson.options:")

    def test_a_wrong_list_that_is_never_closed_is_refused(self):
        self.edit("tests/meson.build", "'wrong': [", "'wrong': [[")
        self.assert_refused("is not one [file, case] entry a line")
        self.edit("tests/meson.build", "'wrong': [[", "'wrong': [")
        self.edit("tests/meson.build", "'wrong': [", "'wrong': ['a.wrong', 'case'\n  {")
        self.assert_refused("is not one [file, case] entry a line")
        path = self.course / "tests" / "meson.build"
        path.write_text(path.read_text().split("'wrong': [")[0] + "'wrong': [\n  ['a', 'case'],\n")
        self.assert_refused("never closed")

    def test_marked_lines_are_removed_from_sources_and_meson_files(self):
        self.edit("meson.options", "option('only_lessons'", "# instructor-only\n# the secret\n# /instructor-only\noption('only_lessons'")
        demo = next((self.course / "lessons").glob("*/demo.cpp"))
        demo.write_text(demo.read_text() + "// instructor-only\n// int answer = 42;\n// /instructor-only\n")
        done = export(self.course, "--output", self.out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("the secret", (self.out / "meson.options").read_text())
        self.assertNotIn("answer = 42", (self.out / demo.relative_to(self.course)).read_text())
        self.assertIn("option('only_lessons'", (self.out / "meson.options").read_text())

    def test_a_lesson_naming_a_solution_program_is_a_warning_and_with_strict_an_error(self):
        lesson = sorted(p for p in (self.course / "lessons").iterdir() if p.is_dir())[0]
        readme = lesson / "README.md"
        readme.write_text(readme.read_text() + "\nRun ./build/tests/solution-demo-99 to compare.\n")
        done = export(self.course, "--output", self.out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"warning: lessons/{lesson.name}/README.md:", done.stderr)
        self.assertIn("solution-demo-99", done.stderr)
        shutil.rmtree(self.out)
        self.assert_refused("solution-demo-99", "--strict")

    def test_a_comment_naming_a_solution_program_is_caught_with_strict(self):
        self.edit("tests/meson.build", "# THE table of lessons", "# Compare with solution-demo-NN.\n# THE table of lessons")
        self.assert_refused("tests/meson.build:4: names 'solution-demo-NN'", "--strict")
        self.edit("tests/meson.build", "# Compare with solution-demo-NN.\n", "")
        source = next((self.course / "common").rglob("*.cpp"))
        source.write_text(source.read_text() + "// as ./build/tests/solution-07 shows\n")
        self.assert_refused(f"{source.relative_to(self.course).as_posix()}:", "--strict")
        self.assert_refused("names 'solution-07'", "--strict")
        source.write_text(source.read_text().replace("// as ./build/tests/solution-07 shows\n",
                                                     'const char* where = "solution-07";\n'))
        done = export(self.course, "--output", self.out, "--strict")  # code, not a comment: not read
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_an_output_folder_inside_the_course_or_not_empty_is_refused(self):
        done = export(self.course, "--output", self.course / "student")
        self.assertEqual(done.returncode, 1)
        self.assertIn("inside the course", done.stderr)
        self.out.mkdir()
        (self.out / "x").write_text("x")
        done = export(self.course, "--output", self.out)
        self.assertEqual(done.returncode, 1)
        self.assertIn("not an empty folder", done.stderr)

    def test_an_edition_is_not_made_from_an_edition(self):
        shutil.rmtree(self.course / "solutions")
        self.assert_refused("has no solutions/")


class Markers(unittest.TestCase):
    """The marker rules on small texts."""

    def test_a_block_on_its_own_lines_goes_whole_and_leaves_no_double_blank_line(self):
        text = "a\n\n<!-- instructor-only -->\nsecret\n<!-- /instructor-only -->\n\nb\n"
        self.assertEqual(edition.edit_markdown(text, "x.md"), "a\n\nb\n")

    def test_an_inline_span_goes_and_the_line_stays(self):
        text = "a tests, <!-- instructor-only -->a solution, <!-- /instructor-only -->and a demo\n"
        self.assertEqual(edition.edit_markdown(text, "x.md"), "a tests, and a demo\n")

    def test_a_student_edition_comment_is_shown(self):
        text = "# T\n<!-- student-edition\n> the student edition\n-->\nrest\n"
        self.assertEqual(edition.edit_markdown(text, "x.md"), "# T\n> the student edition\nrest\n")

    def test_a_close_without_an_open_is_an_error(self):
        with self.assertRaisesRegex(edition.EditionError, r"x.md:2:"):
            edition.edit_markdown("a\n<!-- /instructor-only -->\n", "x.md")

    def test_wrong_lists_with_brackets_and_quotes_in_their_strings_go_whole(self):
        table = ("lessons = [\n  {\n    'number': '01',\n    'wrong': [\n      ['a.wrong', 'case [with] \\'quotes\\''],  # ]\n"
                 "    ],\n    'demo': 'demo.cpp',\n  },\n]\n")
        self.assertEqual(edition.strip_wrong_lists(table, "t"),
                         "lessons = [\n  {\n    'number': '01',\n    'demo': 'demo.cpp',\n  },\n]\n")

    def test_right_lists_of_file_names_go_whole_too(self):
        table = ("lessons = [\n  {\n    'number': '01',\n    'wrong': [\n      ['a.wrong', 'case'],\n    ],\n"
                 "    'right': [\n      'b.right',  # a correct variant\n    ],\n    'demo': 'demo.cpp',\n  },\n]\n")
        self.assertEqual(edition.strip_wrong_lists(table, "t"),
                         "lessons = [\n  {\n    'number': '01',\n    'demo': 'demo.cpp',\n  },\n]\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
