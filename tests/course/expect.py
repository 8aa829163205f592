#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Check that a lesson's test program judges an implementation the way it should.

The course's own test suite (Meson) runs this on three kinds of build of each lesson:

    expect.py --expect pass    PROGRAM   the reference solution: every case passes, or is
                                         skipped for missing GPUs ("needs N GPUs")
    expect.py --expect starter PROGRAM   the starter as shipped: no case passes, and every
                                         case that fails says NOT_IMPLEMENTED
    expect.py --expect wrong [--catches "case name"] PROGRAM
                                         a known-wrong implementation: some case fails
                                         (with --catches, that case must fail)

The cases run in one process, and alone any case that crashed or hung there
(tests/grader/catch2_runner.py); with --catches, only the named cases run, each alone. One
line is printed per case. Exit status: 0 as expected, 77 skipped (the cases that mattered were all
skipped for lack of hardware; Meson shows SKIP), 1 not as expected, with the reasons.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "grader"))

import catch2_runner as runner  # noqa: E402

EXIT_OK, EXIT_FAIL, EXIT_SKIP = 0, 1, 77


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="expect.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--expect", required=True, choices=("pass", "starter", "wrong"),
                        help="what kind of implementation PROGRAM was built with")
    parser.add_argument("--catches", action="append", default=[], metavar="CASE",
                        help="with --expect wrong: this case must fail (may be repeated)")
    parser.add_argument("--needs-gpus", type=int, default=0, metavar="G",
                        help="with --expect wrong: the mistake shows only with G distinct GPUs; with fewer "
                             "the check is skipped (77), since the cases that catch it cannot see it here")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds per case (default: %(default)g)")
    parser.add_argument("program", type=Path, help="the lesson's test program")
    args = parser.parse_args(argv)
    if (args.catches or args.needs_gpus) and args.expect != "wrong":
        parser.error("--catches and --needs-gpus only go with --expect wrong")
    return args


def run_all(program: Path, timeout: float, catches: list[str]) -> list[runner.CaseResult]:
    """Runs the listed cases, printing one line per case. With --catches only the named cases
    run, each alone: a known-wrong implementation must fail the case that names its mistake on
    that case's own account (not because an earlier case broke the CUDA context), and the
    other cases need not run for that."""
    cases = runner.list_cases(program, timeout=timeout).cases
    if catches:
        results = [runner.run_case(program, case, timeout) for case in cases if case.name in catches]
    else:
        results = runner.run_cases(program, cases, timeout)
    for result in results:
        detail = f": {result.summary}" if result.summary else ""
        print(f"{result.status.upper():9} {result.case.name}{detail}", flush=True)
    return results


def gpus_found() -> int:
    """The GPUs this machine shows, from the grader's own probe, in a process of its own (this
    one then holds no CUDA state while the test program runs)."""
    probe = Path(__file__).resolve().parents[1] / "grader" / "gpu_probe.py"
    try:
        done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=120)
        return int(json.loads(done.stdout.splitlines()[0])["gpus"])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError):
        return 0


def check_pass(results: list[runner.CaseResult]) -> tuple[int, list[str]]:
    """A reference solution: each case passes or is skipped for missing GPUs."""
    bad = [f"'{r.case.name}' {r.status}: {r.summary}" for r in results
           if r.status != runner.PASSED and not r.gpu_skip]
    if bad:
        return EXIT_FAIL, ["the reference solution does not pass:"] + bad
    if not any(r.status == runner.PASSED for r in results):
        return EXIT_SKIP, ["every case was skipped (not enough GPUs here)"]
    return EXIT_OK, []


def check_starter(results: list[runner.CaseResult]) -> tuple[int, list[str]]:
    """The starter: nothing passes, and every failure is a NOT_IMPLEMENTED one."""
    bad = []
    for r in results:
        if r.status == runner.PASSED:
            bad.append(f"'{r.case.name}' passes with the starter: a vacuous test (it checks nothing "
                       "the student has to write)")
        elif r.status != runner.SKIPPED and not (r.status == runner.FAILED and "NOT_IMPLEMENTED" in r.message):
            bad.append(f"'{r.case.name}' {r.status} without NOT_IMPLEMENTED: {r.summary}")
    if bad:
        return EXIT_FAIL, ["the starter is not judged as unimplemented:"] + bad
    if not any(r.status == runner.FAILED for r in results):
        return EXIT_SKIP, ["every case was skipped (not enough GPUs here)"]
    return EXIT_OK, []


def check_wrong(results: list[runner.CaseResult], catches: list[str]) -> tuple[int, list[str]]:
    """A known-wrong implementation: some case (or each case in `catches`) does not pass."""
    by_name = {r.case.name: r for r in results}
    unknown = [name for name in catches if name not in by_name]
    if unknown:
        return EXIT_FAIL, [f"--catches: the program has no case named '{name}'" for name in unknown]
    judges = [by_name[name] for name in catches] if catches else results
    caught = [r for r in judges if r.status not in (runner.PASSED, runner.SKIPPED)]
    missed = [r for r in judges if r.status == runner.PASSED]
    skipped = [r for r in judges if r.status == runner.SKIPPED]
    if catches and missed:
        return EXIT_FAIL, ["the tests did not catch this wrong implementation: " +
                           ", ".join(f"'{r.case.name}' passed" for r in missed)]
    if caught and (not catches or not skipped):
        return EXIT_OK, []
    if skipped:
        return EXIT_SKIP, [f"the cases that could catch it were skipped: {skipped[0].summary}"]
    return EXIT_FAIL, ["the tests did not catch this wrong implementation (every case passed)"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.needs_gpus:
        found = gpus_found()
        if found < args.needs_gpus:
            print(f"this mistake shows only with {args.needs_gpus} GPUs, found {found}: not judged here")
            print("expect wrong: skipped")
            return EXIT_SKIP
    try:
        results = run_all(args.program, args.timeout, args.catches)
    except (runner.ProgramError, OSError) as error:
        print(f"expect.py: {args.program}: {error}", file=sys.stderr)
        return EXIT_FAIL
    if not results:
        print(f"expect.py: {args.program} lists no test cases", file=sys.stderr)
        return EXIT_FAIL
    if args.expect == "pass":
        code, notes = check_pass(results)
    elif args.expect == "starter":
        code, notes = check_starter(results)
    else:
        code, notes = check_wrong(results, args.catches)
    for note in notes:
        print(note, file=sys.stderr if code == EXIT_FAIL else sys.stdout)
    verdict = {EXIT_OK: "as expected", EXIT_SKIP: "skipped", EXIT_FAIL: "NOT as expected"}[code]
    print(f"expect {args.expect}: {verdict}")
    return code


if __name__ == "__main__":
    sys.exit(main())
