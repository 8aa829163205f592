# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Run a command with a time limit and resource limits, keeping a bounded amount of its output.

The grader runs code it does not trust: a test program can hang, print without end, fork a
process that calls setsid() and sleeps forever, or write files. `run_limited`:

- starts the command in its own process group, with resource limits (`Limits`: CPU time,
  file size, processes, no core files) and, when given one, inside a `sandbox.Sandbox`;
- kills the whole group when the time is up, and kills the command as soon as it has printed
  more than `output_cap` bytes;
- afterwards kills every process the command left behind, even one that left the group: the
  grader is a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so orphans become its children
  and are found by walking /proc from the grader down;
- keeps only the head and the tail of what the command printed;
- with `channel=True`, hands the command the write end of a pipe (COURSE_RESULT_FD) and the
  read end of another (COURSE_RESULT_SETUP_FD) that holds a fresh token and the command's
  arguments (one line each, in hex), and returns everything written to the first, up to
  CHANNEL_CAP. The token is in no environment: code that runs before main() cannot read it
  without the read() the grader's symbol checks refuse.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import os
import resource
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 64 * 1024
CHANNEL_CAP = 1024 * 1024  # bytes of result records read from one run; more is an error
PR_SET_CHILD_SUBREAPER = 36


@dataclasses.dataclass
class Outcome:
    """What happened to one command."""

    exit_code: int | None  # None when we killed it on time-out; negative: ended by that signal
    timed_out: bool
    stdout: str
    stderr: str
    seconds: float
    output_exceeded: bool = False  # killed for printing more than output_cap bytes
    printed: int = 0  # bytes printed on stdout and stderr together
    output_cap: int = 0  # the cap it was held to (0: none)
    channel: bytes | None = None  # what came through the result channel (channel=True)
    channel_exceeded: bool = False  # more than CHANNEL_CAP bytes came through it
    token: str = ""  # the token the channel's records must carry
    left_behind: int = 0  # processes still running after the command ended on its own, killed (a command
    # that was stopped at a limit leaves none: what it started was still its own, and is killed with it)
    record_seconds: list[float] = dataclasses.field(default_factory=list)  # when each channel line arrived
    stalled: bool = False  # killed because no channel line came for `stall_timeout` seconds


@dataclasses.dataclass
class Limits:
    """Resource limits for a graded process (and, inherited, everything it starts)."""

    cpu_seconds: int | None = None  # RLIMIT_CPU
    file_bytes: int = 256 * 1024 * 1024  # RLIMIT_FSIZE: the largest file it may write
    processes: int | None = None  # RLIMIT_NPROC (counted per user; not enforced for root)
    output_cap: int = 8 * 1024 * 1024  # bytes on stdout + stderr before the program is stopped

    def apply(self) -> None:
        """Runs in the child between fork and exec."""
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _lower(resource.RLIMIT_FSIZE, self.file_bytes)
        if self.cpu_seconds:
            _lower(resource.RLIMIT_CPU, self.cpu_seconds)
        if self.processes:
            _lower(resource.RLIMIT_NPROC, self.processes)


def _lower(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))


def user_process_limit(extra: int = 2048) -> int:
    """RLIMIT_NPROC for graded programs: the tasks this user runs now plus `extra` (CUDA and
    NCCL start many threads, and the limit counts every thread of the user)."""
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(entry / "task"))
            except OSError:
                continue
    return count + extra


