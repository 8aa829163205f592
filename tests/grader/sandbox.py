# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The sandbox each graded program runs in: bubblewrap (`bwrap`), where the host allows it.

Inside, the whole file system is read-only (`--ro-bind / /`), /tmp and /dev/shm are private
and empty, the course folder itself (with its solutions/) is hidden behind an empty one, the
only writable folder is the run's scratch folder, there is no network, and the
program runs in a PID namespace of its own: when the program ends, the namespace's
first process ends and the kernel kills everything left in it, including a child that called
setsid(). The GPUs are passed in by binding every /dev/nvidia* device file.

`Sandbox.detect()` tries bwrap once per grading run. Where it is missing or cannot start
(no user namespaces, say), grading goes on without it and `description` says "off (why)";
the resource limits and the kill of every leftover process (limited_run.py) apply either way.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path


class Sandbox:
    """How to wrap a command; `enabled` False means "run it as it is"."""

    def __init__(self, bwrap: str | None, description: str, version: str = ""):
        self.bwrap = bwrap
        self.description = description
        self.version = version
        self.hide: list[Path] = []  # folders replaced by an empty one inside (the course itself)
        self.readable: list[Path] = []  # folders under /tmp that must stay visible (the build)

    @property
    def enabled(self) -> bool:
        return self.bwrap is not None

    @classmethod
    def off(cls, why: str) -> "Sandbox":
        return cls(None, f"off ({why})")

    @classmethod
    def detect(cls, bwrap: str | None = None) -> "Sandbox":
        """bubblewrap at `bwrap` (or on PATH), if it can run a command here."""
        found = bwrap or shutil.which("bwrap")
        if not found:
            return cls.off("bubblewrap (bwrap) is not installed")
        if not Path(found).is_file():
            return cls.off(f"no bwrap at {found}")
        candidate = cls(found, "on")
        try:
            done = subprocess.run(candidate.command(["true"], scratch=None, cwd=None), capture_output=True,
                                  text=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as error:
            return cls.off(f"bwrap cannot start: {error}")
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[0]
            return cls.off(f"bwrap cannot start here: {why}")
        version = ""
        try:
            version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
        return cls(found, f"on ({version or 'bubblewrap'}: read-only file system, no network, own PID namespace)",
                   version)

    def command(self, argv: list[str], scratch: Path | None, cwd, readable: list[Path] = ()) -> list[str]:
        """`argv` wrapped in bwrap, with `scratch` writable and `readable` (and self.readable)
        visible read-only even where they lie under /tmp, run in `cwd`."""
        wrapped = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                   "--ro-bind", "/", "/", "--dev", "/dev"]
        for device in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
            wrapped += ["--dev-bind", device, device]
        wrapped += ["--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp"]
        for folder in self.hide:
            if Path(folder).is_dir():
                wrapped += ["--tmpfs", str(Path(folder).resolve())]
        for folder in list(self.readable) + list(readable):
            if Path(folder).exists():
                wrapped += ["--ro-bind", str(Path(folder).resolve()), str(Path(folder).resolve())]
        if scratch is not None:
            wrapped += ["--bind", str(Path(scratch).resolve()), str(Path(scratch).resolve())]
        if cwd is not None:
            wrapped += ["--chdir", str(Path(cwd).resolve())]
        return wrapped + ["--"] + [str(part) for part in argv]
