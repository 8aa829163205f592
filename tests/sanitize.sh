#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# compute-sanitizer around one Catch2 test program, for meson's memcheck and racecheck setups:
#     tests/sanitize.sh COMPUTE_SANITIZER TOOL PROGRAM [ARGS...]
# The tool instruments every kernel (tens of times slower) and runs one kernel at a time. Two kinds
# of case cannot pass under it, whatever the code does, so they are left out:
#   [timing]   asserts a ratio of times (one kernel against a copy, two GPUs against one), or
#              needs a peer process to join before a deadline;
#   [overlap]  holds one stream and needs another's work to run meanwhile: serialized, it waits
#              for its watchdog (100 s) and ends the program, so the cases after it never run;
#   [concurrent] runs kernels that wait for each other inside the GPU (lesson 07's kernel one-shot:
#              each worker's kernel waits for its peers' flags): serialized, the first kernel waits
#              for peers that cannot start until it ends, and gives up after its patience.
# Each program prints the filter it ran with. Any other arguments replace the filter.
set -euo pipefail
sanitizer=$1 tool=$2 program=$3
shift 3
args=("$@")
[ ${#args[@]} -gt 0 ] || args=("~[timing]~[overlap]~[concurrent]")
extra=()
[ "$tool" = memcheck ] && extra=(--report-api-errors no)  # the tests provoke API errors on purpose
exec "$sanitizer" --tool "$tool" --error-exitcode 99 "${extra[@]}" --target-processes all "$program" "${args[@]}"
