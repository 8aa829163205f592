#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# Writes the student edition of the course: what a class is handed out. It leaves out the
# reference solutions and everything that reads as a list of hints or needs the solutions
# (the known-wrong and stored correct variants, the lesson table's 'wrong' and 'right' lists, the course's own checks, CI),
# and removes the text marked instructor-only from the READMEs and build files. The edition
# configures, builds, tests and grades with the README's commands; instructors keep the full
# repository and grade with it.
"""Usage: make_student_edition.py [--course ROOT] (--output DIR | --tar FILE.tar.gz | both) [--strict]

Left out: solutions/, tests/wrong/, tests/course/ (the course checks and this script),
tests/grader/fixture/, tests/grader/test_*.py and tests/grader/correct/ (the grader's own tests
and its corpus of correct files), .ci/, and what git ignores (build folders). With git, the
files are the ones git tracks (as the working tree has them): anything else in the folder (a
class's submissions, a grades CSV, a file not yet added) is not part of the course, is left
out, and is named on stderr; without git, every file
but build*/, .git and caches.
Added: .course/starters/NN-name/<file>, a copy of each lesson's starter as the edition has it,
from which `./course reset NN` puts a student's starter back (the edition is no git checkout).

Markers (README.md files, meson.build, meson.options, C++/CUDA sources):

    <!-- instructor-only -->  ...  <!-- /instructor-only -->    Markdown: removed with what is
                                    between; on their own lines (whole lines) or inside a line
    <!-- student-edition           Markdown: shown in the edition only (in the full course it
    text                            is a comment)
    -->
    # instructor-only / # /instructor-only      meson files: the lines between are removed
    // instructor-only // /instructor-only      C++/CUDA sources: the same

and in tests/meson.build every lesson's 'wrong': [...] and 'right': [...] entry is removed.

Exit status 0 written; 1 a marker is unbalanced, a 'wrong' list cannot be read, or (with
--strict) a file of the edition still names a program or folder the edition lacks
(solution-demo-NN, tests/wrong, ...: in a README or a lesson's file, or in a comment of a
build file or a source); without --strict those are printed as warnings.
2 usage error.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parents[2]

# (path relative to the course, why the edition leaves it out)
LEFT_OUT = [
    ("solutions", "the reference solutions"),
    ("tests/wrong", "the known-wrong variants: their names and the cases that catch them are hints"),
    ("tests/course", "the course's own checks (they need the solutions) and this script"),
    ("tests/grader/fixture", "the grader's own tests (run in the full course)"),
    ("tests/grader/correct", "correct-but-different student files of every lesson: an answer key"),
    (".ci", "the full course's continuous integration"),
    (".gpuhost", "the GPU host's set-up"),
]
LEFT_OUT_GLOBS = ["tests/grader/test_*.py"]
NEVER_COPIED = {".git", "__pycache__"}

MD_BLOCK = re.compile(r"^[ \t]*<!-- instructor-only -->[ \t]*\n.*?^[ \t]*<!-- /instructor-only -->[ \t]*(?:\n|\Z)",
                      re.M | re.S)
MD_INLINE = re.compile(r"<!-- instructor-only -->.*?<!-- /instructor-only -->", re.S)
MD_REVEAL = re.compile(r"^[ \t]*<!-- student-edition[ \t]*\n(.*?)^[ \t]*-->[ \t]*(?:\n|\Z)", re.M | re.S)
MD_MARKER = re.compile(r"<!--[ \t]*/?instructor-only|<!--[ \t]*student-edition")
LINE_MARKERS = {"#": ("# instructor-only", "# /instructor-only"),
                "//": ("// instructor-only", "// /instructor-only")}
WRONG_KEY = re.compile(r"^[ \t]*'(?:wrong|right)'[ \t]*:[ \t]*\[", re.M)  # the mistakes, the correct variants
SOURCE_SUFFIXES = {".cpp", ".cu", ".h", ".cuh"}
WRONG_ITEM = re.compile(r"^[ \t]*((\[.*\]|'[^']*')[ \t]*,?[ \t]*(#.*)?|#.*)?$")

# What a student of the edition could try to run or open and not find (NN: a lesson's number,
# as a comment names the targets of every lesson; tests/wrong and tests/course not inside another path).
MISSING_IN_EDITION = re.compile(
    r"solution-(?:demo|bench)-(?:\d\d|NN)\b|\bsolution-(?:\d\d|NN)\b|--suite[ =](?:solutions|course)\b"
    r"|(?<![\w/.~-])tests/(?:wrong|course)\b|\b(?:wrong|right)-(?:\d\d|NN)\b")
SCANNED_WHOLE = re.compile(r"^(.*\.md|lessons/.*)$")  # every line; elsewhere the comments of build files and sources
MESON_FILES = ("meson.build", "meson.options")
STARTERS = ".course/starters"  # where ./course reset finds the starters in the edition (see the command)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grader"))
import course_layout  # noqa: E402  the grader's rule for which file is a lesson's student file


class EditionError(Exception):
    """The course cannot be turned into an edition as it is (the message says where)."""


# ----------------------------------------------------------------------------- which files

def left_out(relative: str) -> bool:
    """True for a path (posix, relative to the course) that the edition does not hold."""
    parts = relative.split("/")
    if parts[0].startswith("build") or NEVER_COPIED & set(parts) or relative.endswith(".pyc"):
        return True
    if any(relative == path or relative.startswith(path + "/") for path, _ in LEFT_OUT):
        return True
    return any(Path(relative).match(glob) and len(parts) == len(glob.split("/")) for glob in LEFT_OUT_GLOBS)


def course_files(course: Path) -> list[str]:
    """The course's files (posix paths relative to it): git's view of the working tree where the
    course is a git checkout's root, else every file on disk."""
    try:
        top = subprocess.run(["git", "-C", str(course), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=False)
        in_git = top.returncode == 0 and Path(top.stdout.strip()).resolve() == course
    except OSError:
        in_git = False
    if in_git:
        listed = subprocess.run(["git", "-C", str(course), "ls-files", "-z", "--cached"],
                                capture_output=True, check=True).stdout
        names = {name for name in listed.decode().split("\0") if name}
        files = [name for name in names if (course / name).is_file() or (course / name).is_symlink()]
    else:
        files = []
        for root, dirs, names in os.walk(course):
            here = Path(root).relative_to(course)
            dirs[:] = [d for d in dirs if not left_out((here / d).as_posix())]
            files += [(here / name).as_posix() for name in names]
    return sorted(f for f in files if not left_out(f))


def untracked_files(course: Path) -> list[str]:
    """The files of a git checkout's folder that git neither tracks nor ignores: not part of the
    course (a class graded inside it, a CSV of grades, a new file not yet added). [] without git."""
    try:
        listed = subprocess.run(["git", "-C", str(course), "ls-files", "-z", "--others", "--exclude-standard"],
                                capture_output=True, check=False)
    except OSError:
        return []
    if listed.returncode != 0:
        return []
    return sorted(name for name in listed.stdout.decode().split("\0") if name and not left_out(name))


# ----------------------------------------------------------------------------- what changes

def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def edit_markdown(text: str, where: str) -> str:
    """Removes instructor-only spans and reveals student-edition comments."""
    edited = MD_BLOCK.sub("", text)
    edited = MD_INLINE.sub("", edited)
    edited = MD_REVEAL.sub(lambda m: m.group(1), edited)
    stray = MD_MARKER.search(edited)
    if stray:
        # The line that kept a marker, found again in the original text to name its number.
        start = edited.rfind("\n", 0, stray.start()) + 1
        end = edited.find("\n", stray.start())
        line = edited[start:end if end >= 0 else len(edited)]
        index = text.find(line) if line.strip() else -1
        number = line_of(text, index) if index >= 0 else line_of(edited, stray.start())
        raise EditionError(f"{where}:{number}: an unbalanced or misplaced '{stray.group(0)}' marker "
                           "(<!-- instructor-only --> ... <!-- /instructor-only -->, or "
                           "<!-- student-edition on its own line ... --> on its own line)")
    if edited != text:
        edited = re.sub(r"\n{3,}", "\n\n", edited)
    return edited


def edit_lines(text: str, where: str, comment: str) -> str:
    """Removes the lines from a '<comment> instructor-only' line to its '<comment> /instructor-only'."""
    begin, end = LINE_MARKERS[comment]
    kept, start = [], None
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        marker = line.strip()
        if marker == begin:
            if start is not None:
                raise EditionError(f"{where}:{number}: '{begin}' inside the block opened at line {start}")
            start = number
        elif marker == end:
            if start is None:
                raise EditionError(f"{where}:{number}: '{end}' without a '{begin}' before it")
            start = None
        elif start is None:
            if "instructor-only" in marker and marker.startswith(comment):
                raise EditionError(f"{where}:{number}: a misplaced marker (write '{begin}' and '{end}' "
                                   "alone on their lines)")
            kept.append(line)
    if start is not None:
        raise EditionError(f"{where}:{start}: '{begin}' is never closed by '{end}'")
    return "".join(kept)


def closing_bracket(text: str, opening: int, where: str) -> int:
    """The index of the ']' that closes the '[' at `opening`, skipping Meson strings and comments."""
    depth, i = 0, opening
    while i < len(text):
        c = text[i]
        if c == "'":
            quote = "'''" if text.startswith("'''", i) else "'"
            j = i + len(quote)
            while j < len(text) and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            if j >= len(text):
                break
            i = j + len(quote)
            continue
        if c == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise EditionError(f"{where}:{line_of(text, opening)}: the 'wrong' list opened here is never closed")


def strip_wrong_lists(text: str, where: str) -> str:
    """Removes every "'wrong': [...]," and "'right': [...]," entry of the lesson table, whole lines."""
    while True:
        match = WRONG_KEY.search(text)
        if not match:
            return text
        close = closing_bracket(text, match.end() - 1, where)
        lines = text[match.start():close + 1].split("\n")
        if len(lines) > 1 and (lines[-1].strip() != "]" or not all(WRONG_ITEM.match(line) for line in lines[1:-1])):
            raise EditionError(f"{where}:{line_of(text, match.start())}: the 'wrong' list opened here is not "
                               "one [file, case] entry a line (in a 'right' list, one 'file') up to a closing ']' on its own line")
        rest = re.match(r"[ \t]*,?[ \t]*(?:#[^\n]*)?(?:\n|\Z)", text[close + 1:])
        if rest is None:
            raise EditionError(f"{where}:{line_of(text, close)}: something follows the 'wrong' list on its "
                               "closing line; the edition removes the entry's lines whole")
        text = text[:match.start()] + text[close + 1 + rest.end():]


def edition_text(relative: str, text: str) -> str:
    """The edition's version of one text file."""
    name, suffix = Path(relative).name, Path(relative).suffix
    if suffix == ".md":
        return edit_markdown(text, relative)
    if name in ("meson.build", "meson.options"):
        text = edit_lines(text, relative, "#")
        if relative == "tests/meson.build":
            text = strip_wrong_lists(text, relative)
        return text
    if suffix in SOURCE_SUFFIXES:
        return edit_lines(text, relative, "//")
    return text


# ----------------------------------------------------------------------------- the edition

class Entry:
    """One file of the edition: its content, or the course file it copies unchanged."""

    def __init__(self, relative: str, source: Path, content: bytes | None):
        self.relative, self.source, self.content = relative, source, content

    @property
    def mode(self) -> int:
        return 0o755 if os.access(self.source, os.X_OK) else 0o644

    def data(self) -> bytes:
        return self.content if self.content is not None else self.source.read_bytes()


def make_edition(course: Path) -> tuple[list[Entry], list[str]]:
    """(the edition's files, warnings about names the edition lacks)."""
    entries, warnings = [], []
    for relative in course_files(course):
        source = course / relative
        if source.is_symlink():
            raise EditionError(f"{relative}: a symbolic link; the edition holds plain files only")
        content = None
        if Path(relative).suffix in {".md", ".build", ".options"} | SOURCE_SUFFIXES:
            try:
                text = source.read_text(encoding="utf-8")
            except UnicodeDecodeError as error:
                raise EditionError(f"{relative}: not UTF-8 text ({error})") from error
            edited = edition_text(relative, text)
            content = edited.encode() if edited != text else None
            for number, found, line in names_missing(relative, edited):
                warnings.append(f"{relative}:{number}: names '{found}', which the student edition does not "
                                f"have: {line.strip()[:100]}")
        entries.append(Entry(relative, source, content))
    entries += starter_copies(course, entries)
    check_edition(entries)
    return entries, warnings


def blank_strings(line: str, quote: str) -> str:
    """The line with the inside of each string literal blanked, so that what is left is code and
    comment at the same places."""
    literal = re.compile(f"{quote}(?:\\\\.|[^{quote}\\\\])*{quote}")
    return literal.sub(lambda string: quote + " " * (len(string.group(0)) - 2) + quote, line)


def scanned_text(relative: str, line: str) -> str:
    """The part of one line of the edition that is read for names the edition lacks: the whole
    line of a README or a lesson's file, the comment of a build file's or a source's line."""
    if SCANNED_WHOLE.match(relative):
        return line
    if Path(relative).name in MESON_FILES:
        code = blank_strings(line, "'")  # a '#' inside a Meson string is no comment
        return line[code.index("#"):] if "#" in code else ""
    if Path(relative).suffix in SOURCE_SUFFIXES:
        code = blank_strings(line, '"')
        if "//" in code:
            return line[code.index("//"):]
        return line if line.lstrip().startswith(("/*", "*")) else ""
    return ""


def names_missing(relative: str, text: str) -> list[tuple[int, str, str]]:
    """(line number, name, line) for each program, suite or folder the edition lacks that the
    edition's text of this file names: in READMEs and lesson files anywhere, in the comments of
    build files and sources elsewhere."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [(number, name.group(0), line) for name in MISSING_IN_EDITION.finditer(scanned_text(relative, line))]
    return found


def starter_copies(course: Path, entries: list[Entry]) -> list[Entry]:
    """A copy of each lesson's student file as the edition holds it, under .course/starters/, for
    `./course reset`."""
    by_name = {entry.relative: entry for entry in entries}
    copies = []
    for folder, student in sorted(course_layout.student_files_of_build(course).items()):
        starter = by_name.get(f"lessons/{folder}/{student}")
        if starter is not None:
            copies.append(Entry(f"{STARTERS}/{folder}/{student}", starter.source, starter.content))
    return copies


def check_edition(entries: list[Entry]) -> None:
    """What must hold whatever the course holds: nothing left out slipped in, no marker and no
    'wrong' list remain, and the edition still has lessons, a build and a grader."""
    names = {entry.relative for entry in entries}
    slipped = sorted(name for name in names if left_out(name))
    if slipped:
        raise EditionError(f"left-out files in the edition: {', '.join(slipped[:5])}")
    for entry in entries:
        if entry.relative.endswith((".md", ".build", ".options")) or Path(entry.relative).suffix in SOURCE_SUFFIXES:
            text = entry.data().decode()
            if re.search(r"<!-- (/)?instructor-only -->|^[ \t]*(#|//) /?instructor-only[ \t]*$", text, re.M):
                raise EditionError(f"{entry.relative}: an instructor-only marker is left in the edition")
            if entry.relative == "tests/meson.build" and (WRONG_KEY.search(text) or re.search(r"\.(wrong|right)'", text)):
                raise EditionError("tests/meson.build: a 'wrong' or 'right' list is left in the edition")
    for needed in ("README.md", "meson.build", "meson.options", "tests/meson.build", "tests/grader/grade.py", "course"):
        if needed not in names:
            raise EditionError(f"the course has no {needed}: is {COURSE_ROOT} the course's root?")
    if not any(re.match(r"lessons/\d\d-[^/]+/README\.md$", name) for name in names):
        raise EditionError("the edition would hold no lesson (lessons/NN-name/README.md)")


def write_folder(entries: list[Entry], output: Path) -> None:
    for entry in entries:
        target = output / entry.relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.content is None:
            shutil.copy2(entry.source, target)
        else:
            target.write_bytes(entry.content)
            shutil.copystat(entry.source, target)


def write_tar(entries: list[Entry], tar_path: Path, top: str) -> None:
    """A .tar.gz whose one top folder is `top`; owners blanked, files in order."""
    with tarfile.open(tar_path, "w:gz") as archive:
        folders = set()
        for entry in entries:
            parents = Path(entry.relative).parents
            for folder in reversed([p for p in parents if p != Path(".")]):
                if folder not in folders:
                    folders.add(folder)
                    info = tarfile.TarInfo(f"{top}/{folder.as_posix()}")
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(entry.source.stat().st_mtime)
                    archive.addfile(info)
            data = entry.data()
            info = tarfile.TarInfo(f"{top}/{entry.relative}")
            info.size, info.mode, info.mtime = len(data), entry.mode, int(entry.source.stat().st_mtime)
            archive.addfile(info, io.BytesIO(data))


def tar_top_folder(tar_path: Path) -> str:
    name = tar_path.name
    for suffix in (".tar.gz", ".tgz"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    raise EditionError(f"--tar {tar_path}: the name must end in .tar.gz or .tgz")


# ----------------------------------------------------------------------------- command line

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make_student_edition.py", description=__doc__.split("\n\n")[0],
                                     epilog="Left out: " + "; ".join(f"{p}/ ({why})" for p, why in LEFT_OUT))
    parser.add_argument("--course", type=Path, default=COURSE_ROOT, help="the full course (default: %(default)s)")
    parser.add_argument("--output", type=Path, metavar="DIR", help="write the edition to this new (or empty) folder")
    parser.add_argument("--tar", type=Path, metavar="FILE", help="write the edition as FILE.tar.gz (one top folder)")
    parser.add_argument("--strict", action="store_true",
                        help="fail when a README, a lesson file or a comment of a build file or source "
                             "names something the edition lacks")
    args = parser.parse_args(argv)
    if not args.output and not args.tar:
        parser.error("give --output DIR, --tar FILE.tar.gz, or both")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    course = args.course.resolve()
    try:
        if not (course / "solutions").is_dir():
            raise EditionError(f"{course} has no solutions/: it is not the full course (already an edition?)")
        top = tar_top_folder(args.tar) if args.tar else None
        if args.output:
            output = args.output.resolve()
            if output == course or course in output.parents:
                raise EditionError(f"--output {output}: inside the course; write the edition elsewhere")
            if output.exists() and (not output.is_dir() or any(output.iterdir())):
                raise EditionError(f"--output {output}: exists and is not an empty folder")
        entries, warnings = make_edition(course)
    except EditionError as error:
        print(f"make_student_edition.py: error: {error}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"make_student_edition.py: {'error' if args.strict else 'warning'}: {warning}", file=sys.stderr)
    untracked = untracked_files(course)
    if untracked:
        shown = ", ".join(untracked[:10]) + (f" (and {len(untracked) - 10} more)" if len(untracked) > 10 else "")
        print(f"make_student_edition.py: left out {len(untracked)} file(s) that git does not track (not part of the "
              f"course: a class, grades, a file not yet added): {shown}", file=sys.stderr)
    if warnings and args.strict:
        return 1
    if args.output:
        write_folder(entries, args.output)
        print(f"student edition: {args.output} ({len(entries)} files)")
    if args.tar:
        write_tar(entries, args.tar, top)
        print(f"student edition: {args.tar} ({len(entries)} files under {top}/)")
    print("left out: " + ", ".join(path + "/" for path, _ in LEFT_OUT) + ", " + ", ".join(LEFT_OUT_GLOBS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
