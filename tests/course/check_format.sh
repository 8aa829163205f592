#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# Checks, without changing anything, that the course's C++ and CUDA sources follow the root
# .clang-format (CI runs this); --fix formats them in place instead.
#     tests/course/check_format.sh [--fix] [COURSE_ROOT]
# Exit status: 0 formatted, 1 not (the files and clang-format's own diagnostics are printed),
# 77 skipped when clang-format is not installed (1 with COURSE_REQUIRE_FORMAT=1, as CI sets it).
# Not checked: tests/grader/, whose C++ files stand in for student submissions, and a
# submission's style is not graded.
set -euo pipefail
fix=0
if [ "${1:-}" = --fix ]; then
  fix=1
  shift
fi
cd "${1:-$(dirname "$0")/../..}"
if ! command -v clang-format >/dev/null; then
  echo "clang-format is not installed: the format is not checked"
  [ "${COURSE_REQUIRE_FORMAT:-0}" = 1 ] && { echo "COURSE_REQUIRE_FORMAT=1: that is an error (CI)"; exit 1; }
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cpp' '*.cu' '*.cuh' |
    grep -v '^tests/grader/' | sort -u)
else
  mapfile -t files < <(find common lessons solutions tests -path tests/grader -prune -o \
    \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) -print | sort)
fi
echo "$(clang-format --version | head -1); ${#files[@]} files"
if [ "$fix" = 1 ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for file in "${files[@]}"; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || bad+=("$file")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "not formatted as .clang-format says (run tests/course/check_format.sh --fix, or clang-format -i FILE):"
  printf '  %s\n' "${bad[@]}"
  clang-format --dry-run "${bad[0]}" 2>&1 | head -20
  exit 1
fi
echo "every file follows .clang-format"
