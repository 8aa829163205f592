# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Grade one source tree: configure it, then build, list and run each lesson on its own.

`Grader.grade_submission()` stages the course outside itself (no solutions/, no .git, no
build folders), overlays the submission's student files, and grades that copy.
`Grader.grade_working_tree()` does the same with the student files of the course folder
itself (a student's own checkout). For each lesson: build it, check what went into the
student's object (integrity.py: headers and symbols; a refused object scores 0 and never
runs), then run its cases in the sandbox with limits, the results coming through the result
channel and skips judged against the grader's own GPU count (gpu_probe.py). A lesson that
cannot be built (or was not submitted) still shows its cases, worth 0, when the grader can
learn them from the course's own starter (`Baseline`); its possible points then match every
other student's on this machine.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

import catch2_runner as runner
import course_layout as layout
import integrity
import limited_run
import meson_build
import profiling
from course_layout import Lesson
from sandbox import Sandbox
from scoring import AMBIGUOUS, BUILD_FAILED, INVALID, MISSING, REJECTED, Grade, LessonGrade, label
from text_safety import printable

PROBE = Path(__file__).resolve().parent / "gpu_probe.py"


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
    sandbox: Sandbox | None = None  # None: grading without one ("sandbox: off")
    allow_headers: list[str] = dataclasses.field(default_factory=list)  # --allow-header
    allow_symbols: list[str] = dataclasses.field(default_factory=list)  # --allow-symbol
    object_checks: bool = True  # False: --no-object-checks (trying the other defences)
    case_timeouts: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)  # {lesson: {case: s}}
    watchdog_caps: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)  # {lesson: {case: s}}

    def staging_exclusions(self) -> list[Path]:
        """Folders that may sit inside the course but are not part of it. A submission that is the course's
        own starter (its lessons/ folder, or a lesson's folder: an instructor grading the starter to see the
        baseline) is part of it: left out, the staged course had no lessons/ to put the file into. Any other
        folder inside lessons/ (a student's, say) stays out."""
        lessons = self.course / "lessons"
        own = {self.course.resolve(), lessons.resolve()} | \
            {(lessons / lesson.slug).resolve() for lesson in layout.discover_lessons(self.course)}
        return [self.build_root] + ([self.out] if self.out else []) + \
            [p for p in self.keep_out if p.resolve() not in own]


