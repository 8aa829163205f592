#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# The corpus of correct-but-different student files (README.md beside this script) is stored as
# mutations of the lessons' reference solutions, in the format of tests/wrong/ (NN-name/NAME.right:
# '#' comment lines, then '@@ replace' / '@@ with' / '@@ end' blocks, applied by tests/wrong/mutate.py),
# so that it holds only what differs from the reference and follows every later change of it. This
# module turns a stored mutation into the whole student file and back:
#
#     python3 tests/grader/correct/corpus.py write DIR [--at COMMIT] [NAME ...]
#                                                                    the whole files, DIR/NN-name/NAME.cpp|.cu
#                                                                    (with the solutions of COMMIT: a stale one)
#     python3 tests/grader/correct/corpus.py store FILE ...          whole files (DIR/NN-name/NAME.cpp|.cu) back
#                                                                    into NN-name/NAME.right here
#     python3 tests/grader/correct/corpus.py check                   every mutation applies (exit 1 if not)
#
# A stored file's leading comment lines are the whole file's header comment, word for word ('//'
# written '#'); the rest of the whole file is the solution after its own header comment, with the
# blocks applied. A block whose lines left the solution, or occur in it more than once, is an error
# that names the file to update: write it out with the solution it was made from, change it, store it.
"""Usage: corpus.py write DIR [--at COMMIT] [NAME ...] | store FILE ... | check"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = HERE.parents[2]
SUFFIX = ".right"
sys.path.insert(0, str(COURSE / "tests" / "wrong"))
import mutate  # noqa: E402  tests/wrong/mutate.py: the format and the tool of the stored variants


class CorpusError(ValueError):
    """A stored mutation that does not apply to its solution, or a whole file that cannot be stored."""


def mutations(lessons: set[str] | None = None, only: set[str] = frozenset(), root: Path = HERE) -> dict[str, list[Path]]:
    """The stored mutations of each lesson folder (NN-name), by name (only the lessons and names asked for)."""
    found = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name[:2].isdigit()):
        if lessons and folder.name[:2] not in lessons:
            continue
        files = sorted(p for p in folder.iterdir() if p.suffix == SUFFIX and (not only or p.stem in only))
        if files:
            found[folder.name] = files
    return found


def solution_of(lesson: str, course: Path = COURSE) -> Path:
    """The lesson's reference solution: the one C++ or CUDA file of solutions/NN-name/."""
    sources = sorted(p for p in (course / "solutions" / lesson).glob("*") if p.suffix in (".cpp", ".cu"))
    if len(sources) != 1:
        raise CorpusError(f"solutions/{lesson}/ holds {len(sources)} sources, not one: which is the reference?")
    return sources[0]


def header_comment(text: str) -> list[str]:
    """The leading '#' lines of a stored mutation (SPDX lines included), as they are."""
    lines = []
    for line in text.split("\n"):
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


def reconstruct(solution_text: str, mutation_text: str, solution_name: str, mutation_name: str) -> str:
    """The whole student file: the mutation's header comment ('#' back to '//'), then the solution's
    code after its own header with the mutation's blocks applied by tests/wrong/mutate.py."""
    try:
        generated = mutate.mutate(solution_text, mutation_text, solution_name, mutation_name)
    except ValueError as error:
        raise CorpusError(str(error)) from None
    lines = generated.splitlines(keepends=True)
    code = "".join(lines[mutate.header_end(lines):])  # without mutate.py's "GENERATED" header
    return "".join("//" + line[1:] + "\n" for line in header_comment(mutation_text)) + code


def whole_file(mutation: Path, course: Path = COURSE, at: str | None = None) -> tuple[str, str]:
    """(the whole file's name, NAME.cpp or NAME.cu like the solution; its text) of a stored mutation,
    made from the course's solution (as git's commit `at` holds it, if given)."""
    lesson = mutation.parent.name
    solution = solution_of(lesson, course)
    name = f"solutions/{lesson}/{solution.name}"
    text = (subprocess.run(["git", "-C", str(course), "show", f"{at}:{name}"], capture_output=True, text=True,
                           check=True).stdout if at else solution.read_text())
    text = reconstruct(text, mutation.read_text(), name, f"tests/grader/correct/{lesson}/{mutation.name}")
    return mutation.stem + solution.suffix, text


def occurrences(text: str, body: str) -> int:
    """How often text occurs in body, overlapping occurrences counted (mutate.py counts them apart)."""
    count, at = 0, body.find(text)
    while at != -1:
        count, at = count + 1, body.find(text, at + 1)
    return count


