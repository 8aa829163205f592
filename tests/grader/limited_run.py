# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Run a command with a time limit, keeping a bounded amount of its output.

The grader runs code it does not trust: a test program can hang, print without end, or
leave child processes behind. `run_limited` starts the command in its own process group,
kills the whole group when the time is up, and keeps only the head and the tail of what
the command printed, so neither memory nor the terminal fills up.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import signal
import subprocess
import threading
import time

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024


@dataclasses.dataclass
class Outcome:
    """What happened to one command."""

    exit_code: int | None  # None when we killed it on time-out; negative: ended by that signal
    timed_out: bool
    stdout: str
    stderr: str
    seconds: float


class _BoundedReader(threading.Thread):
    """Drains one pipe, keeping its first HEAD_BYTES and its last TAIL_BYTES."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self._stream = stream
        self._head = bytearray()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._dropped = 0

    def run(self) -> None:
        try:
            for chunk in iter(lambda: self._stream.read1(8192), b""):
                self._keep(chunk)
        except (OSError, ValueError):
            pass  # the pipe was closed under us; keep what we have

    def _keep(self, chunk: bytes) -> None:
        room = HEAD_BYTES - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size - len(self._tail[0]) >= TAIL_BYTES:
            self._dropped += len(self._tail[0])
            self._tail_size -= len(self._tail.popleft())

    def text(self) -> str:
        """Everything kept, with a marker where output was dropped."""
        middle = f"\n[... {self._dropped} bytes of output left out ...]\n".encode() if self._dropped else b""
        data = bytes(self._head) + middle + b"".join(self._tail)
        return data.decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    """Kills every process of the group that `pid` leads (the command and its children)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def run_limited(argv: list[str], timeout: float | None, cwd=None, env=None) -> Outcome:
    """Runs `argv`; after `timeout` seconds kills it and everything it started.

    stdin is closed, so a command that waits for input ends instead of hanging.
    """
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    readers = [_BoundedReader(proc.stdout), _BoundedReader(proc.stderr)]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    seconds = time.monotonic() - start
    _kill_group(proc.pid)  # on time-out the command; otherwise what it left running
    proc.wait()
    for reader, stream in zip(readers, (proc.stdout, proc.stderr)):
        reader.join(timeout=10)
        if not reader.is_alive():  # a process outside the group may still hold the pipe open
            stream.close()
    return Outcome(exit_code=None if timed_out else proc.returncode, timed_out=timed_out,
                   stdout=readers[0].text(), stderr=readers[1].text(), seconds=seconds)
