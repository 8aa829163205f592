#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# Builds every probe of this folder with nvcc (-O2, -arch=native, or sm_90 where native fails)
# into a temporary folder and runs each in turn, printing what it measured; one GPU or two (the
# two-GPU parts say "needs 2 GPUs" on one). Meant to take well under a minute in all, build
# included: the longest, pageable_copy_wait, holds a GPU for 400 ms twelve times.
#     tests/probes/run.sh [PROBE ...]      (default: every *.cu here)
# CUDA_VISIBLE_DEVICES chooses the GPUs as for any CUDA program; the probes use GPUs 0 and 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || nvcc=/usr/local/cuda/bin/nvcc
out=$(mktemp -d /tmp/course-probes.XXXXXX)
trap 'rm -rf "$out"' EXIT

if [ $# -gt 0 ]; then names=("$@"); else names=(); for f in "$here"/*.cu; do names+=("$(basename "$f" .cu)"); done; fi

build() {
  local name=$1
  "$nvcc" -O2 -std=c++17 -arch=native -o "$out/$name" "$here/$name.cu" >"$out/$name.log" 2>&1 ||
    "$nvcc" -O2 -std=c++17 -arch=sm_90 -o "$out/$name" "$here/$name.cu" >>"$out/$name.log" 2>&1
}
pids=()
for name in "${names[@]}"; do build "$name" & pids+=($!); done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "== ${names[$i]}: the build failed"
    cat "$out/${names[$i]}.log"
    status=1
  fi
done
[ $status = 0 ] || exit $status

for name in "${names[@]}"; do
  echo "== $name"
  timeout 60 "$out/$name" || { echo "== $name: exit status $?"; status=1; }
done
exit $status
