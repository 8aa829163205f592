# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""List the test cases of a Catch2 v3 program and run them, together or one per process.

Every lesson's test program is Catch2 with the course's own main. This module knows how to
talk to such a program and nothing about grading:

- `list_cases(program)` reads the cases (`--list-tests --reporter xml`) with the lesson,
  task, GPU count and points taken from their tags, and the GPU inventory the program
  prints on stderr.
- `run_cases(program, cases, timeout)` runs them all in one process, then alone each case
  without a trustworthy result there (and, for the grader, each case that did not pass).
- `run_case(program, case, timeout)` runs ONE case (`<escaped name>`) and classifies it as
  passed, failed, skipped, crashed or timed_out, with a message a student can read.

Results come only through the result channel (common/testing/result_channel.h): a pipe made
here for each run, into which the course's Catch2 listener writes a record as each case begins
and one with its result as it ends, and the course's main() a closing record with the exit
status it returns. `read_transcript` accepts exactly what they write (the run's token, records
numbered 1, 2, 3, ..., each case asked for begun once and its result right after, nothing after
the closing record) and raises ChannelError on anything else: the results were tampered with.
A result counts only from a process that ended the way the protocol says (`unclean_end`): the
closing record, the exit status it names and its results imply, no limit reached; a run that
ended any other way keeps none of its results.
What the program prints is never trusted for a result; stderr is read only for the
watchdog's line and for the last lines before a crash. Each run goes through
limited_run.run_limited: limits, optional sandbox (RunSettings), leftovers killed.

A case that runs alone pays for its own crash, hang or corrupted CUDA context, and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from limited_run import CHANNEL_CAP, Limits, Outcome, run_limited

PASSED, FAILED, SKIPPED, CRASHED, TIMED_OUT = "passed", "failed", "skipped", "crashed", "timed_out"
STATUSES = (PASSED, FAILED, SKIPPED, CRASHED, TIMED_OUT)

WATCHDOG_EXIT_CODE = 70  # the course's watchdog ends the program with this code
WATCHDOG_CAP_VARIABLE = "COURSE_WATCHDOG_CAP_MS"  # caps every watchdog of a test program (gpu_test.h)
SKIP_EXIT_CODES = (0, 4, 77)  # our main maps "all skipped" to 77; Catch2's own main uses 4
GPU_SKIP = re.compile(r"\bneeds \d+ GPUs?\b")  # "needs 2 GPUs, found 1"
CRASH_TAIL_LINES = 8

_TAG = re.compile(r"\[([^\]]*)\]")
_WATCHDOG_LINE = re.compile(r"^WATCHDOG: .*$", re.MULTILINE)
_CHANNEL_REFUSED = re.compile(r"^result channel: (.*)$", re.MULTILINE)  # open_result_channel() said why
_INVENTORY_HEAD = re.compile(
    r"^GPUs visible: (\d+) \(CUDA_VISIBLE_DEVICES=([^)]*)\), driver API ([\w.]+), runtime ([\w.]+)\s*$")
_INVENTORY_GPU = re.compile(
    r"^\s+GPU (\d+): (.*), cc (\d+\.\d+), ([\d.]+) GB, (\d+) SMs, (\S*)\s*$")


class ProgramError(RuntimeError):
    """The program could not even list its test cases."""


@dataclasses.dataclass
class TestCase:
    """One listed Catch2 test case and what its tags say about it."""

    __test__ = False  # not a unittest/pytest class, despite the name

    name: str
    tags: list[str]
    lesson: str | None = None  # the "NN-slug" tag
    task: int | None = None
    gpus: int = 0
    points: int = 0
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def hidden(self) -> bool:
        return any(tag == "." or tag.startswith(".") for tag in self.tags)


@dataclasses.dataclass
class CaseResult:
    """The outcome of one case (from the shared run or from a run of its own)."""

    case: TestCase
    status: str
    message: str = ""  # several lines for a failure: the failed check, then its INFO messages
    exit_code: int | None = None
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    findings: list[str] = dataclasses.field(default_factory=list)  # what a person should look at
    shared_with: int = 0  # the result came from one run of this many cases together (0: it ran alone)

    @property
    def summary(self) -> str:
        """The message on one line."""
        return "; ".join(line.strip() for line in self.message.splitlines() if line.strip())

    @property
    def gpu_skip(self) -> bool:
        """Skipped because the machine has too few GPUs ("needs 2 GPUs, found 1")."""
        return self.status == SKIPPED and bool(GPU_SKIP.search(self.message))


