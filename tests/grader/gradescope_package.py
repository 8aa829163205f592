#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Writes a Gradescope autograder package (a zip with setup.sh and run_autograder at its top) that
grades each upload with this course's grader, as `grade.py --submission` does.

    python3 tests/grader/gradescope_package.py --output autograder.zip [--lessons 01,02]

WARNING: Gradescope's own autograder machines have no GPU. There every case that needs one is
ungraded: a student whose code is perfect gets 8 of 49 points. Use this package only where
Gradescope runs it on a machine with the GPUs (or for the lessons graded without one), or grade
on your own GPU machine (grade.py --batch) and import the points (--roster: <out>/lms/*.csv).

The package holds the student edition of the course (no solutions/), setup.sh (the README's
Debian/Ubuntu packages; the CUDA Toolkit and NCCL must be on the image), run_autograder (grades
/autograder/submission into /autograder/results/results.json) and README.txt (this warning).
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE_ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "course"))

NO_GPU_WARNING = ("Gradescope's own autograder machines have no GPU: there every case that needs one is ungraded, "
                  "and a student whose code is perfect gets 8 of 49 points. Run this package only on a machine "
                  "with the GPUs, or grade on your own GPU machine (grade.py --batch ... --roster FILE) and import "
                  "<out>/lms/total.csv into the gradebook.")

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image. The CUDA Toolkit and NCCL are not
# installed here: Gradescope's machines have no GPU (see README.txt).
set -euo pipefail
apt-get update
apt-get install -y python3 meson ninja-build pkg-config catch2 bubblewrap g++
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for each upload: grade it with the course's grader, hand over results.json.
set -uo pipefail
cd /autograder/source/course
python3 tests/grader/grade.py --submission /autograder/submission --out /autograder/grade --quiet{lessons}
status=$?
mkdir -p /autograder/results
cp /autograder/grade/results.json /autograder/results/results.json || \\
  printf '{{"score": 0, "output": "The grader failed (exit status %s): ask your instructor."}}\\n' "$status" \\
  >/autograder/results/results.json
"""


def write_package(output: Path, course: Path, lessons: str | None) -> int:
    """The zip; returns the number of course files in it."""
    import make_student_edition as edition  # noqa: PLC0415 - the full course's tool

    entries, _ = edition.make_edition(course)
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as package:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN.format(
                lessons=f" --lessons {lessons}" if lessons else ""))):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            package.writestr(info, text)
        package.writestr("README.txt", "WARNING: " + NO_GPU_WARNING + "\n")
        for entry in entries:
            info = zipfile.ZipInfo(f"course/{entry.relative}")
            info.external_attr = entry.mode << 16
            package.writestr(info, entry.data())
    return len(entries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gradescope_package.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True, metavar="FILE.zip")
    parser.add_argument("--course", type=Path, default=COURSE_ROOT)
    parser.add_argument("--lessons", metavar="LIST", help="grade only these lessons, e.g. 01,02")
    args = parser.parse_args(argv)
    count = write_package(args.output, args.course.resolve(), args.lessons)
    print(f"Gradescope autograder: {args.output} (setup.sh, run_autograder, {count} course files)")
    print(f"WARNING: {NO_GPU_WARNING}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
