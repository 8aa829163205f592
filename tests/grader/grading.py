# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Grade one source tree: configure it, then build, list and run each lesson on its own.

`Grader.grade_working_tree()` grades the course folder as it is (a student's own checkout).
`Grader.grade_submission()` stages the pristine course, overlays the submission's student
files, and grades that copy. A lesson that cannot be built (or was not submitted) still
shows its cases, worth 0, when the grader can learn them from the course's own starter
(`Baseline`); its possible points then match every other student's on this machine.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import catch2_runner as runner
import course_layout as layout
import meson_build
from course_layout import Lesson
from scoring import BUILD_FAILED, MISSING, Grade, LessonGrade, label


@dataclasses.dataclass
class Settings:
    """What every grading in one run shares."""

    course: Path
    build_root: Path  # --build-dir
    lessons: list[Lesson]
    timeout: float = 120.0  # per test case
    build_timeout: float = 900.0  # per lesson
    setup_timeout: float = 600.0
    jobs: int | None = None
    quiet: bool = False
    out: Path | None = None  # --out
    keep_out: list[Path] = dataclasses.field(default_factory=list)  # submissions: never copied when staging

    def staging_exclusions(self) -> list[Path]:
        """Folders that may sit inside the course but are not part of it."""
        return [self.build_root] + ([self.out] if self.out else []) + list(self.keep_out)


class Grader:
    """Grades trees for one run; remembers the first GPU inventory it sees."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.inventory: dict | None = None
        self.warnings: list[str] = []
        self._baseline = Baseline(self)

    # ------------------------------------------------------------------ entry points

    def grade_working_tree(self) -> list[LessonGrade]:
        """Grades the course folder itself, built in --build-dir."""
        return self._grade_tree(self.settings.course, self.settings.build_root, files=None)

    def grade_submission(self, submission: Path, work: Path) -> list[LessonGrade]:
        """Stages the course with the submission's student files in `work`, and grades it."""
        source = work / "course"
        layout.stage_course(self.settings.course, source, keep_out=self.settings.staging_exclusions())
        files = {lesson: layout.find_student_file(submission, lesson) for lesson in self.settings.lessons}
        for lesson, found in files.items():
            if found is not None:
                layout.place_student_file(found, source, lesson)
        return self._grade_tree(source, work / "build", files=files, submission=submission)

    # ------------------------------------------------------------------ one tree

    def _grade_tree(self, source: Path, build: Path, files: dict | None, submission: Path | None = None):
        self.say(f"configuring {build}")
        meson_build.setup(build, source, self.settings.setup_timeout)
        programs = meson_build.target_programs(build)
        grades = []
        for lesson in self.settings.lessons:
            if files is not None and files[lesson] is None:
                grade = self._unusable(lesson, MISSING, missing_message(submission, lesson), staged=True)
            else:
                grade = self._grade_lesson(lesson, source, build, programs, staged=files is not None)
            grades.append(grade)
            self.say(f"[{lesson.slug}] {grade.earned}/{grade.possible if grade.cases_known else '?'} points"
                     + (f" ({grade.first_problem()})" if grade.first_problem() else ""))
        return grades

    def _grade_lesson(self, lesson: Lesson, source: Path, build: Path, programs: dict, staged: bool):
        if programs and lesson.target not in programs:
            self.warn(f"the course's Meson build has no target {lesson.target}")
        self.say(f"[{lesson.slug}] building {lesson.target}")
        built = meson_build.compile_target(build, source, lesson.target, self.settings.build_timeout,
                                           self.settings.jobs)
        if not built.ok:
            return self._unusable(lesson, BUILD_FAILED, built.message, staged, log=built.log)
        program = meson_build.program_path(build, lesson.target, programs)
        try:
            listing = runner.list_cases(program, timeout=self.settings.timeout, cwd=build)
        except (runner.ProgramError, OSError) as error:
            message = f"the test program {lesson.target} could not list its cases: {error}"
            return self._unusable(lesson, BUILD_FAILED, message, staged, log=built.log)
        self._remember(listing)
        grade = LessonGrade(lesson, log=built.log)
        # One shared run, then every case that did not pass alone: a crash, a hang or a broken
        # CUDA context costs only the case that caused it.
        results = runner.run_cases(program, listing.cases, self.settings.timeout, cwd=build,
                                   retry_alone=lambda r: r.status not in (runner.PASSED, runner.SKIPPED))
        for case, result in zip(listing.cases, results):
            self.say(f"[{lesson.slug}]   {label(result.status):9} {case.name}")
            grade.results.append(result)
            grade.log += case_log(result)
        return grade

    def _unusable(self, lesson: Lesson, status: str, message: str, staged: bool, log: str = "") -> LessonGrade:
        """A lesson whose program cannot run: its known cases are worth 0, with `message`."""
        grade = LessonGrade(lesson, problem=message, problem_status=status, log=log)
        cases = self._baseline.cases(lesson) if staged else None
        for case in cases or []:
            grade.results.append(self._stand_in(case, status, message))
        return grade

    def _stand_in(self, case: runner.TestCase, status: str, message: str) -> runner.CaseResult:
        """The result of a case that could not run: ungraded if this machine lacks its GPUs."""
        found = self.inventory["gpus_visible"] if self.inventory else None
        if found is not None and case.gpus > found:
            plural = "" if case.gpus == 1 else "s"
            return runner.CaseResult(case, runner.SKIPPED, f"needs {case.gpus} GPU{plural}, found {found}")
        return runner.CaseResult(case, status, message)

    # ------------------------------------------------------------------ helpers

    def _remember(self, listing: runner.Listing) -> None:
        if self.inventory is None and listing.inventory is not None:
            self.inventory = listing.inventory
        for case in listing.cases:
            for warning in case.warnings:
                self.warn(warning)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            print(f"grade.py: warning: {message}", file=sys.stderr)

    def say(self, message: str) -> None:
        if not self.settings.quiet:
            print(message, file=sys.stderr, flush=True)

    def make_grade(self, student: str, source: str, lessons: list[LessonGrade], machine: dict) -> Grade:
        return Grade(student=student, source=source, lessons=lessons, machine=machine,
                     warnings=list(self.warnings))


class Baseline:
    """The pristine course, built only for the lessons that need it, to learn their cases."""

    def __init__(self, grader: Grader):
        self._grader = grader
        self._source = grader.settings.build_root / "pristine" / "course"
        self._build = grader.settings.build_root / "pristine" / "build"
        self._programs: dict | None = None
        self._cases: dict[str, list | None] = {}

    def cases(self, lesson: Lesson) -> list[runner.TestCase] | None:
        """The lesson's visible cases, or None if the course's own starter cannot list them."""
        if lesson.number not in self._cases:
            self._cases[lesson.number] = self._learn(lesson)
        return self._cases[lesson.number]

    def _learn(self, lesson: Lesson):
        settings = self._grader.settings
        if self._programs is None:
            self._grader.say("staging the pristine course to learn the cases of lessons that did not build")
            layout.stage_course(settings.course, self._source, keep_out=settings.staging_exclusions())
            meson_build.setup(self._build, self._source, settings.setup_timeout)
            self._programs = meson_build.target_programs(self._build)
        built = meson_build.compile_target(self._build, self._source, lesson.target, settings.build_timeout,
                                           settings.jobs)
        if not built.ok:
            self._grader.warn(f"the course's own {lesson.student_path} does not build either: "
                              f"{built.message.splitlines()[0]}")
            return None
        program = meson_build.program_path(self._build, lesson.target, self._programs)
        try:
            listing = runner.list_cases(program, timeout=settings.timeout, cwd=self._build)
        except (runner.ProgramError, OSError) as error:
            self._grader.warn(f"the course's own {lesson.target} cannot list its cases: {error}")
            return None
        self._grader._remember(listing)
        return listing.cases


def missing_message(submission: Path | None, lesson: Lesson) -> str:
    """'no file x.cu in the submission', with a hint when the other extension is there."""
    message = f"no file {lesson.student_filename} in the submission"
    if submission is not None:
        for extension in layout.STUDENT_EXTENSIONS:
            other = dataclasses.replace(lesson, extension=extension)
            if extension != lesson.extension and layout.find_student_file(submission, other):
                message += f" (it has {other.student_filename}; this lesson's file is {lesson.student_filename})"
    return message


def case_log(result: runner.CaseResult) -> str:
    """One case's block in the lesson's log file."""
    code = runner.describe_exit(result.exit_code) if result.exit_code is not None else "killed"
    parts = [f"\n===== {result.case.name}: {result.status} ({code}, {result.seconds:.1f} s)"]
    if result.message:
        parts.append(result.message)
    parts.append("----- stderr -----\n" + result.stderr.rstrip())
    if result.stdout.strip():
        parts.append("----- stdout -----\n" + result.stdout.rstrip())
    return "\n".join(parts) + "\n"
