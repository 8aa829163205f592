# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Where things are in the course and in a submission, and how a submission is staged.

A lesson lives in `lessons/NN-slug/`. Its contract header `<stem>.h` sits beside the one
file the student edits, `<stem>.cpp` or `<stem>.cu`, which the lesson table of
tests/meson.build names (the build compiles the same file). A submission contributes exactly those
student files: staging copies what the build of the pristine course reads (STAGED: never
`solutions/`, `tests/wrong/`, `.git` or a build folder) and then overlays the student files only, so a submission cannot change a
test, a header or common/. The copy lies outside the course (grade.py refuses a build folder
inside it), so no relative #include can reach the course's solutions/ from there.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

STUDENT_EXTENSIONS = (".cu", ".cpp")
_LESSON_DIR = re.compile(r"^(\d\d)-[A-Za-z0-9][\w-]*$")


class LayoutError(RuntimeError):
    """The course or the submission is not laid out as expected."""


@dataclasses.dataclass(frozen=True)
class Lesson:
    """One lesson and its student file."""

    number: str  # "01"
    slug: str  # "01-device-enumeration"
    stem: str  # "device_enumeration"
    extension: str  # ".cpp" or ".cu"

    @property
    def target(self) -> str:
        """The Meson target of the lesson's test program (tests + the student's file)."""
        return f"lesson-{self.number}"

    @property
    def student_filename(self) -> str:
        return self.stem + self.extension

    @property
    def student_path(self) -> str:
        """The student file, relative to the course root."""
        return f"lessons/{self.slug}/{self.student_filename}"


# ----------------------------------------------------------------------------- lessons

# One entry of the lesson table in tests/meson.build: {'number': ..., 'folder': 'NN-slug',
# 'student': 'file.cu', ...}. That table is the one place that says which file is a lesson's
# student file: the build compiles it, the grader takes it from a submission, the structure
# check reads it through student_files_of_build().
_TABLE_ENTRY = re.compile(r"'folder':\s*'([^']+)',\s*'student':\s*'([^']+)'")


def student_files_of_build(course: Path) -> dict[str, str]:
    """The lesson table of the course's tests/meson.build: lesson folder -> its student file."""
    table = course / "tests" / "meson.build"
    if not table.is_file():
        raise LayoutError(f"{course} has no tests/meson.build: is it the course's root?")
    return dict(_TABLE_ENTRY.findall(table.read_text()))


def discover_lessons(course: Path, warn=None) -> list[Lesson]:
    """Every `lessons/NN-slug/` folder of the course that the lesson table of tests/meson.build
    lists with its student file (a <stem>.cpp or <stem>.cu beside <stem>.h), by number.

    A folder the table does not list, or whose student file or header is missing, is left out,
    through `warn(message)` when given.
    """
    lessons_dir = course / "lessons"
    if not lessons_dir.is_dir():
        raise LayoutError(f"{course} has no lessons/ folder: is it the course's root?")
    table = student_files_of_build(course)
    lessons = []
    for folder in sorted(lessons_dir.iterdir()):
        match = _LESSON_DIR.match(folder.name)
        if not (folder.is_dir() and match):
            continue
        student = table.get(folder.name)
        path = folder / student if student else None
        if path is None:
            problem = "not in the lesson table of tests/meson.build"
        elif path.suffix not in STUDENT_EXTENSIONS or not path.is_file():
            problem = f"the table's student file {student} is not a .cpp or .cu file there"
        elif not path.with_suffix(".h").is_file():
            problem = f"its student file {student} has no contract header {path.stem}.h beside it"
        else:
            lessons.append(Lesson(match.group(1), folder.name, path.stem, path.suffix))
            continue
        if warn:
            warn(f"{folder}: {problem}; lesson left out")
    if not lessons:
        raise LayoutError(f"no lesson folders (lessons/NN-name/) listed in {course / 'tests' / 'meson.build'}")
    return lessons


def select_lessons(lessons: list[Lesson], spec: str | None) -> list[Lesson]:
    """The lessons named by '01,03' (numbers, or full folder names); all when spec is empty."""
    if not spec:
        return lessons
    chosen = []
    for word in (w.strip() for w in spec.split(",")):
        if not word:
            continue
        found = [lesson for lesson in lessons
                 if word == lesson.slug or (word.isdigit() and int(word) == int(lesson.number))]
        if not found:
            known = ", ".join(lesson.number for lesson in lessons)
            raise LayoutError(f"--lessons: no lesson '{word}' (the course has {known})")
        chosen.extend(lesson for lesson in found if lesson not in chosen)
    return sorted(chosen, key=lambda lesson: lesson.number)


# ----------------------------------------------------------------------------- submissions

def find_student_file(submission: Path, lesson: Lesson) -> Path | None:
    """The lesson's file in a submission: `lessons/NN-slug/<file>`, `NN-slug/<file>`, or
    `<file>` anywhere in it (a flat upload; the shallowest wins). None when absent, and when
    two copies lie at the same depth (`ambiguous_copies` names them: the grader grades neither)."""
    found = student_file_candidates(submission, lesson)
    return found[0] if len(found) == 1 else None


def student_file_candidates(submission: Path, lesson: Lesson) -> list[Path]:
    """[the lesson's file] by find_student_file's rule; several when the shallowest copies of
    `<file>` lie at the same depth (v1/x.cu and v2/x.cu: which one the student meant is theirs
    to say); [] when there is none."""
    for candidate in (submission / lesson.student_path, submission / lesson.slug / lesson.student_filename):
        if _regular_file(candidate):
            return [candidate]
    found = [Path(root) / lesson.student_filename
             for root, dirs, files in os.walk(submission)
             if lesson.student_filename in files and not _skipped_dir(Path(root), submission)
             and _regular_file(Path(root) / lesson.student_filename)]
    if not found:
        return []
    depth = min(len(path.relative_to(submission).parts) for path in found)
    return sorted(path for path in found if len(path.relative_to(submission).parts) == depth)