@dataclasses.dataclass
class Listing:
    """The cases a program lists, and the GPU inventory it printed while doing so."""

    cases: list[TestCase]
    inventory: dict | None
    stderr: str = ""


# ----------------------------------------------------------------------------- tags

def parse_tags(text: str) -> list[str]:
    """'[01-x][task:2][points:3]' -> ['01-x', 'task:2', 'points:3']."""
    return _TAG.findall(text or "")


def case_from_tags(name: str, tags: list[str]) -> TestCase:
    """Reads lesson, task, gpus and points from the tags; a missing points tag means 0 points."""
    case = TestCase(name=name, tags=list(tags))
    numbers = {}
    for tag in tags:
        key, sep, value = tag.partition(":")
        if sep and key in ("task", "gpus", "points"):
            try:
                numbers[key] = int(value)
            except ValueError:
                case.warnings.append(f"test case '{name}': tag [{tag}] is not a whole number")
        elif not sep and re.fullmatch(r"\d\d-[\w-]+", tag):
            case.lesson = tag
    case.task = numbers.get("task")
    case.gpus = numbers.get("gpus", 0)
    case.points = numbers.get("points", 0)
    if "points" not in numbers:
        case.warnings.append(f"test case '{name}' has no [points:N] tag: it is worth 0 points")
    if case.task is None:
        case.warnings.append(f"test case '{name}' has no [task:N] tag")
    return case


# ----------------------------------------------------------------------------- how to run

@dataclasses.dataclass
class RunSettings:
    """How graded programs run: in a sandbox or not, with which limits, and the grader's own
    GPU count (None: trust the program's skips, as the course's own test suite does)."""

    sandbox: object | None = None  # a sandbox.Sandbox
    limits: Limits | None = None
    gpus: int | None = None


DEFAULT_RUN = RunSettings()


class ChannelError(RuntimeError):
    """The result channel held something the listener never writes: extra, repeated or
    malformed records, or too much. The lesson's results cannot be trusted at all."""


def clean_env(env: dict | None = None) -> dict:
    """The environment for a test program: ours, minus the variables that mark a child case
    (it would silence the GPU inventory) or name a result channel."""
    result = dict(os.environ if env is None else env)
    for name in ("COURSE_CHILD_OUTPUT", "COURSE_RESULT_FD", "COURSE_RESULT_SETUP_FD", "COURSE_RESULT_TOKEN",
                 WATCHDOG_CAP_VARIABLE):  # a cap is the grader's to give, per run (see with_cap)
        result.pop(name, None)
    return result


def with_cap(env: dict, cap: float | None) -> dict:
    """A cleaned `env` with the tests' watchdog cap (COURSE_WATCHDOG_CAP_MS) of `cap` seconds, if any."""
    return env if cap is None else {**env, WATCHDOG_CAP_VARIABLE: str(max(1, round(cap * 1000)))}


def _limits_for(run: RunSettings, seconds: float) -> Limits | None:
    if run.limits is None:
        return None
    return dataclasses.replace(run.limits, cpu_seconds=int(10 * seconds) + 60)


def _run(program, args: list[str], timeout: float, scratch: Path, env, run: RunSettings, channel: bool,
         stall=None, cap: float | None = None) -> Outcome:
    program = Path(program).resolve()  # it runs in `scratch`, not here
    return run_limited([str(program), *args], timeout, cwd=scratch, env=with_cap(clean_env(env), cap),
                       limits=_limits_for(run, timeout), sandbox=run.sandbox, scratch=scratch, channel=channel,
                       readable=[Path(program).resolve().parent], stall_timeout=stall)


# ----------------------------------------------------------------------------- listing

def list_cases(program: str | Path, timeout: float = 120, cwd=None, env=None, run: RunSettings = DEFAULT_RUN) -> Listing:
    """The program's visible test cases (hidden ones, tagged [.], are left out)."""
    with tempfile.TemporaryDirectory(prefix="catch2-list-") as scratch:
        report = Path(scratch) / "list.xml"
        outcome = _run(program, ["--list-tests", "--reporter", "xml", "--out", str(report)], timeout,
                       Path(scratch), env, run, channel=False)
        root = parse_report_text(report.read_text(errors="replace")) if report.exists() else None
    if outcome.timed_out:
        raise ProgramError(f"listing the test cases did not finish within {timeout:g} s")
    if outcome.exit_code != 0 or root is None:
        raise ProgramError(f"listing the test cases failed ({describe_exit(outcome.exit_code)})"
                           + _tail_text(outcome.stderr))
    cases = []
    for element in root.iter("TestCase"):
        name = _text(element.find("Name"))
        case = case_from_tags(name, parse_tags(_text(element.find("Tags"))))
        if not case.hidden:
            cases.append(case)
    return Listing(cases=cases, inventory=parse_inventory(outcome.stderr), stderr=outcome.stderr)