def store(solution_text: str, whole_text: str) -> str:
    """The mutation that reconstruct() turns back into whole_text: the whole file's header comment, then
    one block per run of changed lines, each widened by the fewest lines around it that make what it
    replaces occur once in the solution as the earlier blocks left it."""
    solution = solution_text.splitlines(keepends=True)
    whole = whole_text.splitlines(keepends=True)
    if not whole_text.endswith("\n") or not solution_text.endswith("\n") or "".join(whole) != whole_text:
        raise CorpusError("a file to store must end with a newline and break lines only with '\\n'")
    top, whole_top = mutate.header_end(solution), mutate.header_end(whole)
    if not whole[0].startswith("// SPDX-License-Identifier:"):
        raise CorpusError("a file to store starts with its SPDX line, as every source of the course does")
    code, whole_code = solution[top:], whole[whole_top:]
    changes = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in
               difflib.SequenceMatcher(None, code, whole_code, autojunk=False).get_opcodes() if tag != "equal"]
    if not changes:
        raise CorpusError("the file's code is the solution's: nothing to store")
    current, shift, floor, blocks = list(solution), 0, top, []
    index = 0
    while index < len(changes):
        i1, i2, j1, j2 = changes[index]
        start, end = top + i1 + shift, top + i2 + shift  # the changed lines in `current`
        ceiling = top + changes[index + 1][0] + shift if index + 1 < len(changes) else len(current)
        low, high, body = start, end, "".join(current)
        while low == high or occurrences("".join(current[low:high]), body) != 1:
            if low <= floor and high >= ceiling:
                break
            if low > floor and ((high - low) - (end - start)) % 2 == 0 or high >= ceiling:
                low -= 1  # a line before first (a function's first line says more than a closing brace)
            else:
                high += 1
        if low == high or occurrences("".join(current[low:high]), body) != 1:
            if index + 1 == len(changes):
                raise CorpusError(f"no unique context for the change at line {top + i1 + 1} of the solution")
            changes[index:index + 2] = [(i1, changes[index + 1][1], j1, changes[index + 1][3])]  # one block
            continue
        old = current[low:high]
        new = current[low:start] + whole_code[j1:j2] + current[end:high]
        blocks.append((old, new))
        current[low:high] = new
        shift += len(new) - len(old)
        floor = low + len(new)
        index += 1
    out = ["#" + line[2:].rstrip("\n") + "\n" for line in whole[:whole_top]]
    for old, new in blocks:
        for line in old + new:
            if line.rstrip("\n") in ("@@ replace", "@@ with", "@@ end"):
                raise CorpusError(f"a line of the file reads as a block marker: {line!r}")
        out += ["@@ replace\n", *old, "@@ with\n", *new, "@@ end\n"]
    return "".join(out)


def check(course: Path = COURSE) -> list[str]:
    """The stored mutations that do not apply, each with why (none: [])."""
    problems = []
    for variants in mutations().values():
        for mutation in variants:
            try:
                name, text = whole_file(mutation, course)
                if not text.startswith("// SPDX-License-Identifier:"):
                    problems.append(f"{mutation.relative_to(HERE)}: the whole file has no SPDX line first")
            except CorpusError as error:
                problems.append(f"{mutation.relative_to(HERE)}: {error}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[1] == "write":
        into, rest = Path(argv[2]), argv[3:]
        at = rest[1] if rest[:1] == ["--at"] and len(rest) > 1 else None
        only = set(rest[2:] if at else rest)
        for lesson, variants in mutations(only=only).items():
            (into / lesson).mkdir(parents=True, exist_ok=True)
            for mutation in variants:
                name, text = whole_file(mutation, at=at)
                (into / lesson / name).write_text(text)
                print(into / lesson / name)
        return 0
    if len(argv) >= 3 and argv[1] == "store":
        for path in map(Path, argv[2:]):
            lesson = path.parent.name
            target = HERE / lesson / (path.stem + SUFFIX)
            solution, whole = solution_of(lesson), path.read_text()
            stored = store(solution.read_text(), whole)
            if reconstruct(solution.read_text(), stored, solution.name, target.name) != whole:
                raise CorpusError(f"{path}: the stored mutation does not give the file back")
            target.parent.mkdir(exist_ok=True)
            target.write_text(stored)
            print(target.relative_to(COURSE))
        return 0
    if argv[1:] == ["check"]:
        problems = check()
        print("\n".join(problems) or f"every stored mutation applies ({sum(map(len, mutations().values()))} files)")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except CorpusError as error:
        print(f"corpus.py: {error}", file=sys.stderr)
        sys.exit(1)
