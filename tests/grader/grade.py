#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Grade the course: build each lesson's tests with a student's file, run its test cases (each
that did not pass again alone), and report points as a table, Gradescope results.json and JUnit XML.

    python3 tests/grader/grade.py                          grade this working tree
    python3 tests/grader/grade.py --submission DIR         grade one student's files
    python3 tests/grader/grade.py --batch DIR --csv F.csv  grade each subfolder of DIR
    python3 tests/grader/grade.py --batch DIR --slurm --out RUN [--submit]
                                                           the same on a Slurm cluster: a job array
    python3 tests/grader/grade.py --merge RUN [--only-missing]
                                                           gather its results (resubmit what is missing)
    python3 tests/grader/grade.py --list-lessons           which file of each lesson is the student's

Exit status: 0 grading completed (whatever the score), 1 internal error (the grader, Meson or
the course itself failed), 2 usage error, 3 --require-gpus and some case was skipped for
missing GPUs (--merge: in some task), 4 (--merge) some submissions were not graded. See
tests/grader/README.md.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import class_report  # noqa: E402
import course_layout as layout  # noqa: E402
import machine  # noqa: E402
import meson_build  # noqa: E402
import report_csv  # noqa: E402
import report_gradescope  # noqa: E402
import report_junit  # noqa: E402
import report_text  # noqa: E402
import slurm_jobs  # noqa: E402
from grading import Grader, Settings, build_starters, clean_template  # noqa: E402
from sandbox import Sandbox  # noqa: E402
import text_safety  # noqa: E402
from text_safety import printable  # noqa: E402
from scoring import Grade  # noqa: E402

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_GPUS, EXIT_MISSING = 0, 1, 2, 3, slurm_jobs.EXIT_MISSING
COURSE_ROOT = Path(__file__).resolve().parents[2]


REFERENCE_FLOOR, REFERENCE_FACTOR = 10.0, 5.0  # --reference-profile: a case's time-out from the reference's
WATCHDOG_FLOOR = 3.0  # --reference-profile: in a lesson known to deadlock, each watched call's limit (see watchdog_caps)


class UsageError(Exception):
    """A bad command line (exit status 2)."""


class RefusedToGrade(Exception):
    """The grader will not grade here as asked (exit status 1): a class without the sandbox, or
    GPU settings changed by a submission."""