class _BoundedReader(threading.Thread):
    """Drains one pipe, keeping its first `head` and its last `tail` bytes."""

    def __init__(self, stream, head: int = HEAD_BYTES, tail: int = TAIL_BYTES, on_data=None, start=None):
        super().__init__(daemon=True)
        self._start = start  # with a start time: the seconds after it at which each line ended
        self.line_seconds: list[float] = []
        self._stream = stream
        self._head_limit, self._tail_limit = head, tail
        self._head = bytearray()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._dropped = 0
        self.total = 0
        self._on_data = on_data

    def run(self) -> None:
        try:
            for chunk in iter(lambda: self._stream.read1(65536), b""):
                self.total += len(chunk)
                if self._start is not None and len(self.line_seconds) < 100_000:
                    self.line_seconds += [time.monotonic() - self._start] * chunk.count(b"\n")
                self._keep(chunk)
                if self._on_data:
                    self._on_data()
        except (OSError, ValueError):
            pass  # the pipe was closed under us; keep what we have

    def _keep(self, chunk: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._dropped += len(self._tail[0])
            self._tail_size -= len(self._tail.popleft())

    def data(self) -> bytes:
        return bytes(self._head) + b"".join(self._tail)

    def text(self) -> str:
        """Everything kept, with a marker where output was dropped."""
        middle = f"\n[... {self._dropped} bytes of output left out ...]\n".encode() if self._dropped else b""
        data = bytes(self._head) + middle + b"".join(self._tail)
        return data.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------- processes left behind

def become_subreaper() -> bool:
    """Makes orphaned descendants of this process its children (Linux 3.4+)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """{pid: parent pid} of every process; zombies (ended, not yet reaped) are reaped when they
    are ours, and left out."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2:].split()
        if len(fields) < 2:
            continue
        if fields[0] in (b"Z", b"X"):
            try:
                os.waitpid(int(entry), os.WNOHANG)
            except (ChildProcessError, OSError):
                pass
            continue
        parents[int(entry)] = int(fields[1])
    return parents


def descendants(pid: int | None = None) -> list[int]:
    """Every process below `pid` (default: this one)."""
    top = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(top, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def kill_descendants(rounds: int = 20, grace: float = 0.5) -> int:
    """Kills everything this process started that is still running (and reaps it); returns how
    many processes that was. Processes on their way out (a sandbox's first process, which
    ends with the program) get `grace` seconds first. Repeats while a process manages to fork
    during the sweep."""
    deadline = time.monotonic() + grace
    while descendants() and time.monotonic() < deadline:
        time.sleep(0.02)
    killed: set[int] = set()
    for _ in range(rounds):
        pids = descendants()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except (ChildProcessError, OSError):
                pass  # not our child (its parent was killed at the same time); init reaps it
        time.sleep(0.01)
    return len(killed)


def _kill_group(pid: int) -> None:
    """Kills every process of the group that `pid` leads (the command and its children)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


# ----------------------------------------------------------------------------- running

def run_limited(argv: list[str], timeout: float | None, cwd=None, env=None, limits: Limits | None = None,
                sandbox=None, scratch: Path | None = None, channel: bool = False, readable=(),
                stall_timeout=None) -> Outcome:
    """Runs `argv`; after `timeout` seconds kills it and everything it started.

    stdin is closed, so a command that waits for input ends instead of hanging. With `sandbox`
    (a sandbox.Sandbox that is on), the command runs inside it with `scratch` writable.
    With `channel` and `stall_timeout`, it is also killed (timed out, `stalled`) when no line has
    come through the result channel for `stall_timeout` seconds since the start or the last line
    (a list: its Nth number is the limit while N lines have come): a run of several cases then
    gives each case the time a run of its own would have.
    """
    env = dict(os.environ if env is None else env)
    pass_fds: tuple[int, ...] = ()
    read_end = write_end = None
    setup_read = None
    token = ""
    if channel:
        read_end, write_end = os.pipe()
        setup_read, setup_write = os.pipe()
        token = secrets.token_hex(16)
        setup = token + "\n" + "".join(str(arg).encode("utf-8", "surrogateescape").hex() + "\n" for arg in argv[1:])
        with os.fdopen(setup_write, "wb") as pipe:  # a few hundred bytes: the pipe's buffer holds them
            pipe.write(setup.encode())
        env.update(COURSE_RESULT_FD=str(write_end), COURSE_RESULT_SETUP_FD=str(setup_read))
        pass_fds = (write_end, setup_read)
    if sandbox is not None and sandbox.enabled:
        argv = sandbox.command(argv, scratch=scratch, cwd=cwd, readable=readable)
    start = time.monotonic()
    too_much = threading.Event()
    cap = limits.output_cap if limits else None
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, pass_fds=pass_fds,
                                preexec_fn=limits.apply if limits else None)
    finally:
        for end in (write_end, setup_read):
            if end is not None:
                os.close(end)
    readers: list[_BoundedReader] = []

    def printed() -> None:
        if cap is not None and sum(reader.total for reader in readers) > cap:
            too_much.set()

    readers += [_BoundedReader(proc.stdout, on_data=printed), _BoundedReader(proc.stderr, on_data=printed)]
    channel_reader = None
    if read_end is not None:
        channel_reader = _BoundedReader(os.fdopen(read_end, "rb"), head=CHANNEL_CAP + 1, tail=0, start=start)
    for reader in readers + ([channel_reader] if channel_reader else []):
        reader.start()
    timed_out = stalled = False
    deadline = None if timeout is None else start + timeout
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        if too_much.is_set():
            break
        now = time.monotonic()
        if deadline is not None and now > deadline:
            timed_out = True
            break
        if stall_timeout is not None and channel_reader is not None:
            lines = channel_reader.line_seconds
            limit = stall_timeout if not isinstance(stall_timeout, (list, tuple)) else \
                stall_timeout[min(len(lines), len(stall_timeout) - 1)]
            if now - start - (lines[-1] if lines else 0.0) > limit:
                timed_out = stalled = True
                break
    seconds = time.monotonic() - start
    left_behind = 0
    ended = proc.poll() is not None
    if ended:  # it ended on its own: whatever it started and still runs was left behind
        left_behind = kill_descendants()
    _kill_group(proc.pid)  # on time-out or too much output, the command and its group
    proc.wait()
    # And what left the group (setsid). After a stop at a limit, these are the stopped command's
    # own processes, not ones it left behind: a GPU process killed inside a hung NCCL call can take
    # longer than kill_descendants' grace to go, and counting it would make a stalled shared run
    # disagree with itself, so that every case ran alone again (lesson 06, a missing group call).
    stragglers = kill_descendants()
    if ended:
        left_behind += stragglers
    streams = [proc.stdout, proc.stderr]
    for reader, stream in zip(readers, streams):
        reader.join(timeout=10)
        if not reader.is_alive():  # a process we could not kill may still hold the pipe open
            stream.close()
    channel_data = None
    exceeded = False
    if channel_reader is not None:
        channel_reader.join(timeout=10)
        channel_data = channel_reader.data()
        exceeded = channel_reader.total > CHANNEL_CAP
        channel_data = channel_data[:CHANNEL_CAP]
    output_exceeded = too_much.is_set()
    code = proc.returncode
    if sandbox is not None and sandbox.enabled and 128 < code <= 128 + 64:
        code = -(code - 128)  # bwrap reports a program ended by signal N as exit code 128 + N
    return Outcome(exit_code=None if timed_out else code, timed_out=timed_out and not output_exceeded,
                   stdout=readers[0].text(), stderr=readers[1].text(), seconds=seconds,
                   output_exceeded=output_exceeded, printed=sum(r.total for r in readers), output_cap=cap or 0,
                   channel=channel_data,
                   channel_exceeded=exceeded, token=token, left_behind=left_behind,
                   record_seconds=list(channel_reader.line_seconds) if channel_reader else [],
                   stalled=stalled and not output_exceeded)
