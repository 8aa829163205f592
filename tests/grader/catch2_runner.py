# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""List the test cases of a Catch2 v3 program and run them, together or one per process.

Every lesson's test program is Catch2 with the course's own main. This module knows how to
talk to such a program and nothing about grading:

- `list_cases(program)` reads the cases (`--list-tests --reporter xml`) with the lesson,
  task, GPU count and points taken from their tags, and the GPU inventory the program
  prints on stderr.
- `run_cases(program, cases, timeout)` runs them all in one process, then alone each case
  without a complete result there (and, for the grader, each case that did not pass).
- `run_case(program, case, timeout)` runs ONE case (`<escaped name> --reporter xml --out
  FILE`) and classifies it from the report FILE and the exit status as passed, failed,
  skipped, crashed or timed_out, with a message a student can read. What the program
  prints on stdout is never trusted for the result; stderr is read only for the
  watchdog's line and for the last lines before a crash.

A case that runs alone pays for its own crash, hang or corrupted CUDA context, and nothing else.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from limited_run import Outcome, run_limited

PASSED, FAILED, SKIPPED, CRASHED, TIMED_OUT = "passed", "failed", "skipped", "crashed", "timed_out"
STATUSES = (PASSED, FAILED, SKIPPED, CRASHED, TIMED_OUT)

WATCHDOG_EXIT_CODE = 70  # the course's watchdog ends the program with this code
SKIP_EXIT_CODES = (0, 4, 77)  # our main maps "all skipped" to 77; Catch2's own main uses 4
GPU_SKIP = re.compile(r"\bneeds \d+ GPUs?\b")  # "needs 2 GPUs, found 1"
CRASH_TAIL_LINES = 8

_TAG = re.compile(r"\[([^\]]*)\]")
_WATCHDOG_LINE = re.compile(r"^WATCHDOG: .*$", re.MULTILINE)
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


# ----------------------------------------------------------------------------- listing

def clean_env(env: dict | None = None) -> dict:
    """The environment for a test program: ours, minus the variable that marks a child case
    (it would silence the GPU inventory)."""
    result = dict(os.environ if env is None else env)
    result.pop("COURSE_CHILD_OUTPUT", None)
    return result


def list_cases(program: str | Path, timeout: float = 120, cwd=None, env=None) -> Listing:
    """The program's visible test cases (hidden ones, tagged [.], are left out)."""
    with tempfile.TemporaryDirectory(prefix="catch2-list-") as scratch:
        report = Path(scratch) / "list.xml"
        outcome = run_limited([str(program), "--list-tests", "--reporter", "xml", "--out", str(report)],
                              timeout, cwd=cwd, env=clean_env(env))
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


def run_case(program: str | Path, case: TestCase, timeout: float, cwd=None, env=None) -> CaseResult:
    """Runs one case in a fresh process and classifies the outcome."""
    with tempfile.TemporaryDirectory(prefix="catch2-case-") as scratch:
        report = Path(scratch) / "report.xml"
        argv = [str(program), escape_test_name(case.name), "--reporter", "xml", "--out", str(report)]
        outcome = run_limited(argv, timeout, cwd=cwd, env=clean_env(env))
        text = report.read_text(errors="replace") if report.exists() else ""
    status, message = classify(case, outcome, parse_report_text(text), timeout)
    return CaseResult(case=case, status=status, message=message, exit_code=outcome.exit_code,
                      seconds=outcome.seconds, stdout=outcome.stdout, stderr=outcome.stderr)


