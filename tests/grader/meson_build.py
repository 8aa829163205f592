# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Configure the course with Meson and build one lesson's test program at a time.

The grader configures with `-Donly_lessons=true` (only the student test programs) and
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

from limited_run import run_limited

SETUP_OPTIONS = ["-Donly_lessons=true"]
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


def compile_target(build_dir: Path, source_dir: Path, target: str, timeout: float,
                   jobs: int | None = None) -> BuildResult:
    """Builds one target; on failure the message holds the compiler's first error line(s)."""
    argv = meson_command() + ["compile", "-C", str(build_dir), target] + (["-j", str(jobs)] if jobs else [])
    outcome = run_limited(argv, timeout)
    log = outcome.stdout + outcome.stderr
    if outcome.timed_out:
        return BuildResult(False, f"the build did not finish within {timeout:g} s", log)
    if outcome.exit_code != 0:
        return BuildResult(False, first_errors(log, build_dir, source_dir), log)
    return BuildResult(True, "", log)


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