# ----------------------------------------------------------------------------- the result channel

_SHAPES = {"begin": {"token", "seq", "event", "case"},
           "result": {"token", "seq", "event", "case", "status", "message"},
           "end": {"token", "seq", "event", "cases", "exit"}}


@dataclasses.dataclass
class Transcript:
    """What one run's result channel says, checked against the protocol (read_transcript)."""

    records: dict[str, dict]  # {case name: its result record}
    began: list[str]  # the cases in the order they began
    running: str | None = None  # the case that began and has no result: the process ended inside it
    end: dict | None = None  # the closing record main() writes as it returns


def read_transcript(outcome: Outcome, expected: list[str]) -> Transcript:
    """The run's result channel, read by the protocol the course's test main speaks; ChannelError
    (the results were tampered with) on anything it never writes. Every record carries the run's
    token and is numbered 1, 2, 3, ...; a case `begin`s (one that this run was asked to run, once)
    and its `result` follows before anything else; main() closes the run with an `end` record
    that counts the results, after which nothing comes. A run may stop anywhere (a crash, a
    hang): its transcript then ends early, and `running` names the case it ended in."""
    if outcome.channel_exceeded:
        raise ChannelError(f"more than {CHANNEL_CAP // 1024} KB came through the result channel")
    data = outcome.channel or b""
    lines = data.split(b"\n")
    if lines[-1]:
        killed = outcome.timed_out or outcome.output_exceeded or (outcome.exit_code or 0) < 0
        if not killed:
            raise ChannelError("the result channel ends in the middle of a record")
    transcript = Transcript(records={}, began=[])
    for number, line in enumerate(lines[:-1], start=1):
        record = parse_record(line)
        if record is None:
            raise ChannelError(f"result record {number} is not one the course's listener writes")
        event = record["event"]
        if record["token"] != outcome.token:
            raise ChannelError(f"result record {number} does not carry this run's token")
        if record["seq"] != number:
            raise ChannelError(f"result record {number} is numbered {record['seq']!r}")
        if transcript.end is not None:
            raise ChannelError(f"result record {number} comes after the run was closed")
        if event == "end":
            if transcript.running is not None:
                raise ChannelError(f"the run was closed while the case '{transcript.running}' had no result")
            if record["cases"] != len(transcript.records):
                raise ChannelError(f"the run was closed with {record['cases']!r} results, but "
                                   f"{len(transcript.records)} came")
            transcript.end = record
            continue
        name = record["case"]
        if name not in expected:
            raise ChannelError(f"a result for a case that was not run: {str(name)[:200]!r}")
        if event == "begin":
            if transcript.running is not None:
                raise ChannelError(f"the case '{name}' began while the case '{transcript.running}' had no result")
            if name in transcript.began:
                raise ChannelError(f"the case '{name}' began twice")
            transcript.began.append(name)
            transcript.running = name
        else:
            if name in transcript.records:
                raise ChannelError(f"two results for the case '{name}'")
            if transcript.running != name:
                raise ChannelError(f"a result for the case '{name}', which had not begun")
            transcript.records[name] = record
            transcript.running = None
    return transcript


def unclean_end(outcome: Outcome, transcript: Transcript, cases: int) -> str:
    """'' when the run of `cases` cases ended the way the protocol says, and its results count:
    a result for every case, the closing record, the exit status that record names and that its
    results imply, on its own (no limit stopped it) and with nothing left running. Otherwise
    how it ended instead, in words."""
    code = outcome.exit_code
    if outcome.output_exceeded:
        return "printed too much"
    if outcome.stalled:
        return "stalled"
    if outcome.timed_out:
        return "timed out"
    if code is None or code < 0 or code == WATCHDOG_EXIT_CODE:
        return describe_exit(code)
    if transcript.end is None:
        return f"{describe_exit(code)} without closing its run"
    if transcript.end["exit"] != code:
        return f"{describe_exit(code)} after closing its run with exit code {transcript.end['exit']}"
    if len(transcript.records) != cases:
        return f"{describe_exit(code)} with results for {len(transcript.records)} of {cases} cases"
    if code != expected_exit_code(list(transcript.records.values())):
        return f"{describe_exit(code)}, not the status its results imply"
    if outcome.left_behind:
        return f"left {outcome.left_behind} process(es) running"
    return ""


