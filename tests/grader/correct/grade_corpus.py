#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# Grades the corpus of correct-but-different student files with the course's own grader, in one
# --batch run: submission k holds the k-th file (by name) of every lesson, so one run builds each
# lesson once per submission, not once per file. The corpus is stored as mutations of the reference
# solutions (tests/grader/correct/NN-name/NAME.right, corpus.py); the whole files are made from
# solutions/ into the work folder (DIR/corpus/NN-name/NAME.cpp|.cu) before grading. Prints, per file,
# whether the grader accepted it (its object checks, then its cases) and the points it earned, or
# why it was refused. On a host without a GPU the GPU cases are ungraded and "passed" means that
# the file was accepted and every case that ran passed; on a GPU host (--require-gpus) it means
# full marks. Exit status 0 when every file passed, 1 when one did not, 2 on a usage error.
#
#     python3 tests/grader/correct/grade_corpus.py [--lessons 01,06] [--work DIR] [-- GRADER ARGS...]
#
# Everything after "--" goes to grade.py as it is (e.g. --no-sandbox, --bwrap PATH, --require-gpus);
# with --require-gpus a file passes only at full marks with no case ungraded.
from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE = HERE.parents[2]
GRADER = COURSE / "tests" / "grader" / "grade.py"
sys.path.insert(0, str(HERE))
import corpus as stored  # noqa: E402  the stored mutations, made whole


def corpus(lessons: set[str] | None, only: set[str], into: Path,
           root: Path = HERE) -> tuple[dict[str, list[Path]], dict[Path, str]]:
    """The whole files of each lesson (NN-name), by name (only those named in `only`, if any), made
    from solutions/ and the stored mutations into `into`/NN-name/; and, apart, each stored mutation
    that no longer applies to its solution, with why."""
    found, stale = {}, {}
    shutil.rmtree(into, ignore_errors=True)
    for lesson, mutations in stored.mutations(lessons, only, root).items():
        for mutation in mutations:
            try:
                name, text = stored.whole_file(mutation)
            except stored.CorpusError as error:
                stale[mutation] = str(error)
                continue
            (into / lesson).mkdir(parents=True, exist_ok=True)
            (into / lesson / name).write_text(text)
            found.setdefault(lesson, []).append(into / lesson / name)
    return found, stale


def student_files(course: Path) -> dict[str, str]:
    """Each lesson's student file name, as the grader itself names it (--list-lessons)."""
    table = subprocess.run([sys.executable, str(GRADER), "--course", str(course), "--list-lessons"],
                           capture_output=True, text=True, check=True).stdout
    names = {}
    for line in table.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0][:2].isdigit():
            names[cells[0]] = cells[1]
    return names


def stage(files: dict[str, list[Path]], names: dict[str, str], into: Path) -> dict[tuple[str, str], Path]:
    """Submission k (corpus-01, corpus-02, ...) gets the k-th file of every lesson that has one."""
    placed = {}
    for lesson, variants in files.items():
        if lesson not in names:
            sys.exit(f"grade_corpus: {lesson} is not a lesson of the course")
        for k, source in enumerate(variants, start=1):
            student = f"corpus-{k:02d}"
            target = into / student / lesson / names[lesson]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            placed[(student, lesson)] = source
    return placed


def points(out: Path, student: str) -> dict[str, tuple[float, float]]:
    """(earned, possible here) per lesson number, from the student's Gradescope results.json."""
    path = out / student / "results.json"
    per_lesson: dict[str, list[float]] = {}
    if path.exists():
        for test in json.loads(path.read_text()).get("tests", []):
            number = str(test.get("number", "")).split(".")[0]
            earned, possible = per_lesson.setdefault(number, [0.0, 0.0])
            per_lesson[number] = [earned + test.get("score", 0), possible + test.get("max_score", 0)]
    return {number: (e, p) for number, (e, p) in per_lesson.items()}


def reasons(findings: str, lesson: str) -> str:
    """The lesson's findings, each cut to its first words ("uses getenv", "runs code before main() that
    calls through a pointer"), without the advice and the repeats."""
    short = []
    for finding in findings.split(" | "):
        if not finding.startswith(lesson + ": "):
            continue
        text = finding[len(lesson) + 2:].removeprefix("refused: ")
        text = text.split(" (", 1)[0]
        for part in text.split("; "):
            if part not in short:
                short.append(part)
    return "; ".join(short)


