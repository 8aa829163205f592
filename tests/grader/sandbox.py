# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The sandbox each graded program, and each build of a student's file, runs in: bubblewrap
(`bwrap`), where the host allows it.

Inside, only what the program needs is there, read-only: the system's folders (/usr, /lib*,
/bin, /opt, /sys and a few files of /etc such as the loader's cache), the Python that runs the
GPU probe, and the folders a run names (the test program's folder; for a build, the staged
course and the build's dependencies). Nothing else of the host: no home folders, no grader
cache with other students' builds and reports, no class folder, no course with its
solutions/, not even their paths. /tmp and /dev/shm are private and small, the only writable
folder is the run's scratch folder (a build's own build folder), there is no network, no
further user namespace, and the program runs in a PID namespace of its own: when it ends, the
kernel kills everything left in it, including a child that called setsid(). The GPUs are
passed in by binding every /dev/nvidia* device file.

`Sandbox.detect()` tries bwrap once per grading run. Where it is missing or cannot start
(no user namespaces, say), `description` says "off (why)": a student's own check goes on
without it, a class (--batch) does not unless the instructor says --no-sandbox. The resource
limits and the kill of every leftover process (limited_run.py) apply either way.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

# What every sandboxed program sees of the host, read-only, where it exists.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/sys",
                  "/run/nvidia-persistenced")
SYSTEM_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd",
                "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/os-release", "/etc/debian_version",
                "/etc/nvidia", "/etc/OpenCL", "/etc/host.conf", "/etc/hosts", "/etc/gai.conf", "/etc/mime.types")
TMP_BYTES = 2 * 1024 ** 3  # the private /tmp (in memory): enough for nvcc's intermediate files


def host_folders() -> list[Path]:
    """The system's folders and files, Python's own prefixes (the GPU probe is Python), and the
    folders the environment names for libraries and programs (LD_LIBRARY_PATH, PATH entries
    outside the system's folders: a toolkit in /opt or a home folder)."""
    found: list[Path] = []
    for path in list(SYSTEM_FOLDERS) + list(SYSTEM_FILES) + [sys.base_prefix, sys.prefix,
                                                             str(Path(sys.executable).resolve().parent)]:
        if path and Path(path).exists() and Path(path) not in found:
            found.append(Path(path))
    for variable in ("LD_LIBRARY_PATH", "PATH", "CUDA_HOME", "CUDA_PATH"):
        for entry in os.environ.get(variable, "").split(os.pathsep):
            if entry and Path(entry).is_absolute() and Path(entry).is_dir() and not _inside(Path(entry), found) \
                    and Path(entry).resolve() != Path(entry).resolve().anchor and Path(entry).resolve() != Path.home():
                found.append(Path(entry))
    return found


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


class Sandbox:
    """How to wrap a command; `enabled` False means "run it as it is"."""

    def __init__(self, bwrap: str | None, description: str, version: str = ""):
        self.bwrap = bwrap
        self.description = description
        self.version = version
        self.readable: list[Path] = []  # more folders every program sees, read-only
        # Folders never to be seen (the course, the grader's build root, the submissions, the reports):
        # where one lies inside a system folder that is bound (a course in /opt), an empty one covers it.
        self.hidden: list[Path] = []
        self.nested_userns = False  # True where this bwrap cannot forbid user namespaces inside

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
        problems = []
        for disable in (True, False):
            candidate = cls(found, "on")
            candidate.nested_userns = not disable
            try:
                done = subprocess.run(candidate.command(["true"], scratch=None, cwd=None), capture_output=True,
                                      text=True, timeout=60, stdin=subprocess.DEVNULL)
            except (OSError, subprocess.SubprocessError) as error:
                return cls.off(f"bwrap cannot start: {error}")
            if done.returncode == 0:
                break
            problems.append((done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[0])
        else:
            return cls.off(f"bwrap cannot start here: {problems[-1]}")
        version = ""
        try:
            version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
        userns = "nested user namespaces allowed: this bwrap cannot forbid them" if candidate.nested_userns \
            else "no nested user namespaces"
        candidate = cls(found, f"on ({version or 'bubblewrap'}: only the system's folders, read-only; no network; "
                        f"own PID namespace; {userns})", version)
        candidate.nested_userns = userns.startswith("nested")
        return candidate

    def command(self, argv: list[str], scratch: Path | None, cwd, readable: list[Path] = (),
                writable: list[Path] = ()) -> list[str]:
        """`argv` wrapped in bwrap: the host's system folders, self.readable and `readable`
        read-only, `scratch` and `writable` writable, run in `cwd`."""
        wrapped = [self.bwrap, "--unshare-all", "--unshare-user"] + ([] if self.nested_userns else ["--disable-userns"])
        wrapped += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--dev", "/dev"]
        bound = host_folders()
        for folder in bound:
            wrapped += ["--ro-bind", str(folder), str(folder)]
        for folder in self.hidden:
            folder = Path(folder).resolve()
            if folder.is_dir() and _inside(folder, bound):
                wrapped += ["--tmpfs", str(folder)]
        for device in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
            wrapped += ["--dev-bind", device, device]
        wrapped += ["--size", str(TMP_BYTES), "--tmpfs", "/dev/shm", "--proc", "/proc",
                    "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
        for folder in list(self.readable) + list(readable):
            if Path(folder).exists():
                wrapped += ["--ro-bind", str(Path(folder).resolve()), str(Path(folder).resolve())]
        for folder in ([scratch] if scratch is not None else []) + list(writable):
            wrapped += ["--bind", str(Path(folder).resolve()), str(Path(folder).resolve())]
        if cwd is not None:
            wrapped += ["--chdir", str(Path(cwd).resolve())]
        return wrapped + ["--"] + [str(part) for part in argv]