# ----------------------------------------------------------------------------- command line

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="grade.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Outputs (in --out): report.txt, results.json (Gradescope), junit.xml, machine.json, "
               "logs/<lesson>.log; with --batch one such folder per student and a CSV.")
    parser.add_argument("--course", type=Path, default=COURSE_ROOT,
                        help="the course's root folder (default: %(default)s)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--submission", type=Path, metavar="DIR",
                      help="a student's submission: only its student files are used, found as "
                           "lessons/NN-name/<file>, NN-name/<file> or <file> anywhere in DIR")
    what.add_argument("--batch", type=Path, metavar="DIR", help="grade every subfolder of DIR as one student")
    what.add_argument("--merge", type=Path, metavar="RUN",
                      help="gather the results of a Slurm run folder (written by --batch --slurm) into RUN/grade/")
    parser.add_argument("--student", action="append", default=[], metavar="NAME",
                        help="with --batch: grade only this subfolder (may be repeated; a name that starts with "
                             "'-' as --student=-name); its rows of an existing class CSV are replaced, the "
                             "others kept")
    parser.add_argument("--roster", type=Path, metavar="FILE",
                        help="with --batch or --merge: a CSV of student folder, LMS id (a header such as "
                             "'student,SIS User ID' names the id column): also write <out>/lms/total.csv and "
                             "one <lesson>.csv each, '<id>,<points>', for an LMS's grade import")
    parser.add_argument("--build-dir", type=Path,
                        help="where to build, outside the course (default: a folder of the user's cache, "
                             "~/.cache/multi-gpu-course-grader/<course>-<hash>)")
    parser.add_argument("--out", type=Path, help="where to write the reports (default: <build-dir>/grade; with "
                                                 "--batch DIR, <build-dir>/class-<DIR's name>)")
    parser.add_argument("--csv", type=Path, help="with --batch: the CSV to write (default: <out>/grades.csv)")
    parser.add_argument("--lessons", metavar="LIST",
                        help="only these lessons, e.g. 01,03; the others are not graded at all (no CSV column, "
                             "no points in total or possible) (default: all)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds per test case before it counts as hung (default: %(default)g)")
    parser.add_argument("--build-timeout", type=float, default=900.0, metavar="S",
                        help="seconds to build one lesson (default: %(default)g)")
    parser.add_argument("-j", "--jobs", type=int, metavar="N", help="parallel build jobs (default: Ninja's)")
    parser.add_argument("--require-gpus", action="store_true",
                        help="instructors: a case skipped for missing GPUs is an error (exit status 3)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--profile", action="store_true",
                        help="print where the time went (per submission and lesson: staging, configure, builds, "
                             "checks, each case's run) and write it to <out>/profile.json and profile.txt")
    parser.add_argument("--reference-profile", type=Path, metavar="FILE",
                        help="a profile.json of the reference solutions graded on this machine (--profile): each "
                             "case's time-out becomes max(%g s, %gx its time there), at most --timeout; once a "
                             "case of a lesson has hung in a process of its own, every watched call of the lesson's "
                             "other cases gets max(%g s, %gx the case's time there) plus the lesson's start-up"
                             % (REFERENCE_FLOOR, REFERENCE_FACTOR, WATCHDOG_FLOOR, REFERENCE_FACTOR))
    parser.add_argument("--list-lessons", action="store_true",
                        help="print each lesson's student file (the one file taken from a submission) and stop")
    sandbox = parser.add_argument_group("sandbox and integrity checks (tests/grader/README.md)")
    sandbox.add_argument("--bwrap", metavar="PATH", help="the bubblewrap program (default: bwrap on PATH)")
    sandbox.add_argument("--no-sandbox", action="store_true",
                         help="run the test programs without bubblewrap (limits still apply; reports say so)")
    sandbox.add_argument("--allow-header", action="append", default=[], metavar="GLOB",
                         help="accept included headers whose resolved path matches GLOB (may be repeated)")
    sandbox.add_argument("--allow-symbol", action="append", default=[], metavar="NAME",
                         help="accept this symbol (mangled or demangled) in student objects (may be repeated)")
    sandbox.add_argument("--no-object-checks", action="store_true",
                         help="do not check the headers and symbols of student objects: only to try the grader's "
                              "other defences on hostile code (every report then says so)")
    slurm = parser.add_argument_group("a class on a Slurm cluster (tests/grader/README.md, 'Grading a class on Slurm')")
    slurm.add_argument("--slurm", action="store_true",
                       help="with --batch: write a job array that grades the class into the run folder --out "
                            "(on a file system every node sees): RUN/grade.sbatch, prepare.sbatch, merge.sbatch")
    slurm.add_argument("--submit", action="store_true",
                       help="with --slurm: submit the build job, the array after it and the merge after the array")
    slurm.add_argument("--per-task", type=int, default=1, metavar="K", help="students per array task (1)")
    slurm.add_argument("--partition", help="#SBATCH --partition")
    slurm.add_argument("--account", help="#SBATCH --account")
    slurm.add_argument("--time", metavar="LIMIT", help="#SBATCH --time, per task (e.g. 30 or 1:00:00)")
    slurm.add_argument("--gpus-per-task", type=int, metavar="N",
                       help="GPUs per task, 0 for none, as on a cluster whose nodes offer no GPU to Slurm (sinfo "
                            "-o '%%P %%G' shows (null)) (default: the most [gpus:G] any graded case asks for)")
    slurm.add_argument("--gres", metavar="SPEC", help="#SBATCH --gres=SPEC (e.g. gpu:2) instead of --gpus-per-task")
    slurm.add_argument("--cpus-per-task", type=int, metavar="N", help="#SBATCH --cpus-per-task")
    slurm.add_argument("--mem", metavar="SIZE", help="#SBATCH --mem, per task (e.g. 16G)")
    slurm.add_argument("--sbatch-line", action="append", default=[], metavar="LINE",
                       help="one more #SBATCH line in every job script, e.g. '--qos=short' (may be repeated)")
    slurm.add_argument("--only-missing", action="store_true",
                       help="with --merge: submit the array again for the tasks whose students are missing")
    slurm.add_argument("--build-only", action="store_true",
                       help="build the course's own starters in <build-dir>/pristine and stop (the build job)")
    slurm.add_argument("--prepared-build", type=Path, metavar="DIR",
                       help="start from the build that --build-only made in DIR (what each array task does)")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return args