RECORD_BYTES = 64 * 1024  # the longest record line: the listener's is a 2000-byte message, each byte at most \u00XX
FIELD_TYPES = {"token": str, "seq": int, "event": str, "case": str, "status": str, "message": str, "cases": int,
               "exit": int}  # the type of every field a record of the protocol has (_SHAPES: which fields)


def parse_record(line: bytes) -> dict | None:
    """One line of the result channel as the listener or main() writes it: a flat JSON object of
    exactly the fields of its event (_SHAPES), each of its type (FIELD_TYPES), a known status, at
    most RECORD_BYTES; None for anything else. The line is the student's program's to write, so
    nothing in it may raise here: not a nesting deep enough to exhaust Python's recursion
    (json.loads raises RecursionError), not a number too long to convert, not invalid UTF-8."""
    if len(line) > RECORD_BYTES:
        return None
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or set(record) != _SHAPES.get(record.get("event")) \
            or any(type(record[key]) is not FIELD_TYPES[key] for key in record) \
            or (record["event"] == "result" and record["status"] not in (PASSED, FAILED, SKIPPED)):
        return None
    return record


def expected_exit_code(records: list[dict]) -> int:
    """The exit status the course's main gives for these results (Meson's convention)."""
    if any(record["status"] == FAILED for record in records):
        return 1
    if records and all(record["status"] == SKIPPED for record in records):
        return 77
    return 0


# ----------------------------------------------------------------------------- running

def escape_test_name(name: str) -> str:
    """A test spec that matches exactly the case called `name`.

    Catch2 reads `\\ , [ ] * " ~` as syntax in a test spec; a backslash makes each literal.
    A leading '-' or '#' would read as an option or a file tag, so it is escaped too.
    """
    escaped = re.sub(r'([\\,\[\]*"~])', r"\\\1", name)
    if escaped[:1] in ("-", "#"):
        escaped = "\\" + escaped
    if escaped.startswith("exclude:"):
        escaped = "\\" + escaped
    return escaped


def run_case(program: str | Path, case: TestCase, timeout: float, cwd=None, env=None,
             run: RunSettings = DEFAULT_RUN, watchdog_cap: float | None = None) -> CaseResult:
    """Runs one case in a fresh process and classifies the outcome (ChannelError when the
    result channel was tampered with); its result counts only if main() closed the run with the
    exit status the program ended with. `watchdog_cap`: seconds the tests' watchdogs may wait at
    most (run_cases gives it to the lone runs of a lesson known to deadlock)."""
    with tempfile.TemporaryDirectory(prefix="catch2-case-") as scratch:
        outcome = _run(program, [escape_test_name(case.name), "--reporter", "console"], timeout, Path(scratch),
                       env, run, channel=True, cap=watchdog_cap)
    transcript = read_transcript(outcome, [case.name])
    record = transcript.records.get(case.name)
    closed = transcript.end is not None and transcript.end["exit"] == outcome.exit_code
    status, message = classify(case, outcome, record, timeout, closed)
    result = CaseResult(case=case, status=status, message=message, exit_code=outcome.exit_code,
                        seconds=outcome.seconds, stdout=outcome.stdout, stderr=outcome.stderr)
    result.findings = findings_of(outcome)
    if record is not None and record["status"] != FAILED and transcript.end is None and not outcome.timed_out:
        # what a forger does who writes its own case's result and then ends the process before
        # the test could: the result does not count, and a person should look
        result.findings.append(f"the case reported '{record['status']}', then the program ended "
                               f"({describe_exit(outcome.exit_code)}) without closing its run: not counted")
    return judge_skip(result, run.gpus)


def worth_running_alone(result: CaseResult) -> bool:
    """Whether a case that did not pass in the shared run gets a run of its own: every one,
    except a failure whose message is the student's own NOT_IMPLEMENTED stub (alone it would say
    the same; a starter would otherwise run each of its cases twice). A forged stub message can
    only cost its author the second chance, never earn a point."""
    if result.status in (PASSED, SKIPPED):
        return False
    return not (result.status == FAILED and result.message.lstrip().startswith("NOT_IMPLEMENTED: task "))