def verdict(status: str) -> str:
    # "ungraded: ...": every case of the lesson needs more GPUs than this machine has (lesson 10 without
    # a GPU): the object checks let the file through and nothing that ran was lost.
    if status.startswith(("passed", "ungraded")):
        return "accepted"
    for word in ("refused", "does not build", "missing", "invalid results"):
        if status.startswith(word):
            return word
    return "accepted, lost points"


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Grades the correct-but-different student files of tests/grader/correct/ with grade.py in one "
        "--batch run and prints each file's verdict (README.md beside this script).",
        epilog="Everything after -- goes to grade.py, e.g. -- --no-sandbox, or -- --require-gpus --bwrap PATH.")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course to grade against (default: this one; "
                        "the files are made from this one's solutions/ either way)")
    parser.add_argument("--lessons", help="only these lessons, e.g. 01,06")
    parser.add_argument("--work", type=Path, help="where the class, its builds and reports go (default: a temporary "
                                                  "folder, removed afterwards unless --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="only the files of this name, without suffix, e.g. thrust_ring_step (may be repeated)")
    parser.add_argument("grader_args", nargs="*", help="after --: arguments for grade.py")
    args = parser.parse_args()
    lessons = {part.strip() for part in args.lessons.split(",")} if args.lessons else None

    work = args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="grade-corpus-"))
    files, stale = corpus(lessons, set(args.only), work / "corpus")
    full_marks = "--require-gpus" in args.grader_args  # then an ungraded case is a failure too
    for mutation, why in stale.items():
        print(f"grade_corpus: {mutation.relative_to(COURSE)} no longer applies to its solution, not graded: {why}",
              file=sys.stderr)
    if not files:
        print("grade_corpus: no corpus files" + (" that apply" if stale else ""), file=sys.stderr)
        if not args.work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return 1 if stale else 2
    klass, build, out = work / "class", work / "build", work / "grade"
    shutil.rmtree(klass, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    placed = stage(files, student_files(args.course), klass)
    graded_lessons = ",".join(sorted({lesson[:2] for lesson in files}))
    command = [sys.executable, str(GRADER), "--course", str(args.course.resolve()), "--batch", str(klass),
               "--build-dir", str(build), "--out", str(out), "--lessons", graded_lessons, "--quiet",
               *args.grader_args]
    print(f"grading {len(placed)} files of {len(files)} lessons as {len(set(s for s, _ in placed))} submissions:")
    print("  " + " ".join(command))
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode == 3:
        print("grade.py: some case was skipped for missing GPUs (--require-gpus)")
    if done.returncode not in (0, 3):
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
        print(f"grade_corpus: the grader exited {done.returncode}", file=sys.stderr)
        return 1

    with (out / "grades.csv").open() as table:
        rows = {row["student"]: row for row in csv.DictReader(table)}
    failures = 0
    width = max([34] + [len(source.name) for source in placed.values()])  # the file column fits every name
    print(f"\n{'lesson':<22} {'file':<{width}} {'points':>9}  verdict")
    for (student, lesson), source in sorted(placed.items(), key=lambda item: (item[0][1], item[1].name)):
        row = rows.get(student, {})
        status = row.get(f"{lesson} status", "") or row.get("problem", "no grade")
        earned, possible = points(out, student).get(lesson[:2], (0, 0))
        word = verdict(status)
        if word == "accepted" and full_marks and (earned != possible or "ungraded" in status):
            word = "accepted, lost points"
        line = f"{lesson:<22} {source.name:<{width}} {earned:>4g}/{possible:<4g}  {word}"
        if word != "accepted":
            failures += 1
            why = reasons(row.get("findings", ""), lesson) if word == "refused" else ""
            if word == "accepted, lost points" and status.startswith("passed"):
                why = status  # passed what ran, with cases ungraded under --require-gpus
            line += ": " + (why or status.removeprefix(word).lstrip(": "))
        print(line)
    kept = args.work or args.keep
    for mutation, why in sorted(stale.items()):
        failures += 1
        print(f"{mutation.parent.name:<22} {mutation.name:<{width}} {'':>9}  does not apply: {why.splitlines()[0]}")
    total = len(placed) + len(stale)
    print(f"\n{total - failures} of {total} files passed; grading took {elapsed:.0f} s"
          + (f" (reports: {out})" if kept else ""))
    if not kept:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