def default_build_dir(course: Path) -> Path:
    """A folder of the user's cache, one per course checkout, so a re-run rebuilds only what changed."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha1(str(course).encode()).hexdigest()[:10]
    folder = (cache / "multi-gpu-course-grader" / f"{layout.safe_name(course.name)}-{digest}").resolve()
    if folder.is_relative_to(course):  # the course holds the user's cache (a course in $HOME itself)
        folder = Path(tempfile.gettempdir()).resolve() / f"multi-gpu-course-grader-{os.getuid()}-{digest}"
    return folder


def reference_times(profile: Path) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({lesson: {case: seconds}}, {lesson: start-up seconds}) from a profile.json of the reference
    solutions: each case's longest time there (in a shared run, the first case's includes the
    process's start-up; a lone run's too), and each lesson's longest such time that includes a
    start-up (its first case's, or a lone run's)."""
    try:
        rows = json.loads(profile.read_text())["rows"]
        longest: dict[str, dict[str, float]] = {}
        startup: dict[str, float] = {}
        for row in rows:
            if row["step"] in ("case", "alone") and row["lesson"]:
                cases = longest.setdefault(row["lesson"], {})
                cases[row["detail"]] = max(cases.get(row["detail"], 0.0), float(row["seconds"]))
                if row["step"] == "alone" or row.get("first"):
                    startup[row["lesson"]] = max(startup.get(row["lesson"], 0.0), float(row["seconds"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise UsageError(f"--reference-profile {profile}: not a profile.json that grade.py --profile wrote ({error})")
    return longest, startup


def reference_timeouts(profile: Path, timeout: float) -> dict[str, dict[str, float]]:
    """Each case's time-out: its reference time times REFERENCE_FACTOR, at least REFERENCE_FLOOR, at
    most `timeout`. A case the reference never ran keeps `timeout`."""
    return {lesson: {case: min(timeout, max(REFERENCE_FLOOR, REFERENCE_FACTOR * seconds))
                     for case, seconds in cases.items()} for lesson, cases in reference_times(profile)[0].items()}


def watchdog_caps(profile: Path) -> dict[str, dict[str, float]]:
    """Each case's cap on its watchdogs, used only once its lesson is known to deadlock (a case hung
    in a process of its own): the reference's time for the case times REFERENCE_FACTOR, at least
    WATCHDOG_FLOOR, plus the lesson's start-up there. A watched call is part of its case, so the
    case's time bounds the call's; in a lone run, the first watched call may also be where the
    process makes its CUDA contexts and NCCL starts, which the start-up covers. A case the
    reference never ran has no cap."""
    longest, startup = reference_times(profile)
    return {lesson: {case: max(WATCHDOG_FLOOR, REFERENCE_FACTOR * seconds) + startup.get(lesson, 0.0)
                     for case, seconds in cases.items()} for lesson, cases in longest.items()}


def lesson_table(course: Path) -> str:
    """Each lesson's student file and the other sources of its folder, as the Markdown table of
    the README's quick start (tests/grader/README.md; the grader's own tests compare the two)."""
    lines = ["| Lesson | Student file (graded) | Other sources in the folder (the course's own are used) |",
             "|---|---|---|"]
    for lesson in layout.discover_lessons(course):
        others = sorted(path.name for path in (course / "lessons" / lesson.slug).iterdir()
                        if path.suffix in (".cpp", ".cu", ".h", ".cuh") and path.name != lesson.student_filename)
        lines.append(f"| {lesson.slug} | `{lesson.student_filename}` | {', '.join(f'`{name}`' for name in others)} |")
    return "\n".join(lines) + "\n"


def make_settings(args: argparse.Namespace) -> Settings:
    """Checks the command line and turns it into Settings."""
    course = args.course.resolve()
    if not (course / "meson.build").is_file() or not (course / "lessons").is_dir():
        raise UsageError(f"--course {course}: not the course's root (no meson.build or lessons/)")
    for name in ("submission", "batch"):
        folder = getattr(args, name)
        if folder is not None and not folder.is_dir():
            raise UsageError(f"--{name} {folder}: no such folder")
    if args.csv is not None and args.batch is None:
        raise UsageError("--csv only goes with --batch")
    if args.roster is not None and args.batch is None:
        raise UsageError("--roster only goes with --batch or --merge")
    if args.student and args.batch is None:
        raise UsageError("--student only goes with --batch")
    if args.slurm and args.out is None:
        raise UsageError("--slurm needs --out RUN: the run folder, on a file system every node of the cluster sees")
    if args.prepared_build is not None and args.batch is None:
        raise UsageError("--prepared-build only goes with --batch")
    if args.per_task < 1:
        raise UsageError("--per-task must be positive")
    if args.timeout <= 0 or args.build_timeout <= 0 or (args.jobs is not None and args.jobs < 1):
        raise UsageError("--timeout, --build-timeout and -j must be positive")
    try:
        found = layout.discover_lessons(course, warn=lambda text: print(f"grade.py: warning: {text}", file=sys.stderr))
        lessons = layout.select_lessons(found, args.lessons)
    except layout.LayoutError as error:
        raise UsageError(str(error)) from error
    build_root = (args.build_dir or default_build_dir(course)).resolve()
    if build_root.is_relative_to(course):
        raise UsageError(f"--build-dir {build_root} lies inside the course {course}: the grader builds outside "
                         "the course, so that no #include can reach its solutions/")
    default_out = build_root / (f"class-{layout.safe_name(args.batch.resolve().name)}" if args.batch else "grade")
    out = (args.out or default_out).resolve()
    if args.batch is not None:
        for name, path in (("--out", out), ("--csv", args.csv.resolve() if args.csv else None)):
            if path is not None and path.is_relative_to(course):
                raise UsageError(f"{name} {path} lies inside the course {course}: a class's grades and reports "
                                 "do not belong in the course (the student edition is made from it); write them "
                                 "elsewhere, e.g. ~/grading/<class>/")
        if args.batch.resolve().is_relative_to(course):
            print(f"grade.py: warning: the class {args.batch.resolve()} lies inside the course; keep submissions "
                  "outside it (make_student_edition.py leaves out what git does not track, and says so)",
                  file=sys.stderr)
    if args.roster is not None and not args.roster.is_file():
        raise UsageError(f"--roster {args.roster}: no such file")
    submissions = [p.resolve() for p in (args.submission, args.batch) if p is not None]
    sandbox = Sandbox.off("--no-sandbox") if args.no_sandbox else Sandbox.detect(args.bwrap)
    case_timeouts = reference_timeouts(args.reference_profile, args.timeout) if args.reference_profile else {}
    caps = watchdog_caps(args.reference_profile) if args.reference_profile else {}
    return Settings(course=course, build_root=build_root, lessons=lessons, timeout=args.timeout,
                    case_timeouts=case_timeouts, watchdog_caps=caps,
                    build_timeout=args.build_timeout, jobs=args.jobs, quiet=args.quiet, out=out,
                    keep_out=submissions, sandbox=sandbox, allow_headers=args.allow_header,
                    allow_symbols=args.allow_symbol, object_checks=not args.no_object_checks)


# ----------------------------------------------------------------------------- outputs

class MachineRecord:
    """The machine record, from the grader's GPU probe (never from a graded program)."""

    def __init__(self, grader: Grader):
        self._grader = grader
        self._record: dict | None = None

    def get(self) -> dict:
        if self._record is not None:
            return self._record
        self._record = machine.machine_record(self._grader.gpu_probe, self._grader.sandbox.description)
        return self._record


def write_outputs(grade: Grade, out: Path, seconds: float) -> None:
    """report.txt, results.json, junit.xml, machine.json and logs/ in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.txt").write_text(report_text.render(grade))
    (out / "results.json").write_text(json.dumps(report_gradescope.results_json(grade, seconds), indent=2) + "\n")
    (out / "junit.xml").write_text(report_junit.junit_xml(grade))
    (out / "machine.json").write_text(json.dumps(grade.machine, indent=2) + "\n")
    (out / class_report.GRADE_JSON).write_text(json.dumps(class_report.grade_record(grade), indent=2) + "\n")
    logs = out / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir()
    for lesson in grade.lessons:
        # what the compiler and the program printed, its escape codes written as text (text_safety)
        (logs / f"{lesson.lesson.slug}.log").write_text(printable(lesson.log or "(nothing was built or run)\n"))


GPU_SKIP_STUDENTS = 10  # --require-gpus: students named one line each; the rest counted


def gpu_skip_report(grades: list[Grade]) -> list[str]:
    """What --require-gpus found, bounded whatever the class's size: one line per student (the
    number of cases skipped for missing GPUs, per lesson) for the first few, then a count. Each
    student's results.json names every such case."""
    short = [grade for grade in grades if grade.gpu_skips()]
    lines = []
    for grade in short[:GPU_SKIP_STUDENTS]:
        skips = grade.gpu_skips()
        per_lesson: dict[str, int] = {}
        for lesson, _ in skips:
            per_lesson[lesson.lesson.slug] = per_lesson.get(lesson.lesson.slug, 0) + 1
        needs = sorted({result.message for _, result in skips})
        lines.append(f"  {printable(grade.student)}: {len(skips)} cases ("
                     + ", ".join(f"{slug}: {n}" for slug, n in per_lesson.items()) + f"); {'; '.join(needs)}")
    if len(short) > GPU_SKIP_STUDENTS:
        lines.append(f"  and {len(short) - GPU_SKIP_STUDENTS} more students the same way")
    if short:
        lines.append("  (each student's results.json and report.txt name the cases)")
    return lines


# ----------------------------------------------------------------------------- modes

def grade_single(settings: Settings, args: argparse.Namespace, out: Path) -> list[Grade]:
    """The working tree, or one --submission."""
    grader = Grader(settings)
    record = MachineRecord(grader)
    start = time.monotonic()
    grader.profile.submission = "course" if args.submission is None else args.submission.resolve().name
    if args.submission is None:
        lessons = grader.grade_working_tree()
        grade = grader.make_grade("course", f"the working tree {settings.course}", lessons, record.get())
    else:
        submission = args.submission.resolve()
        lessons = grader.grade_submission(submission, settings.build_root / "submission")
        grade = grader.make_grade(submission.name, f"the submission {submission}", lessons, record.get())
    grade.gpus_required = args.require_gpus
    with grader.profile.span("reports"):
        write_outputs(grade, out, time.monotonic() - start)
    finish_profile(grader, args, out)
    print(report_text.render(grade), end="")
    print(f"\nReports: {out}/ (report.txt, results.json, junit.xml, machine.json, logs/)")
    return [grade]


def class_folders(args: argparse.Namespace) -> list[Path]:
    """The submissions of --batch, in the order they are graded and listed (--student: only those)."""
    folders = sorted(p for p in args.batch.resolve().iterdir() if p.is_dir() and not p.name.startswith("."))
    if args.student:
        unknown = sorted(set(args.student) - {folder.name for folder in folders})
        if unknown:
            raise UsageError(f"--student: no such submission in {args.batch}: {', '.join(unknown)}")
        folders = [folder for folder in folders if folder.name in args.student]
    if not folders:
        raise UsageError(f"--batch {args.batch}: no submission folders in it")
    return folders


def grade_batch(settings: Settings, args: argparse.Namespace, out: Path) -> tuple[list[Grade], bool]:
    """Every subfolder of --batch; returns the grades and whether the grader failed on someone."""
    folders = class_folders(args)
    if args.prepared_build is not None:
        copy_prepared_build(args.prepared_build.resolve(), settings.build_root)
    grader = Grader(settings)
    if not grader.sandbox.enabled and not args.no_sandbox:
        raise RefusedToGrade(f"the sandbox is {grader.sandbox.description}: a class is graded only inside it. "
                             "Install bubblewrap (or pass --bwrap PATH), or pass --no-sandbox to grade without it "
                             "(every report then says so)")
    record = MachineRecord(grader)
    grades, rows, failed = [], [], False
    gpu_settings = machine.gpu_state()
    for folder in folders:
        student, start = folder.name, time.monotonic()
        grader.profile.submission = student
        grader.say(f"===== {student}")
        try:
            # Each student's build starts from a copy of the course's starters built once in batch/
            # (batch/build.clean): only the student files (newer than every object) are compiled, and
            # no student's build sees another's objects or listings.
            lessons = grader.grade_submission(folder, settings.build_root / "batch", class_of_many=True)
        except meson_build.SetupError:
            raise  # the course or the machine is broken: no point going on
        except Exception:  # the grader failed on this one student: record it, grade the rest
            problem = "internal error: " + traceback.format_exc().strip().splitlines()[-1]  # CSV: csv_cell
            print(printable(f"grade.py: {student}: {traceback.format_exc()}"), file=sys.stderr)
            rows.append((student, None, problem))
            failed = True
            continue
        changed = machine.gpu_state()
        if changed != gpu_settings:
            finding = (f"the GPUs' settings changed while this submission was graded (nvidia-smi "
                       f"{machine.GPU_STATE_FIELDS}: before {gpu_settings!r}, after {changed!r})")
            if lessons:
                lessons[0].findings.append(finding)
        grade = grader.make_grade(student, f"the submission {folder}", lessons, record.get())
        grade.gpus_required = args.require_gpus
        with grader.profile.span("reports"):
            write_outputs(grade, out / layout.safe_name(student), time.monotonic() - start)
        grades.append(grade)
        rows.append((student, grade, ""))
        print(printable(batch_line(grade, out / layout.safe_name(student) / "report.txt")))
        if changed != gpu_settings:  # every later grade on this machine could be affected: stop
            write_class_csv((args.csv or out / "grades.csv").resolve(), settings.lessons, rows, args)
            raise RefusedToGrade(f"{student}: {finding}; the batch stops here (the CSV holds the students "
                                 "graded so far): restore the settings, then grade the rest with --student")
    csv_path = (args.csv or out / "grades.csv").resolve()
    kept = write_class_csv(csv_path, settings.lessons, rows, args)
    (out / "machine.json").write_text(json.dumps(record.get(), indent=2) + "\n")
    finish_profile(grader, args, out)
    print(f"\nCSV: {csv_path}" + (f" ({len(rows)} rows graded now, {kept} kept from before)" if args.student else "")
          + f"\nMachine: {machine.describe(record.get())}")
    notes = sorted({grade.ungraded_note() for grade in grades} - {""})
    if notes:
        print("Ungraded: " + "\n          ".join(notes))
    class_outputs(csv_path, out, f"Class {args.batch.resolve().name}", args.roster)
    return grades, failed


def write_class_csv(path: Path, lessons: list, rows: list, args: argparse.Namespace) -> int:
    """The class CSV; with --student, the existing CSV's rows of the other students are kept (a
    regrade replaces its own rows only), in the order of the class's folders. Returns how many
    rows were kept."""
    if not args.student or not path.is_file():
        report_csv.write_csv(path, lessons, rows)
        return 0
    first = report_csv.header([lesson.slug for lesson in lessons])
    with path.open(newline="") as source:
        old = list(csv.reader(source))
    if not old or old[0] != first:
        raise RefusedToGrade(f"--student: {path} has other columns than this grading ({', '.join(first[1:-6])}): "
                             "regrade with the same --lessons, or write another --csv")
    new = {student: report_csv.row(student, lessons, grade, problem) for student, grade, problem in rows}
    kept = {name: row for row in old[1:] if row and (name := text_safety.from_csv_cell(row[0])) not in new}
    order = [folder.name for folder in sorted(p for p in args.batch.resolve().iterdir() if p.is_dir())]
    names = [name for name in order if name in new or name in kept] + \
        [name for name in kept if name not in order]  # a folder since removed keeps its row, last
    report_csv.write_table(path, first, [new[name] if name in new else kept[name] for name in names])
    return len(kept)


def class_outputs(csv_path: Path, out: Path, title: str, roster: Path | None) -> None:
    """After a batch or a merge: the class at a glance (terminal and <out>/class.html), and with
    --roster the LMS import files."""
    print("\n" + "\n".join(class_report.summary_lines(csv_path, out)))
    print(f"Class page: {class_report.write_page(csv_path, out, title)}")
    if roster is not None:
        written, warnings = class_report.write_lms(csv_path, roster, out)
        for warning in warnings:
            print(f"grade.py: warning: LMS export: {warning}", file=sys.stderr)
        print(f"LMS import ({len(written)} files, id,points): {written[0].parent}/ (total.csv, one per lesson)")


def finish_profile(grader: Grader, args: argparse.Namespace, out: Path) -> None:
    """With --profile: the profile on stderr and in <out>/profile.json and profile.txt."""
    if not args.profile:
        return
    grader.profile.write(out)
    print(grader.profile.text() + f"Profile: {out}/profile.json, profile.txt", file=sys.stderr)


def batch_line(grade: Grade, report: Path) -> str:
    """One student's lines of a batch: points, what is ungraded, which lessons lost points and why."""
    lines = [f"{grade.student}: {grade.earned}/{grade.possible} points  ({report})"]
    if grade.ungraded:
        lines.append(f"    {grade.ungraded_note()}")
    lost = grade.lost_lessons()
    if lost:
        lines.append("    lost points: " + "; ".join(f"{lesson.lesson.slug}: {lesson.short_status()}" for lesson in lost))
    return "\n".join(lines)


def copy_prepared_build(prepared: Path, build_root: Path) -> None:
    """Starts a build folder from the course's starters that --build-only built in `prepared`,
    for the class (batch/build.clean, from which each student's build starts) and for learning
    the cases of a lesson that does not build (pristine/): only the students' files are
    compiled then. Files keep their times."""
    if not slurm_jobs.prepared(prepared):
        raise UsageError(f"--prepared-build {prepared}: no finished build there (grade.py --build-only makes one)")
    if not (build_root / "pristine").exists():
        shutil.copytree(prepared / "pristine", build_root / "pristine", symlinks=True)
    clean = clean_template(build_root / "batch")
    if not clean.exists():
        shutil.copytree(prepared / "pristine" / "build", clean, symlinks=True)


def build_only(settings: Settings) -> int:
    """The course's own starters, built once in <build-dir>/pristine (the Slurm build job)."""
    print(f"building the course's starters in {settings.build_root / 'pristine'}", file=sys.stderr)
    built = build_starters(settings)
    for slug, problem in built.items():
        print(f"{slug}: {problem or 'built'}", file=sys.stderr)
    (settings.build_root / "prepared.json").write_text(json.dumps(
        {"ok": True, "course": str(settings.course), "lessons": built}, indent=2) + "\n")
    return EXIT_OK


def grading_options(args: argparse.Namespace, settings: Settings) -> list[str]:
    """The options that decide how a submission is graded, for grade.py in each array task."""
    options = ["--lessons", ",".join(lesson.slug for lesson in settings.lessons),
               "--timeout", f"{args.timeout:g}", "--build-timeout", f"{args.build_timeout:g}"]
    options += ["-j", str(args.jobs)] if args.jobs else []
    options += ["--reference-profile", str(args.reference_profile.resolve())] if args.reference_profile else []
    options += [flag for flag, on in (("--require-gpus", args.require_gpus), ("--quiet", args.quiet),
                                      ("--no-sandbox", args.no_sandbox),
                                      ("--no-object-checks", args.no_object_checks)) if on]
    options += ["--bwrap", args.bwrap] if args.bwrap else []
    for glob in args.allow_header:
        options += ["--allow-header", glob]
    for name in args.allow_symbol:
        options += ["--allow-symbol", name]
    return options


def write_slurm(settings: Settings, args: argparse.Namespace) -> int:
    """--batch --slurm: the run folder's plan and job scripts; with --submit, the jobs."""
    run = settings.out
    students = [folder.name for folder in class_folders(args)]
    slugs = [lesson.slug for lesson in settings.lessons]
    gpus = args.gpus_per_task
    if gpus is None and not args.gres:
        gpus = slurm_jobs.gpus_needed(settings.course, slugs)
    resources = slurm_jobs.Resources(partition=args.partition, account=args.account, time=args.time,
                                     gpus_per_task=gpus or None, gres=args.gres, cpus_per_task=args.cpus_per_task,
                                     mem=args.mem, extra=args.sbatch_line)
    plan = slurm_jobs.Plan(run=run, course=settings.course, class_dir=args.batch.resolve(),
                           build=settings.build_root, lessons=slugs,
                           tasks=slurm_jobs.split_tasks(students, args.per_task),
                           grade_args=grading_options(args, settings),
                           csv=(args.csv or run / "grade" / "grades.csv").resolve(),
                           name=f"grade-{args.batch.resolve().name}",
                           roster=str(args.roster.resolve()) if args.roster else "",
                           require_gpus=args.require_gpus)
    scripts = slurm_jobs.write_run(plan, resources)
    print(f"{len(students)} submissions in {len(plan.tasks)} array tasks, "
          f"{gpus if gpus is not None else args.gres} GPU(s) each; run folder {run}")
    for script in scripts:
        print(f"  {script}")
    problem = slurm_jobs.gpu_resource_problem(resources)  # before sbatch, which would only say "Invalid gres"
    if problem and args.submit:
        raise slurm_jobs.SlurmError(f"{problem}\nNothing was submitted; the scripts above are written.")
    if problem:
        print(f"grade.py: warning: {problem}", file=sys.stderr)
    if args.submit:
        report_submission(slurm_jobs.submit(plan))
    else:
        print(f"Submit with:  {shlex.join(['python3', sys.argv[0] if sys.argv[0].endswith('grade.py') else str(Path(__file__))] + args.argv + ['--submit'])}"
              "   (or by hand: README, 'Grading a class on Slurm')")
    return EXIT_OK


def report_submission(record: dict) -> None:
    if "prepare" in record:
        print(f"build job {record['prepare']}")
    print(f"array job {record['array']} (tasks {record['tasks']})\nmerge job {record['merge']}")


def merge_run(args: argparse.Namespace) -> int:
    """--merge RUN [--only-missing]."""
    try:
        plan = slurm_jobs.Plan.load(args.merge.resolve())
    except slurm_jobs.SlurmError as error:
        raise UsageError(str(error)) from error
    states, missing = slurm_jobs.merge(plan)
    graded = sum(len(state.students) for state in states if state.complete)
    short = [state for state in states if state.complete and state.short_of_gpus]
    print(f"{graded} of {sum(len(state.students) for state in states)} submissions graded; CSV: {plan.csv}")
    if short:
        print(f"--require-gpus: {sum(len(state.students) for state in short)} of them with cases skipped for missing "
              f"GPUs (tasks {slurm_jobs.array_spec([state.task for state in short])}; listed in "
              f"{plan.run / 'grade' / 'missing.txt'})")
    print(f"Per task (node, GPUs, state): {plan.run / 'grade' / 'tasks.csv'}")
    if missing:
        print(f"NOT GRADED{', OR SHORT OF GPUS (--require-gpus)' if short else ''} ({len(missing)}; also in "
              f"{plan.run / 'grade' / 'missing.txt'}):")
        for line in missing:
            print(printable(f"  {line}"))
    roster = args.roster or (Path(plan.roster) if plan.roster else None)
    class_outputs(plan.csv, plan.run / "grade", f"Class {plan.class_dir.name}", roster)
    if args.only_missing:
        tasks = [state.task for state in states if (not state.complete or state.short_of_gpus) and not state.waiting]
        waiting = [state.task for state in states if state.waiting]
        if waiting:
            print(f"not resubmitted, still queued or running: tasks {slurm_jobs.array_spec(waiting)}")
        if tasks:
            print(f"resubmitting tasks {slurm_jobs.array_spec(tasks)}")
            report_submission(slurm_jobs.submit(plan, tasks))
        else:
            print("nothing to resubmit")
    if any(not state.complete for state in states):
        return EXIT_MISSING
    return EXIT_GPUS if short else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.merge is not None:
            return merge_run(args)
        if args.list_lessons:
            try:
                print(lesson_table(args.course.resolve()), end="")
            except layout.LayoutError as error:
                raise UsageError(str(error)) from error
            return EXIT_OK
        if args.only_missing:
            raise UsageError("--only-missing only goes with --merge")
        if args.slurm and args.build_dir is None and args.out is not None:
            args.build_dir = args.out / "build"  # every node must see the build the tasks start from
        settings = make_settings(args)
        out = settings.out
        if args.build_only:
            return build_only(settings)
        if args.slurm:
            if args.batch is None:
                raise UsageError("--slurm only goes with --batch")
            return write_slurm(settings, args)
        if args.submit:
            raise UsageError("--submit only goes with --slurm")
        if args.batch is None:
            grades, failed = grade_single(settings, args, out), False
        else:
            grades, failed = grade_batch(settings, args, out)
    except UsageError as error:
        print(f"grade.py: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (meson_build.SetupError, slurm_jobs.SlurmError, RefusedToGrade) as error:
        print(printable(f"grade.py: error: {error}"), file=sys.stderr)
        return EXIT_INTERNAL
    except Exception:  # noqa: BLE001 - any other failure is the grader's own bug
        traceback.print_exc()
        print("grade.py: internal error (see above)", file=sys.stderr)
        return EXIT_INTERNAL
    if args.require_gpus:
        skipped = gpu_skip_report(grades)
        if skipped:
            print(printable("grade.py: error: --require-gpus: these cases were skipped for missing GPUs:\n"
                            + "\n".join(skipped)), file=sys.stderr)
            return EXIT_GPUS
    return EXIT_INTERNAL if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