def run_cases(program: str | Path, cases: list[TestCase], timeout: float, retry_alone=None, cwd=None,
              env=None, run: RunSettings = DEFAULT_RUN, case_timeouts: dict[str, float] | None = None,
              watchdog_caps: dict[str, float] | None = None, timings: list[dict] | None = None) -> list[CaseResult]:
    """Runs every case in ONE process first (fast: CUDA and NCCL start once), then runs alone,
    with run_case, each case that has no result from that run, and each case for which
    `retry_alone(result)` is true.

    Each case has `timeout` seconds (`case_timeouts[name]` where given) in the shared run too: the
    run is stopped when no record has come for that long (limited_run's stall time-out). The
    results of a shared run count only when it ended the way the protocol says (unclean_end: a
    result for every case, the closing record, the exit status that record names and its results
    imply, no limit reached, nothing left running). A run that ended any other way keeps NONE of
    its results, whatever they say; when it ended inside a case (a crash, a hang, the watchdog:
    that case began and has no result):
      - if that case was the first this process began, that run was the case's own run (a fresh
        process that had run nothing else): its outcome is the case's result, not run again;
      - otherwise the next run starts with that case, so it gets a fresh process of its own
        before anything else runs in it (a case that hung only because of what earlier cases
        left behind passes there), and the cases after it run on together in that next run;
    and the cases whose results that run claimed are run again, together, once the others have
    a result (the second pass; a run of it that does not end cleanly sends each of its cases
    alone). Once a case has hung (or tripped the watchdog) in its own run, the lesson is known
    to deadlock: every case not yet run again runs alone, so that no further hang is waited for
    twice (once after other cases, once in its own process), and with its watchdog cap
    (`watchdog_caps[name]`, where given: the tests' watchdogs end every watched call after that
    many seconds, COURSE_WATCHDOG_CAP_MS), so that a further hang ends as a failure within
    seconds instead of costing a whole time-out (the second pass runs together under the largest
    of its cases' caps); the first hang is judged with the full limits, in the shared run and in
    its own. A run that ended otherwise (between cases, after them, with too much output, leaving
    a process running) sends every case alone. A lone run's result counts only from a clean end
    too (run_case). The grader retries every case that did not pass (but see
    worth_running_alone), so that a case failing only because an earlier one left the CUDA
    context broken still gets its points. Each shared run gets twice the longest case time-out
    plus a minute (or ten times it, if less) per ten cases in all.
    `timings`, when given, receives one dict per run and per case (the grader's --profile).
    Raises ChannelError when the result channel holds anything the protocol does not write.
    """
    if not cases:
        return []
    limits = {case.name: (case_timeouts or {}).get(case.name, timeout) for case in cases}
    caps = watchdog_caps or {}
    results: dict[str, CaseResult] = {}
    shared_findings: dict[str, str | None] = {}  # {finding: the case its run stopped in (None: none)}
    queue = list(cases)  # the cases the next shared run runs
    again: list[TestCase] = []  # results claimed by a run that did not end cleanly: run them again
    second_pass = False  # the queue holds such cases
    every_case = True  # the first run selects no case by name: the program runs all its visible cases

    def accept(case: TestCase, record: dict, outcome: Outcome, together: int) -> None:
        status, message = _record_status(record)
        result = judge_skip(CaseResult(case=case, status=status, message=message, exit_code=outcome.exit_code,
                                       stderr=outcome.stderr, shared_with=together), run.gpus)
        if retry_alone is not None and retry_alone(result):
            result = _alone(program, case, limits[case.name], env, run, timings)
        results[case.name] = result

    def alone(each: list[TestCase], capped: bool) -> None:
        for case in each:
            results[case.name] = _alone(program, case, limits[case.name], env, run, timings,
                                        cap=caps.get(case.name) if capped else None)

    deadlocks = False  # a case hung in its own run: the rest run alone
    while queue or again:
        if not queue:
            queue, again, second_pass = [case for case in cases if case in again], [], True
        if deadlocks and not (second_pass and len(queue) > 1):
            alone(queue, capped=True)
            queue = []
            continue
        cap = max((caps.get(case.name) for case in queue if case.name in caps), default=None) if deadlocks else None
        outcome = _run_together(program, queue, limits, every_case, env, run, cap)
        every_case = False
        transcript = read_transcript(outcome, [case.name for case in queue])
        why = unclean_end(outcome, transcript, len(queue))
        _time_run(outcome, queue, transcript, why, timings)
        for finding in findings_of(outcome):
            shared_findings.setdefault(finding, transcript.running)
        if not why:
            for case in queue:
                accept(case, transcript.records[case.name], outcome, len(queue))
            queue = []
            continue
        # Not a clean end: none of this run's results count.
        claimed = [case for case in queue if case.name in transcript.records]
        stopped_at = next((case for case in queue if case.name == transcript.running), None)
        if second_pass or deadlocks or outcome.output_exceeded or outcome.left_behind \
                or (stopped_at is None and (not claimed or len(claimed) == len(queue))):
            alone(queue, capped=deadlocks)  # no one case to blame: every case alone
            queue = []
            continue
        again += claimed
        queue = [case for case in queue if case not in claimed]
        if stopped_at is not None and transcript.began == [stopped_at.name]:
            # the case ran first in a fresh process: that was its own run
            status, message = classify(stopped_at, outcome, None, limits[stopped_at.name], closed=False)
            result = CaseResult(case=stopped_at, status=status, message=message, exit_code=outcome.exit_code,
                                seconds=outcome.seconds, stdout=outcome.stdout, stderr=outcome.stderr,
                                shared_with=1 if len(queue) > 1 else 0)
            result.findings = findings_of(outcome)
            results[stopped_at.name] = judge_skip(result, run.gpus)
            deadlocks = status == TIMED_OUT
            queue.remove(stopped_at)
    ordered = [results[case.name] for case in cases]
    # What a person should read about the shared runs stays, whatever the cases' own runs said: on
    # the case the run stopped at (the one that hung), else on the first.
    for finding, stuck in reversed(shared_findings.items()):
        result = results.get(stuck) or ordered[0]
        result.findings.insert(0, f"{finding} (the run of all cases together)")
    return ordered