def renamed_copies(submission: Path, lesson: Lesson) -> list[Path]:
    """Files that look like the lesson's file renamed on upload (an LMS adds '-1' or ' (1)' to a
    name it has seen: device_enumeration-1.cpp), for the report of a missing file."""
    stem, extension = Path(lesson.student_filename).stem, lesson.extension
    pattern = re.compile(rf"{re.escape(stem)}(?:[-_ ]?\(?\d+\)?|[-_ ]copy|[-_ ]v\d+)?{re.escape(extension)}", re.I)
    return sorted(Path(root) / name for root, dirs, files in os.walk(submission) for name in files
                  if pattern.fullmatch(name) and name != lesson.student_filename
                  and not _skipped_dir(Path(root), submission))


def folder_listing(submission: Path, limit: int = 12) -> str:
    """What a submission holds, for a report: 'a.cpp, notes/b.txt (and 3 more)', or 'nothing'."""
    files = sorted(str(Path(root, name).relative_to(submission)) for root, dirs, names in os.walk(submission)
                   for name in names if not _skipped_dir(Path(root), submission))
    if not files:
        return "nothing"
    return ", ".join(files[:limit]) + (f" (and {len(files) - limit} more)" if len(files) > limit else "")


def _regular_file(path: Path) -> bool:
    """A plain file; a symbolic link could make the build read a file of the grading machine."""
    return path.is_file() and not path.is_symlink()


def _skipped_dir(path: Path, top: Path) -> bool:
    """Folders that never hold a student's file: version control and build output."""
    parts = path.relative_to(top).parts
    return any(part == ".git" or part.startswith("build") for part in parts)


# ----------------------------------------------------------------------------- staging

# What the build of a student's file sees of the course (an allowlist, as everything the grader
# lets in): the staged copy holds only what `meson setup -Donly_lessons=true` and the lesson
# programs read. Left out: solutions/, the known-wrong variants (tests/wrong/: each is a slice of a
# reference solution plus one mistake, an answer key), the correct variants and attacks
# (tests/grader/attacks/), the course's checks (tests/course/), the host tests and probes, CI,
# .git and build folders. A student's file that fails to compile on purpose cannot make the
# compiler quote any of them into its log: they are not there.
STAGED = {
    "meson.build": "the build's description",
    "meson.options": "its options",
    "meson_options.txt": "its options (Meson before 1.1)",
    "common": "the course's library, which every lesson program links",
    "lessons": "the contract headers, the provided sources and the student files",
    "tests": "each lesson's tests and tests/meson.build (its subfolders: STAGED_IN_TESTS only)",
}
STAGED_IN_TESTS = {
    "grader": "tests/meson.build names grader/grade.py in its 'grade' target (the grader is in the student edition too): "
              "its own files only, none of its subfolders (attacks, the fake course, the correct-but-different corpus and "
              "the compilers' listings hold slices of the reference solutions: answer keys)",
}


def staged(relative: Path, folder: bool) -> bool:
    """Whether a path of the course (relative to its root; `folder`: it is a folder) is staged."""
    parts = relative.parts
    if not parts or parts[0] not in STAGED:
        return False
    if parts[0] != "tests" or len(parts) == 1:
        return True
    if parts[1] in STAGED_IN_TESTS:
        return len(parts) == 2 or (len(parts) == 3 and not folder)  # the folder, and the files right in it
    return len(parts) == 2 and not folder  # a file of tests/ itself


def stage_course(course: Path, destination: Path, keep_out: list[Path] = ()) -> None:
    """Copies the pristine course to `destination` (replacing what was there): only what the
    build reads (STAGED, STAGED_IN_TESTS; never solutions/ or tests/wrong/), leaving out any path
    in `keep_out` too (a submission or build folder inside the course).

    Files keep their modification times so that an unchanged common/ is not rebuilt.
    """
    course = course.resolve()
    if destination.resolve().is_relative_to(course):
        raise LayoutError(f"{destination} is inside the course {course}: the course must be staged outside itself")
    excluded = {Path(p).resolve() for p in keep_out} | {destination.resolve()}

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve()
        skip = {name for name in names if (here / name).resolve() in excluded or name == ".git"}
        skip |= {name for name in names  # `folder` lies in `course` as copytree walks it (no link resolved)
                 if not staged((Path(folder) / name).relative_to(course), (Path(folder) / name).is_dir())}
        return skip

    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(course, destination, ignore=ignore, symlinks=True)


def place_student_file(source: Path, course_copy: Path, lesson: Lesson) -> None:
    """Puts one student file into a staged course, with a fresh modification time so the
    build always recompiles it (whatever was compiled there before)."""
    place_student_bytes(source.read_bytes(), course_copy, lesson)


def place_student_bytes(data: bytes, course_copy: Path, lesson: Lesson) -> None:
    """Like place_student_file, with the file's contents read beforehand."""
    target = course_copy / lesson.student_path
    if target.is_symlink():
        target.unlink()
    target.write_bytes(data)
    touch(target)


def safe_name(name: str) -> str:
    """A student's folder name, usable as a path component (the folder of their reports)."""
    return re.sub(r"[^\w.-]", "_", name) or "_"


def touch(path: Path) -> None:
    """Sets a file's modification time to now."""
    os.utime(path, None)