class Grader:
    """Grades trees for one run. What a graded program prints about the machine is never read:
    the machine record and the GPU count come from the grader's own probe."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.warnings: list[str] = []
        self.profile = profiling.Profile()
        self._built_together: dict[str, str] = {}  # {lesson: its steps of the build of all lessons}
        self._ambiguous: dict[str, str] = {}  # {lesson: why it was not graded}, of the submission being graded
        self._baseline = Baseline(self)
        self._clean_made: set[Path] = set()  # work folders whose clean build this run has made
        self.subreaper = limited_run.become_subreaper()
        self.sandbox = settings.sandbox or Sandbox.off("not requested")
        self.sandbox.hidden = [settings.course, settings.build_root] + list(settings.keep_out) + \
            ([settings.out] if settings.out else [])
        self.run = runner.RunSettings(sandbox=self.sandbox,
                                      limits=limited_run.Limits(processes=limited_run.user_process_limit()))
        self._time_sandbox_start()
        with self.profile.span("gpu probe"):
            self.gpu_probe = self._probe_gpus()
        self.run.gpus = self.gpu_probe["gpus"]
        if not settings.object_checks:
            self.warn("the headers and symbols of student objects were NOT checked (--no-object-checks): "
                      "these grades prove nothing")

    # ------------------------------------------------------------------ entry points

    def grade_working_tree(self) -> list[LessonGrade]:
        """Grades the student files of the course folder itself, staged like a submission (its
        build folder kept from one check to the next: the student's own)."""
        return self.grade_submission(self.settings.course, self.settings.build_root / "working-tree", own=True)

    def grade_submission(self, submission: Path, work: Path, own: bool = False, class_of_many: bool = False
                         ) -> list[LessonGrade]:
        """Stages the course with the submission's student files in `work`, and grades it.
        The student files are read before staging, so `solutions` itself can be graded.

        Each student's build is their own (unless `own`: a student's own check of their working
        tree): it starts from a clean copy of the course's starters built in `work` (see
        clean_build), or from nothing, never from what another student's build left there (their
        objects, and the listings -save-temps keeps, which a later student's file could include).
        `class_of_many`: more students follow in `work` (a batch), so the clean copy is made once,
        if it is not there, and each student starts from it."""
        found = {lesson: layout.student_file_candidates(submission, lesson) for lesson in self.settings.lessons}
        files = {lesson: paths[0] if len(paths) == 1 else None for lesson, paths in found.items()}
        self._ambiguous = {lesson.slug: ambiguous_message(submission, lesson, paths)
                           for lesson, paths in found.items() if len(paths) > 1}
        contents = {lesson: path.read_bytes() for lesson, path in files.items() if path is not None}
        source = work / "course"
        if not own:
            self._clean_build(work, make=class_of_many)
        with self.profile.span("stage"):
            layout.stage_course(self.settings.course, source, keep_out=self.settings.staging_exclusions())
            for lesson, data in contents.items():
                layout.place_student_bytes(data, source, lesson)
        return self._grade_tree(source, work / "build", files=files, submission=submission)

    def _clean_build(self, work: Path, make: bool) -> None:
        """Leaves in `work`/build a build folder no other student's build wrote into: a copy of
        `work`/build.clean (the course's starters, built in `work` by _make_clean_build, once per
        grading run when `make`), else nothing (the build starts afresh). A Meson build folder
        cannot move, so the copy is made at the place it was built for."""
        build, clean = work / "build", clean_template(work)
        if make and work not in self._clean_made:
            with self.profile.span("prepare clean build", detail="the course's starters, built once per run"):
                self._make_clean_build(work)
            self._clean_made.add(work)
        with self.profile.span("clean build", detail="a copy of the starters' build" if clean.is_dir() else "removed"):
            if build.exists():
                shutil.rmtree(build)
            if clean.is_dir():
                shutil.copytree(clean, build, symlinks=True)

    def _make_clean_build(self, work: Path) -> None:
        """`work`/build.clean: the course's own starters of the graded lessons, staged and built in
        `work` (Slurm: from the copy of the build job's starters that a task starts from). Only
        the course's own files were ever compiled in it: it starts from the previous clean copy, or
        from nothing, never from a build folder a student's file went into."""
        source, build, clean = work / "course", work / "build", clean_template(work)
        if build.exists():
            shutil.rmtree(build)
        if clean.is_dir():
            shutil.copytree(clean, build, symlinks=True)
        layout.stage_course(self.settings.course, source, keep_out=self.settings.staging_exclusions())
        meson_build.setup_once(build, source, self.settings.setup_timeout)
        built = meson_build.compile_target(build, source, [lesson.target for lesson in self.settings.lessons],
                                           self.settings.build_timeout, self.settings.jobs, sandbox=self.sandbox,
                                           keep_going=True)
        if not built.ok:  # each student's build then finds the same failure, as without the clean copy
            self.warn(f"the course's own starters do not all build: {built.message.splitlines()[0]}")
        if clean.exists():
            shutil.rmtree(clean)
        shutil.copytree(build, clean, symlinks=True)

    def _time_sandbox_start(self) -> None:
        """What starting the sandbox costs (every sandboxed run pays it), for the profile."""
        if not self.sandbox.enabled or not Path("/bin/true").exists():
            return
        with tempfile.TemporaryDirectory(prefix="sandbox-start-") as scratch:
            outcome = limited_run.run_limited(["/bin/true"], 60, cwd=scratch, sandbox=self.sandbox,
                                              scratch=Path(scratch))
        self.profile.add("sandbox start", outcome.seconds,
                         detail=f"/bin/true: {runner.describe_exit(outcome.exit_code)}")

    def _probe_gpus(self) -> dict:
        """The GPU count from the grader's own probe, run like a test program (sandbox, limits).

        The probe runs outside the sandbox first (which also lets the driver create device
        files such as /dev/nvidia-uvm that it makes on first use), then inside: if the sandbox
        hides GPUs the machine has, grading goes on without the sandbox, and says why."""
        outside = self._run_probe(None)
        if not self.sandbox.enabled:
            found = outside
        else:
            found = self._run_probe(self.sandbox)
            if found["gpus"] < outside["gpus"]:
                self.sandbox = Sandbox.off(f"inside bubblewrap the GPU probe found {found['gpus']} GPUs, "
                                           f"outside {outside['gpus']}")
                self.run.sandbox = self.sandbox
                self.warn(f"sandbox {self.sandbox.description}: grading without it")
                found = outside
        if found.pop("failed", False):
            self.warn(f"the GPU probe failed; grading as if this machine had no GPU: {found['error']}")
        elif not found["details"]:
            self.warn("the GPU probe counted the GPUs but could not describe them")
        self.say(f"GPUs: {found['gpus']} (the grader's probe, {found['via']})"
                 + (f": {found['error']}" if found.get("error") else ""))
        self.say(f"sandbox: {self.sandbox.description}")
        return found

    def _run_probe(self, sandbox: Sandbox | None) -> dict:
        with tempfile.TemporaryDirectory(prefix="gpu-probe-") as scratch:
            probe = Path(scratch) / PROBE.name  # the sandbox hides the course, where the probe lives
            shutil.copyfile(PROBE, probe)
            outcome = limited_run.run_limited([sys.executable, str(probe)], 120, cwd=scratch,
                                              env=runner.clean_env(), limits=self.run.limits,
                                              sandbox=sandbox, scratch=Path(scratch))
        lines = outcome.stdout.strip().splitlines()
        try:
            found = json.loads(lines[0])
            found["gpus"] = int(found["gpus"])
        except (ValueError, IndexError, KeyError, TypeError):
            return {"gpus": 0, "via": "gpu_probe.py", "details": {}, "failed": True, "error": f"the probe failed "
                    f"({runner.describe_exit(outcome.exit_code)}): {outcome.stderr.strip()[-300:]}"}
        try:
            found["details"] = json.loads(lines[1])
        except (ValueError, IndexError):
            found["details"] = {}
        return found

    # ------------------------------------------------------------------ one tree

    def _grade_tree(self, source: Path, build: Path, files: dict, submission: Path | None = None):
        with self.profile.span("configure") as _:
            if meson_build.setup_once(build, source, self.settings.setup_timeout):
                self.say(f"configured {build}")
            else:
                self.say(f"using {build} (configured already)")
        programs = meson_build.target_programs(build)
        checker = integrity.Checker(build, source, self.settings.allow_headers, self.settings.allow_symbols,
                                    course=self.settings.course)
        refused = {}
        if self.settings.object_checks:
            for lesson in self.settings.lessons:
                if files[lesson] is not None:
                    with self.profile.span("source checks", lesson.slug):
                        refused[lesson.slug] = integrity.check_source(source / lesson.student_path)
        wanted = [lesson for lesson in self.settings.lessons
                  if files[lesson] is not None and not refused.get(lesson.slug)]
        self._build_all(source, build, wanted)
        built = {lesson.slug: self._build_lesson(lesson, source, build, programs) for lesson in wanted}
        prepared = self._prepare_all(built, checker)
        grades = []
        for lesson in self.settings.lessons:
            if files[lesson] is None and lesson.slug in self._ambiguous:
                grade = self._unusable(lesson, AMBIGUOUS, self._ambiguous[lesson.slug])
                grade.findings.append(f"ambiguous: {self._ambiguous[lesson.slug]}")
            elif files[lesson] is None:
                grade = self._unusable(lesson, MISSING, missing_message(submission, lesson))
            elif refused.get(lesson.slug):
                grade = refuse(lesson, refused[lesson.slug], "", self._unusable)
            else:
                grade = self._grade_lesson(lesson, built[lesson.slug], prepared.get(lesson.slug))
            if files[lesson] is not None and submission is not None:
                grade.graded_file = graded_file_note(submission, files[lesson])
            grades.append(grade)
            self.say(f"[{lesson.slug}] {grade.earned}/{grade.possible if grade.cases_known else '?'} points"
                     + (f" ({grade.first_problem()})" if grade.first_problem() else ""))
        return grades

    def _build_lesson(self, lesson: Lesson, source: Path, build: Path, programs: dict) -> tuple:
        """(BuildResult, program, target) of the lesson's own build: nothing to do when the build
        of all lessons built it (Ninja's dry run says so, running nothing), else its build inside
        the sandbox, whose outcome (the compiler's errors) is the lesson's."""
        if programs and lesson.target not in programs:
            self.warn(f"the course's Meson build has no target {lesson.target}")
        self.say(f"[{lesson.slug}] building {lesson.target}")
        program = meson_build.program_path(build, lesson.target, programs)
        target = str(program.resolve().relative_to(build.resolve())) if program.resolve().is_relative_to(
            build.resolve()) else lesson.target
        with self.profile.span("build lesson", lesson.slug):
            if lesson.slug in self._built_together and meson_build.up_to_date(build, target):
                built = meson_build.BuildResult(True, "", "(nothing left to do: built with the other lessons)\n")
            else:
                # The student's file is compiled inside the sandbox: it sees only the staged course
                # (no solutions/) and what the build needs, and writes only into the build folder.
                built = meson_build.compile_target(build, source, lesson.target, self.settings.build_timeout,
                                                   self.settings.jobs, sandbox=self.sandbox)
        built.log = self._built_together.get(lesson.slug, "") + built.log
        return built, program, target

    def _lesson_run(self, lesson: Lesson) -> "LessonRun":
        return LessonRun(run=self.run, timeout=self.settings.timeout, unusable=self._unusable, say=self.say,
                         on_listing=self._remember, profile=self.profile,
                         case_timeouts=self.settings.case_timeouts.get(lesson.slug),
                         watchdog_caps=self.settings.watchdog_caps.get(lesson.slug))

    def _prepare_all(self, built: dict, checker: integrity.Checker) -> dict:
        """{lesson: Prepared}: every built lesson's object checks, several at once (binutils only,
        before any case runs: nothing that measures time runs beside them), then each listing in
        turn (run_limited, which ends whatever its program left running, runs one at a time)."""
        lessons = [lesson for lesson in self.settings.lessons if lesson.slug in built and built[lesson.slug][0].ok]
        checker_or_none = checker if self.settings.object_checks else None
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            jobs = {lesson.slug: pool.submit(check_built, lesson, built[lesson.slug][1], built[lesson.slug][2],
                                             checker_or_none, self._lesson_run(lesson)) for lesson in lessons}
            checked = {slug: job.result() for slug, job in jobs.items()}
        return {lesson.slug: prepare_built(lesson, built[lesson.slug][1], built[lesson.slug][2], checker_or_none,
                                           self._lesson_run(lesson), refused=checked[lesson.slug])
                for lesson in lessons}

    def _grade_lesson(self, lesson: Lesson, built: tuple, prepared: "Prepared | None"):
        built, program, target = built
        if not built.ok:
            grade = self._unusable(lesson, BUILD_FAILED, built.message, log=built.log)
            if built.message.startswith("the build wrote a file larger") or "printed more than" in built.message:
                grade.findings.append(built.message.splitlines()[0])
            return grade
        return grade_built(lesson, program, target, None, self._lesson_run(lesson), built.log, prepared=prepared)

    def _build_all(self, source: Path, build: Path, lessons: list[Lesson]) -> None:
        """Builds every lesson that is to be built at once, inside the sandbox (Ninja's -k 0: what
        fails does not stop the rest), so the course's objects and all the student files compile
        side by side on every core. Its outcome decides nothing: each lesson's own build that
        follows (then only a check that all is up to date, or the failure again) gives that
        lesson's log and verdict, as before."""
        self._built_together = {}
        if len(lessons) < 2:
            return
        offset = profiling.ninja_log_offset(build)
        # The longest quiet step of a grading (the first build of the nine lessons: minutes on a
        # small machine): say so before it starts (issue 45: the solutions check seemed silent).
        self.say(f"building {len(lessons)} lessons together ({', '.join(lesson.slug[:2] for lesson in lessons)}): "
                 "the first build takes minutes on a small machine, later ones only the student files")
        with self.profile.span("build all lessons", detail=f"{len(lessons)} lessons"):
            together = meson_build.compile_target(build, source, [lesson.target for lesson in lessons],
                                                  self.settings.build_timeout, self.settings.jobs,
                                                  sandbox=self.sandbox, keep_going=True)
        for lesson in lessons:  # each lesson's log shows its steps of that build (the compiler's warnings)
            steps = meson_build.steps_of(together.log, lesson)
            if steps:
                self._built_together[lesson.slug] = f"===== built with the other lessons at once:\n{steps}\n" \
                    "===== the lesson's own build:\n"
        steps = profiling.ninja_steps(build, offset)
        for lesson in lessons:
            mangled = f"_lessons_{lesson.slug}_{lesson.student_filename}.o"
            for output, seconds in steps.items():
                if output.endswith(mangled):
                    self.profile.add("compile student file", seconds, lesson.slug, output)
                elif Path(output).name == lesson.target:
                    self.profile.add("link", seconds, lesson.slug, output)
        others = sum(seconds for output, seconds in steps.items()
                     if not any(output.endswith(f"_lessons_{lesson.slug}_{lesson.student_filename}.o")
                                or Path(output).name == lesson.target for lesson in lessons))
        if others:
            self.profile.add("other build steps", others, detail="the course's own objects and libraries, "
                             "CPU seconds summed over parallel steps")

    def _unusable(self, lesson: Lesson, status: str, message: str, log: str = "") -> LessonGrade:
        """A lesson whose program cannot run: its known cases are worth 0, with `message`."""
        grade = LessonGrade(lesson, problem=message, problem_status=status, log=log)
        for case in self._baseline.cases(lesson) or []:
            grade.results.append(runner.stand_in(case, status, message, self.run.gpus))
        return grade

    # ------------------------------------------------------------------ helpers

    def _remember(self, listing: runner.Listing) -> None:
        for case in listing.cases:
            for warning in case.warnings:
                self.warn(warning)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            print(f"grade.py: warning: {printable(message)}", file=sys.stderr)

    def say(self, message: str) -> None:
        """A progress line; it may quote a student's program (a lesson's first failure): printable."""
        if not self.settings.quiet:
            print(printable(message), file=sys.stderr, flush=True)

    def make_grade(self, student: str, source: str, lessons: list[LessonGrade], machine: dict) -> Grade:
        return Grade(student=student, source=source, lessons=lessons, machine=machine,
                     warnings=list(self.warnings), sandbox=self.sandbox.description)


@dataclasses.dataclass
class LessonRun:
    """How a built lesson is graded: what the grader and `./course` (a student's own check) share."""

    run: runner.RunSettings
    timeout: float  # per case
    unusable: Callable[..., LessonGrade]  # (lesson, status, message, log=...) -> a grade whose cases are worth 0
    say: Callable[[str], None] = lambda text: None
    on_listing: Callable[[runner.Listing], None] = lambda listing: None
    status: Callable[[str], contextlib.AbstractContextManager] = lambda text: contextlib.nullcontext()
    profile: profiling.Profile | None = None  # where the steps' times go (the grader's --profile)
    case_timeouts: dict[str, float] | None = None  # {case name: seconds}, instead of `timeout` for those cases
    watchdog_caps: dict[str, float] | None = None  # {case name: seconds}: watchdogs once the lesson deadlocked

    def span(self, step: str, lesson: Lesson):
        return self.profile.span(step, lesson.slug) if self.profile else contextlib.nullcontext()


def refuse(lesson: Lesson, problems: list[str], log: str, unusable: Callable[..., LessonGrade]) -> LessonGrade:
    """A lesson whose student file the integrity checks refused: nothing of it ran."""
    more = f" (and {len(problems) - 1} more: see the findings)" if len(problems) > 1 else ""
    log += "\n===== refused by the integrity check:\n" + "\n".join(problems) + "\n"
    grade = unusable(lesson, REJECTED, f"{lesson.student_filename} {problems[0]}{more}", log=log)
    grade.findings += [f"refused: {problem}" for problem in problems]
    return grade


@dataclasses.dataclass
class Prepared:
    """What grading a built lesson learns before any case runs: the object checks' refusals, or
    why its cases cannot be listed, or the listing. Learning it touches no build folder and
    measures no time, so the grader learns it for several lessons at once."""

    listing: runner.Listing | None = None
    refused: list[str] = dataclasses.field(default_factory=list)
    unlistable: str = ""


def check_built(lesson: Lesson, program: Path, target: str, checker: integrity.Checker | None,
                how: LessonRun) -> list[str]:
    """What the object checks refuse in the student's object (checker None: not checked)."""
    with how.span("object checks", lesson):
        return checker.check(lesson.student_path, f"lessons/{lesson.slug}", target, program) if checker else []


def prepare_built(lesson: Lesson, program: Path, target: str, checker: integrity.Checker | None,
                  how: LessonRun, refused: list[str] | None = None) -> Prepared:
    """The student's object checked (`refused`: checked already), then the cases listed."""
    problems = check_built(lesson, program, target, checker, how) if refused is None else refused
    if problems:
        return Prepared(refused=problems)
    try:
        with how.status(f"listing the cases of {lesson.target}"), how.span("list cases", lesson):
            return Prepared(listing=runner.list_cases(program, timeout=how.timeout, run=how.run))
    except (runner.ProgramError, OSError) as error:
        return Prepared(unlistable=f"the test program {lesson.target} could not list its cases: {error}")


def grade_built(lesson: Lesson, program: Path, target: str, checker: integrity.Checker | None, how: LessonRun,
                log: str = "", prepared: Prepared | None = None) -> LessonGrade:
    """Grades a lesson whose program built: the student's object checked (checker None: not
    checked), its cases listed and run (all in one process, then alone each that did not pass:
    a crash, a hang or a broken CUDA context costs only the case that caused it), results only
    through the result channel, skips judged against the grader's own GPU count. With
    `prepared` (prepare_built's, learned beforehand), the checks and the listing are that."""
    prepared = prepared or prepare_built(lesson, program, target, checker, how)
    if prepared.refused:
        return refuse(lesson, prepared.refused, log, how.unusable)
    if prepared.unlistable:
        return how.unusable(lesson, BUILD_FAILED, prepared.unlistable, log=log)
    listing = prepared.listing
    how.on_listing(listing)
    grade = LessonGrade(lesson, log=log)
    timings: list[dict] = []
    try:
        with how.status(f"running {lesson.target}: {len(listing.cases)} cases"):
            results = runner.run_cases(program, listing.cases, how.timeout, run=how.run,
                                       retry_alone=runner.worth_running_alone, case_timeouts=how.case_timeouts,
                                       watchdog_caps=how.watchdog_caps, timings=timings)
    except runner.ChannelError as error:  # only a writer other than the course's test main does that
        message = f"the results of {lesson.target} cannot be trusted: {error}"
        grade = LessonGrade(lesson, problem=message, problem_status=INVALID, log=log)
        grade.results = [runner.stand_in(case, INVALID, message, how.run.gpus) for case in listing.cases]
        grade.findings.append(f"results tampered with: {error}")
        return grade
    if how.profile:
        how.profile.add_runs(lesson.slug, timings)
    for case, result in zip(listing.cases, results):
        how.say(f"[{lesson.slug}]   {label(result.status):9} {case.name}")
        grade.results.append(result)
        grade.log += case_log(result)
        grade.findings += [f"{finding} ({case.name})" for finding in result.findings]
    return grade


class Baseline:
    """The pristine course, built only for the lessons that need it, to learn their cases."""

    def __init__(self, grader: Grader):
        self._grader = grader
        self._source, self._build = pristine_folders(grader.settings)
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
            with self._grader.profile.span("stage and build the starters"):
                stage_pristine(settings)
                self._programs = meson_build.target_programs(self._build)
                # every graded lesson at once (most classes need several): each lesson's build below
                # then has nothing left to do
                meson_build.compile_target(self._build, self._source, [lesson.target for lesson in settings.lessons],
                                           settings.build_timeout, settings.jobs, keep_going=True)
        built = meson_build.compile_target(self._build, self._source, lesson.target, settings.build_timeout,
                                           settings.jobs)
        if not built.ok:
            self._grader.warn(f"the course's own {lesson.student_path} does not build either: "
                              f"{built.message.splitlines()[0]}")
            return None
        program = meson_build.program_path(self._build, lesson.target, self._programs)
        try:
            listing = runner.list_cases(program, timeout=settings.timeout, run=self._grader.run)
        except (runner.ProgramError, OSError) as error:
            self._grader.warn(f"the course's own {lesson.target} cannot list its cases: {error}")
            return None
        self._grader._remember(listing)
        return listing.cases


def clean_template(work: Path) -> Path:
    """Where the clean copy of `work`'s build folder lies (Grader._clean_build): beside it, where
    no sandbox binds it (a build sees only its own build folder and the staged course)."""
    return work / "build.clean"


def pristine_folders(settings: Settings) -> tuple[Path, Path]:
    """(staged course, build folder) of the course's own starters."""
    return settings.build_root / "pristine" / "course", settings.build_root / "pristine" / "build"


def stage_pristine(settings: Settings) -> None:
    """Stages the course as it is (its own starters) and configures its build."""
    source, build = pristine_folders(settings)
    layout.stage_course(settings.course, source, keep_out=settings.staging_exclusions())
    meson_build.setup(build, source, settings.setup_timeout)


def build_starters(settings: Settings) -> dict[str, str]:
    """Builds every lesson of the course's own starters once, in <build-root>/pristine (the
    Slurm build job: each array task starts from a copy and compiles only its students' files).
    Returns {lesson: '' or the first error}; a starter that does not build is the course's
    problem, reported, and each task then finds it the same way a local batch would."""
    stage_pristine(settings)
    source, build = pristine_folders(settings)
    built = {}
    for lesson in settings.lessons:
        outcome = meson_build.compile_target(build, source, lesson.target, settings.build_timeout, settings.jobs)
        built[lesson.slug] = "" if outcome.ok else outcome.message
    return built


def missing_message(submission: Path | None, lesson: Lesson) -> str:
    """'no file x.cu in the submission', with a hint when the other extension is there or the
    file looks renamed on upload (x-1.cu), and what the submission holds."""
    message = f"no file {lesson.student_filename} in the submission"
    if submission is not None:
        for extension in layout.STUDENT_EXTENSIONS:
            other = dataclasses.replace(lesson, extension=extension)
            if extension != lesson.extension and layout.student_file_candidates(submission, other):
                message += f" (it has {other.student_filename}; this lesson's file is {lesson.student_filename})"
        renamed = [str(path.relative_to(submission)) for path in layout.renamed_copies(submission, lesson)]
        if renamed:
            message += (f" (it has {', '.join(renamed)}: renamed on upload? Name it {lesson.student_filename} "
                        "and grade again)")
        message += f"; the submission holds: {layout.folder_listing(submission)}"
    return message


def ambiguous_message(submission: Path, lesson: Lesson, paths: list[Path]) -> str:
    """Why a lesson with several copies of its file at the same depth was not graded."""
    names = ", ".join(str(path.relative_to(submission)) for path in paths)
    return (f"{len(paths)} files {lesson.student_filename} at the same depth ({names}): which one to grade is "
            f"for a person to say; keep one (or move the others deeper) and grade again")


def graded_file_note(submission: Path, path: Path) -> str:
    """Which file of the submission was graded: its path in the submission and its size."""
    try:
        where = str(path.relative_to(submission))
    except ValueError:
        where = str(path)
    return f"{where} ({path.stat().st_size} bytes)"


def case_log(result: runner.CaseResult) -> str:
    """One case's block in the lesson's log file."""
    parts = ["\n" + runner.log_heading(result)]
    if result.message:
        parts.append(result.message)
    parts.append("----- stderr -----\n" + result.stderr.rstrip())
    if result.stdout.strip():
        parts.append("----- stdout -----\n" + result.stdout.rstrip())
    return "\n".join(parts) + "\n"