def _run_together(program, pending: list[TestCase], limits: dict[str, float], every_case: bool, env,
                  run: RunSettings, cap: float | None = None) -> Outcome:
    """One process running `pending` (all the program's cases when `every_case`), each case given
    its own limit from its previous record (its begin, and its result), `cap` the watchdogs'."""
    longest = max(limits[case.name] for case in pending)
    total = 2 * longest + min(60, 10 * longest) * (1 + len(pending) // 10)
    selection = [] if every_case else [",".join(escape_test_name(case.name) for case in pending)]
    stall = [limits[case.name] for case in pending for _record in ("begin", "result")]
    with tempfile.TemporaryDirectory(prefix="catch2-all-") as scratch:
        return _run(program, selection + ["--reporter", "console"], total, Path(scratch), env, run, channel=True,
                    stall=stall, cap=cap)


def _alone(program, case: TestCase, timeout: float, env, run: RunSettings, timings: list[dict] | None,
           cap: float | None = None) -> CaseResult:
    result = run_case(program, case, timeout, env=env, run=run, watchdog_cap=cap)
    if timings is not None:
        timings.append({"step": "alone", "case": case.name, "seconds": round(result.seconds, 3),
                        "status": result.status})
    return result


def _time_run(outcome: Outcome, pending: list[TestCase], transcript: Transcript, unclean: str,
              timings: list[dict] | None) -> None:
    """One shared run's entry in `timings`, and each reported case's time in it: from the
    previous result (the first case's from the start, so it holds the process's start-up)."""
    if timings is None:
        return
    timings.append({"step": "shared run", "cases": len(pending), "reported": len(transcript.records),
                    "seconds": round(outcome.seconds, 3), "ended": unclean or describe_exit(outcome.exit_code),
                    "counted": not unclean})
    previous = 0.0
    for name, record in sorted(transcript.records.items(), key=lambda item: item[1]["seq"]):
        if record["seq"] > len(outcome.record_seconds):
            break
        arrived = outcome.record_seconds[record["seq"] - 1]
        timings.append({"step": "case", "case": name, "seconds": round(arrived - previous, 3),
                        "status": record["status"], "first": previous == 0.0})
        previous = arrived


def _record_status(record: dict) -> tuple[str, str]:
    status, message = record["status"], record["message"]
    if status == FAILED and not message:
        message = "failed (the report names no failed check)"
    if status == SKIPPED and not message:
        message = "skipped"
    return status, message


def stand_in(case: TestCase, status: str, message: str, gpus: int | None) -> CaseResult:
    """The result of a case that could not run (its lesson did not build, was refused, ...): lost
    with `message`, or ungraded where the machine lacks the GPUs it needs."""
    return judge_skip(CaseResult(case, status, message), gpus)


def judge_skip(result: CaseResult, gpus: int | None) -> CaseResult:
    """The grader's rule for skips, with its own GPU count `gpus`: a case is ungraded exactly when
    its [gpus:G] tag asks for more GPUs than that; any other skip is a failure. With gpus None
    (the course's own test suite), the program's skips stand."""
    if gpus is None:
        return result
    case = result.case
    if case.gpus > gpus:
        plural = "" if case.gpus == 1 else "s"
        result.status = SKIPPED
        result.message = f"needs {case.gpus} GPU{plural}, found {gpus}"
    elif result.status == SKIPPED:
        result.status = FAILED
        result.message = (f"the case skipped itself ({result.summary or 'no reason given'}), but this machine has "
                          f"{gpus} GPU{'' if gpus == 1 else 's'} and the case needs {case.gpus}: only a missing "
                          "GPU makes a case ungraded")
    return result


def findings_of(outcome: Outcome) -> list[str]:
    """What a person should look at in one run."""
    found = []
    if outcome.output_exceeded:
        found.append(f"printed more than the {outcome.output_cap // (1024 * 1024)} MB allowed")
    if outcome.timed_out:
        found.append("timed out")
    if outcome.left_behind:
        found.append(f"left {outcome.left_behind} process(es) running")
    refused = _CHANNEL_REFUSED.search(outcome.stderr or "")
    if refused:
        found.append(f"the test program refused its result channel: {refused.group(1)}")
    return found


def classify(case: TestCase, outcome: Outcome, record: dict | None, timeout: float, closed: bool) -> tuple[str, str]:
    """(status, message) from the case's record (None if none came) and how the program ended;
    `closed`: the program's main() closed the run with the exit status the program ended with
    (a case passes or skips only then)."""
    watchdog = watchdog_line(outcome.stderr)
    if outcome.output_exceeded:
        return CRASHED, (f"the program printed more than the {outcome.output_cap // (1024 * 1024)} MB allowed "
                         "(stdout and stderr) and was stopped" + _tail_text(outcome.stderr))
    if outcome.timed_out:
        return TIMED_OUT, watchdog or f"no result after {timeout:g} s"
    code = outcome.exit_code
    if code == WATCHDOG_EXIT_CODE:
        return TIMED_OUT, watchdog or f"the test's watchdog ended the program (exit code {code})"
    if code is not None and code < 0:
        fatal = record["message"] if record is not None and record["status"] == FAILED else ""
        signal_name = describe_exit(code).split()[0]
        extra = f" ({fatal})" if fatal and not fatal.startswith(signal_name) else ""
        return CRASHED, f"{describe_exit(code)}{extra}" + _tail_text(outcome.stderr)
    if record is None:
        if code == 2:
            return CRASHED, f"the program ran no test case named '{case.name}' (exit code 2)"
        return CRASHED, f"the program ended ({describe_exit(code)}) before the case finished" + \
            _tail_text(outcome.stderr)
    status, message = _record_status(record)
    if outcome.left_behind:
        return FAILED, (f"the case left {outcome.left_behind} process(es) running after it ended (killed); "
                        "a case must end everything it starts")
    if status == FAILED:
        return FAILED, message
    if not closed:
        return CRASHED, f"the case {'finished' if status == PASSED else 'skipped'}, but the program then ended " \
            f"({describe_exit(code)}) other than as its test main closed the run" + _tail_text(outcome.stderr)
    if status == SKIPPED and code in SKIP_EXIT_CODES:
        return SKIPPED, message
    if status == PASSED and code == 0:
        return PASSED, ""
    return CRASHED, f"the case {'finished' if status == PASSED else 'skipped'} but the program then exited with " \
        f"{describe_exit(code)}" + _tail_text(outcome.stderr)


# ----------------------------------------------------------------------------- report file

def parse_report_text(text: str) -> ET.Element | None:
    """The report's root element, tolerating a report cut short by a crash or an exit."""
    if not text.strip():
        return None
    parser = ET.XMLPullParser(events=("start",))
    root = None
    try:
        parser.feed(text)
        for _event, element in parser.read_events():
            if root is None:
                root = element
    except ET.ParseError:
        pass  # keep the elements read before the damage
    return root










def _text(element: ET.Element | None) -> str:
    """An element's text without the reporter's indentation."""
    if element is None or element.text is None:
        return ""
    lines = [line.strip() for line in element.text.strip().splitlines()]
    return "\n".join(lines)




# ----------------------------------------------------------------------------- stderr

def watchdog_line(stderr: str) -> str:
    """The watchdog's 'WATCHDOG: ... did not finish within N s. Probably: ...' line, or ''."""
    match = _WATCHDOG_LINE.search(stderr or "")
    return match.group(0).strip() if match else ""


def describe_exit(code: int | None) -> str:
    """'SIGSEGV (signal 11)' for a signal, 'exit code 3' otherwise."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"{signal.Signals(-code).name} (signal {-code})"
        except ValueError:
            return f"signal {-code}"
    if code > 128 and code - 128 < 65:  # a shell or a launcher reporting a signal
        try:
            return f"exit code {code} ({signal.Signals(code - 128).name}?)"
        except ValueError:
            pass
    return f"exit code {code}"


# What the course's main (common/testing/main.cpp) means by an exit status: of a run of several
# cases, and of a case run alone.
_SHARED_EXIT = {0: "no case failed", 1: "some case failed", 77: "every case was skipped",
                WATCHDOG_EXIT_CODE: "the test's watchdog ended it"}
_ALONE_EXIT = {0: "the case did not fail", 1: "the case failed", 77: "the case was skipped",
               WATCHDOG_EXIT_CODE: "the test's watchdog ended it"}


def log_heading(result: CaseResult) -> str:
    """A case's heading in the lesson's log, saying whose each number is: the status is the case's
    own; the exit status is that of the process it ran in, which for the shared run belongs to
    all its cases together (a case passes in a run that exits 1 because another case failed).

        ===== adds two numbers: passed -- run with all 3 cases in one process, which exited with
              exit code 1 (some case failed)
        ===== divides by zero: crashed -- run alone in its own process, which ended with SIGSEGV
              (signal 11) after 0.2 s
    """
    if result.shared_with > 1:
        others = "both cases" if result.shared_with == 2 else f"all {result.shared_with} cases"
        where = f"run with {others} in one process, which"
        meaning = _SHARED_EXIT.get(result.exit_code)
    else:
        where = "run alone in its own process, which" if not result.shared_with else \
            "run in one process with no other case, which"
        meaning = _ALONE_EXIT.get(result.exit_code)
    if result.exit_code is None:
        ended = "was killed (no exit status)"
    else:
        ended = ("exited with " if result.exit_code >= 0 else "ended with ") + describe_exit(result.exit_code)
        ended += f" ({meaning})" if meaning else ""
    took = f" after {result.seconds:.1f} s" if result.seconds else ""
    return f"===== {result.case.name}: {result.status} -- {where} {ended}{took}"


def stderr_tail(stderr: str, lines: int = CRASH_TAIL_LINES) -> list[str]:
    """The last non-empty lines of stderr, without the GPU inventory block."""
    kept = [line.rstrip() for line in (stderr or "").splitlines()
            if line.strip() and not _INVENTORY_HEAD.match(line) and not _INVENTORY_GPU.match(line)]
    return kept[-lines:]


def _tail_text(stderr: str) -> str:
    tail = stderr_tail(stderr)
    return ("\nlast lines of stderr:\n" + "\n".join("  " + line for line in tail)) if tail else ""


def parse_inventory(stderr: str) -> dict | None:
    """The GPU inventory block the course's main prints at the top of stderr, or None."""
    lines = (stderr or "").splitlines()
    for index, line in enumerate(lines):
        head = _INVENTORY_HEAD.match(line)
        if head:
            break
    else:
        return None
    inventory = {"gpus_visible": int(head.group(1)), "cuda_visible_devices": head.group(2),
                 "driver_api": head.group(3), "runtime": head.group(4), "gpus": []}
    for line in lines[index + 1:]:
        gpu = _INVENTORY_GPU.match(line)
        if not gpu:
            break
        inventory["gpus"].append({"index": int(gpu.group(1)), "name": gpu.group(2), "cc": gpu.group(3),
                                  "memory_gb": float(gpu.group(4)), "sms": int(gpu.group(5)),
                                  "pci_bus_id": gpu.group(6)})
    return inventory
