# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Configure the course with Meson and build one lesson's test program at a time.

The grader configures with `-Donly_lessons=true` (only the student test programs) and
`-Dgrader_listing=true` (the compiler's assembly of the student's file kept for integrity.py), and
builds each lesson's target on its own (`meson compile -C DIR lesson-NN`), so a lesson
that does not compile costs only its own points. The program's path comes from
`meson introspect --targets`, falling back to `<build>/tests/lesson-NN`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from limited_run import Limits, run_limited

LISTING_OPTION = "-Dgrader_listing=true"  # the student's assembly kept (integrity.py reads it); ./course sets it too
SETUP_OPTIONS = ["-Donly_lessons=true", LISTING_OPTION]  # the lesson programs only
ERROR_LINES_SHOWN = 2
# "f.cpp:5:3: error: ...", "f.cu(12): error: ...", "error #20: ...", "fatal error: ...", and the linker's
_ERROR = re.compile(r"(^|[\s:)])(fatal )?error( #?\w+)?\s?:|undefined reference|multiple definition",
                    re.IGNORECASE)
_NOISE = re.compile(r"^(FAILED:|ninja: build stopped|ninja: Entering|\[\d+/\d+\]|INFO:)")


class SetupError(RuntimeError):
    """`meson setup` failed: a problem of the course or the machine, not of a student."""


@dataclasses.dataclass
class BuildResult:
    """The outcome of building one target."""

    ok: bool
    message: str  # the compiler's first error line(s), or why the build did not finish
    log: str


def meson_command() -> list[str]:
    """How to run Meson here."""
    found = shutil.which("meson")
    if not found:
        raise SetupError("meson is not installed (or not on PATH)")
    return [found]


def setup(build_dir: Path, source_dir: Path, timeout: float) -> str:
    """Configures (or reconfigures) `build_dir` for `source_dir`; returns Meson's output."""
    configured = (build_dir / "meson-private" / "coredata.dat").exists()
    argv = meson_command() + ["setup"] + (["--reconfigure"] if configured else []) + \
        [str(build_dir), str(source_dir)] + SETUP_OPTIONS
    outcome = run_limited(argv, timeout)
    log = outcome.stdout + outcome.stderr
    if outcome.timed_out:
        raise SetupError(f"meson setup did not finish within {timeout:g} s")
    if outcome.exit_code != 0:
        tail = "\n".join(log.strip().splitlines()[-15:])
        raise SetupError(f"meson setup {build_dir} {source_dir} failed:\n{tail}")
    return log


def configured_for(build_dir: Path, source_dir: Path) -> bool:
    """Whether `build_dir` was configured by `setup` for `source_dir` with today's options: then a
    batch's next student needs no `meson setup --reconfigure` (seconds each). The staged course
    keeps the course's modification times, so if a meson.build did change, Ninja's own
    regeneration rule runs Meson again before it builds."""
    try:
        stamp = json.loads((build_dir / SETUP_STAMP).read_text())
    except (OSError, ValueError):
        return False
    return (build_dir / "build.ninja").is_file() and \
        stamp == {"source": str(source_dir.resolve()), "options": SETUP_OPTIONS}


def setup_once(build_dir: Path, source_dir: Path, timeout: float) -> bool:
    """`setup`, unless `build_dir` is configured for `source_dir` already; True when it ran."""
    if configured_for(build_dir, source_dir):
        return False
    (build_dir / SETUP_STAMP).unlink(missing_ok=True)
    setup(build_dir, source_dir, timeout)
    (build_dir / SETUP_STAMP).write_text(json.dumps({"source": str(source_dir.resolve()), "options": SETUP_OPTIONS}))
    return True


SETUP_STAMP = "grader-setup.json"


def target_programs(build_dir: Path) -> dict[str, Path]:
    """{target name: program path} from `meson introspect --targets`; {} if that fails."""
    try:
        done = subprocess.run(meson_command() + ["introspect", "--targets", str(build_dir)],
                              capture_output=True, text=True, timeout=120, check=False)
        targets = json.loads(done.stdout) if done.returncode == 0 else []
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    programs = {}
    for target in targets:
        filenames = target.get("filename") or []
        if target.get("type") == "executable" and filenames:
            programs[target["name"]] = Path(filenames[0])
    return programs


def program_path(build_dir: Path, target: str, programs: dict[str, Path]) -> Path:
    """Where the target's program lands."""
    return programs.get(target, build_dir / "tests" / target)


# A build of a student's file is hostile input too: it runs in the sandbox, seeing only the
# staged course (no solutions/), the build folder (the only writable place) and what the build
# depends on, with these limits: no file over 512 MB (an object padded to gigabytes), and the
# build's time limit.
BUILD_FILE_BYTES = 512 * 1024 * 1024