def run_cases(program: str | Path, cases: list[TestCase], timeout: float, retry_alone=None, cwd=None,
              env=None) -> list[CaseResult]:
    """Runs every case in ONE process first (fast: CUDA and NCCL start once), then runs alone,
    with run_case, each case that has no complete result in that run's report (the program
    crashed or hung there) and each case for which `retry_alone(result)` is true.

    The grader retries every case that did not pass, so that a case failing only because an
    earlier one left the CUDA context broken still gets its points: a pass in the shared run
    is trusted, anything else is judged alone. `timeout` is per case; the shared run gets
    twice that plus a minute per ten cases.
    """
    if not cases:
        return []
    shared_timeout = 2 * timeout + 60 * (1 + len(cases) // 10)
    with tempfile.TemporaryDirectory(prefix="catch2-all-") as scratch:
        report = Path(scratch) / "report.xml"
        argv = [str(program), "--reporter", "xml", "--out", str(report)]
        outcome = run_limited(argv, shared_timeout, cwd=cwd, env=clean_env(env))
        root = parse_report_text(report.read_text(errors="replace") if report.exists() else "")
    elements = {element.get("name"): element for element in (root.iter("TestCase") if root is not None else [])}
    results = []
    for case in cases:
        element = elements.get(case.name)
        overall = element.find("OverallResult") if element is not None else None
        if overall is None:
            results.append(run_case(program, case, timeout, cwd=cwd, env=env))
            continue
        if overall.get("success") != "true":
            status, message = FAILED, first_failure(element) or "failed (the report names no failed check)"
        elif int(overall.get("skips", "0") or 0) > 0:
            status, message = SKIPPED, _first_text(element, "Skip") or "skipped"
        else:
            status, message = PASSED, ""
        result = CaseResult(case=case, status=status, message=message, exit_code=outcome.exit_code,
                            seconds=float(overall.get("durationInSeconds", "0") or 0), stderr=outcome.stderr)
        if retry_alone is not None and retry_alone(result):
            result = run_case(program, case, timeout, cwd=cwd, env=env)
        results.append(result)
    return results


def classify(case: TestCase, outcome: Outcome, root: ET.Element | None, timeout: float) -> tuple[str, str]:
    """(status, message) from the report's root element (None if none) and the exit status."""
    watchdog = watchdog_line(outcome.stderr)
    if outcome.timed_out:
        return TIMED_OUT, watchdog or f"no result after {timeout:g} s"
    code = outcome.exit_code
    if code == WATCHDOG_EXIT_CODE:
        return TIMED_OUT, watchdog or f"the test's watchdog ended the program (exit code {code})"
    element = find_case_element(root, case.name)
    if code is not None and code < 0:
        fatal = _first_text(element, "FatalErrorCondition") if element is not None else ""
        signal_name = describe_exit(code).split()[0]
        extra = f" ({fatal})" if fatal and not fatal.startswith(signal_name) else ""
        return CRASHED, f"{describe_exit(code)}{extra}" + _tail_text(outcome.stderr)
    overall = element.find("OverallResult") if element is not None else None
    if overall is None:
        if code == 2:
            return CRASHED, f"the program ran no test case named '{case.name}' (exit code 2)"
        return CRASHED, f"the program ended ({describe_exit(code)}) before the case finished" + \
            _tail_text(outcome.stderr)
    if overall.get("success") != "true":
        return FAILED, first_failure(element) or "failed (the report names no failed check)"
    if int(overall.get("skips", "0") or 0) > 0:
        if code in SKIP_EXIT_CODES:
            return SKIPPED, _first_text(element, "Skip") or "skipped"
    elif code == 0:
        return PASSED, ""
    return CRASHED, f"the case finished but the program then exited with {describe_exit(code)}" + \
        _tail_text(outcome.stderr)


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


def find_case_element(root: ET.Element | None, name: str) -> ET.Element | None:
    """The report's TestCase element for `name` (the only one, if the names differ)."""
    if root is None:
        return None
    elements = list(root.iter("TestCase"))
    for element in elements:
        if element.get("name") == name:
            return element
    return elements[0] if len(elements) == 1 else None


def first_failure(case_element: ET.Element) -> str:
    """The first failed check, exception or FAIL() of a case, with the INFO messages in scope."""
    infos: list[str] = []
    for element in _children_in_order(case_element):
        tag = element.tag
        if tag == "Info":
            infos.append(_text(element))
            continue
        text = ""
        if tag == "Expression" and element.get("success") == "false":
            text = format_expression(element)
        elif tag in ("Exception", "Failure", "FatalErrorCondition"):
            text = _text(element)
        if text:
            return "\n".join([text] + [f"with message: {info}" for info in infos if info])
        if tag != "Section":
            infos = []  # INFO messages are written just before the check they belong to
    return ""


def format_expression(element: ET.Element) -> str:
    """'REQUIRE( a == b ) with expansion: 1 == 2', or the exception the check ran into."""
    kind = element.get("type", "CHECK")
    original = _text(element.find("Original"))
    expanded = _text(element.find("Expanded"))
    check = f"{kind}( {original} )"
    exception = element.find("Exception")
    if exception is not None:
        return f"{_text(exception)} (thrown inside {check})"
    if expanded and expanded != original:
        return f"{check} with expansion: {expanded}"
    return check


def _children_in_order(element: ET.Element):
    """The case's elements in document order, entering sections but not checks."""
    for child in element:
        yield child
        if child.tag == "Section":
            yield from _children_in_order(child)


def _text(element: ET.Element | None) -> str:
    """An element's text without the reporter's indentation."""
    if element is None or element.text is None:
        return ""
    lines = [line.strip() for line in element.text.strip().splitlines()]
    return "\n".join(lines)


def _first_text(element: ET.Element, tag: str) -> str:
    found = next(element.iter(tag), None)
    return _text(found)


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