def build_dependencies(build_dir: Path) -> list[Path]:
    """The folders outside the system's that the build reads (a Catch2 unpacked in /tmp, a
    toolkit in a home folder): every absolute path in build.ninja, as its folder."""
    try:
        text = (build_dir / "build.ninja").read_text(errors="replace")
    except OSError:
        return []
    folders: set[Path] = set()
    for match in re.finditer(r"(?:^|[\s'\"=])(?:-I|-isystem|-L|-Wl,-rpath,)?(/[^\s'\":$]+)", text):
        path = Path(match.group(1))
        folder = path if path.is_dir() else path.parent
        if folder.is_dir() and str(folder) != "/":
            folders.add(folder)
    build = build_dir.resolve()
    return sorted(folder for folder in folders if not (folder.resolve() == build or build in folder.resolve().parents))


def compile_target(build_dir: Path, source_dir: Path, target: str | list[str], timeout: float,
                   jobs: int | None = None, sandbox=None, keep_going: bool = False) -> BuildResult:
    """Builds one target (or several: a list); on failure the message holds the compiler's first
    error line(s). With `sandbox` (on), the build runs inside it (see BUILD_FILE_BYTES). With
    `keep_going`, Ninja builds all it can when something fails (the grader's build of every
    lesson at once, before each lesson's own build: a lesson that fails costs only its own)."""
    targets = [target] if isinstance(target, str) else list(target)
    argv = meson_command() + ["compile", "-C", str(build_dir)] + (["--ninja-args=-k0"] if keep_going else []) + \
        targets + (["-j", str(jobs)] if jobs else [])
    env = dict(os.environ, CCACHE_DISABLE="1", HOME=str(build_dir))
    limits = Limits(file_bytes=BUILD_FILE_BYTES, output_cap=32 * 1024 * 1024)
    if sandbox is not None and sandbox.enabled:
        outcome = run_limited(argv, timeout, cwd=build_dir, env=env, limits=limits, sandbox=sandbox,
                              scratch=build_dir, readable=[source_dir] + build_dependencies(build_dir))
    else:
        outcome = run_limited(argv, timeout, env=env, limits=limits)
    log = outcome.stdout + outcome.stderr
    if outcome.timed_out:
        return BuildResult(False, f"the build did not finish within {timeout:g} s", log)
    if outcome.output_exceeded:
        return BuildResult(False, "the build printed more than 32 MB and was stopped", log)
    if outcome.exit_code != 0:
        message = first_errors(log, build_dir, source_dir)
        if "File size limit exceeded" in log or "SIGXFSZ" in log or outcome.exit_code == -25:
            message = f"the build wrote a file larger than {BUILD_FILE_BYTES // 2 ** 20} MB and was stopped\n" + message
        return BuildResult(False, message, log)
    return BuildResult(True, "", log)


def steps_of(log: str, lesson) -> str:
    """The steps of a Ninja log (each `[n/m] ...` line and what the compiler printed under it)
    that built `lesson`'s objects or program."""
    marks = (f"_lessons_{lesson.slug}_", f"-{lesson.number}.a", f"/{lesson.target}")
    kept, keep = [], False
    for line in log.splitlines():
        if re.match(r"^\[\d+/\d+\] ", line) or line.startswith("FAILED: "):
            keep = any(mark in line for mark in marks) if not line.startswith("FAILED: ") else keep
        elif re.match(r"^(ninja: |INFO: )", line):
            keep = False
        if keep:
            kept.append(line)
    return "\n".join(kept)


def up_to_date(build_dir: Path, target_path: str) -> bool:
    """Whether Ninja has nothing to do for `target_path` (relative to `build_dir`): its dry run
    (`ninja -n`, which runs no command) says so. Ninja keeps in its log only the steps that
    succeeded, so a step that failed is never up to date."""
    ninja = shutil.which("ninja")
    if not ninja:
        return False
    try:
        done = subprocess.run([ninja, "-C", str(build_dir), "-n", target_path], capture_output=True, text=True,
                              timeout=120, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and "no work to do" in done.stdout


def first_errors(log: str, build_dir: Path | None = None, source_dir: Path | None = None) -> str:
    """The first error lines of a compiler or linker log, with paths made course-relative."""
    lines = [_relative(line.strip(), build_dir, source_dir) for line in log.splitlines()]
    errors = []
    for line in lines:
        if _ERROR.search(line) and not _NOISE.match(line) and line not in errors:
            errors.append(line)
        if len(errors) == ERROR_LINES_SHOWN:
            break
    if not errors:
        errors = [line for line in lines if line and not _NOISE.match(line)][-3:]
    return "\n".join(errors) or "the build failed (no message)"


def _relative(line: str, build_dir: Path | None, source_dir: Path | None) -> str:
    """Removes the source folder's prefix from paths in a compiler line."""
    if source_dir is None:
        return line
    prefixes = [str(source_dir.resolve()) + os.sep]
    if build_dir is not None:
        prefixes.insert(0, os.path.relpath(source_dir.resolve(), build_dir.resolve()) + os.sep)
    for prefix in prefixes:
        line = line.replace(prefix, "")
    return line
