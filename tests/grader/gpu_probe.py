#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The grader's own count of the GPUs a test program can use; prints one line of JSON.

    {"gpus": 2, "via": "CUDA runtime libcudart.so.13 (13.0)", "error": ""}

The grader decides which cases are ungraded ("needs 2 GPUs, found 1") from this count, never
from what a graded program prints. It asks the CUDA runtime (cudaGetDeviceCount, through the
toolkit's shared libcudart), which sees what the tests' runtime sees: CUDA_VISIBLE_DEVICES,
a driver too old for the runtime, no driver at all. Without a shared runtime it asks the
driver (cuDeviceGetCount in libcuda.so.1). The grader runs this script with the same
environment, limits and sandbox as the test programs. No GPU or no driver: 0.

COURSE_GRADER_TEST_GPU_COUNT=N replaces the count, for the grader's own tests (whose fixture
course has no CUDA and pretends to have GPUs through FAKE_GPU_COUNT).
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import sys


def runtime_candidates() -> list[str]:
    homes = [os.environ.get(name, "") for name in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    found = []
    for home in filter(None, homes):
        for folder in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            found += sorted(glob.glob(os.path.join(home, folder, "libcudart.so.[0-9]*")), reverse=True)
    return found + ["libcudart.so"]


def probe() -> dict:
    fake = os.environ.get("COURSE_GRADER_TEST_GPU_COUNT")
    if fake is not None:
        return {"gpus": int(fake), "via": "COURSE_GRADER_TEST_GPU_COUNT (the grader's own tests)", "error": ""}
    errors = []
    for path in runtime_candidates():
        try:
            runtime = ctypes.CDLL(path)
        except OSError:
            continue
        version = ctypes.c_int(0)
        runtime.cudaRuntimeGetVersion(ctypes.byref(version))
        count = ctypes.c_int(0)
        status = runtime.cudaGetDeviceCount(ctypes.byref(count))
        via = f"CUDA runtime {os.path.basename(path)} ({version.value // 1000}.{version.value % 1000 // 10})"
        if status != 0:
            runtime.cudaGetErrorString.restype = ctypes.c_char_p
            text = runtime.cudaGetErrorString(status).decode(errors="replace")
            return {"gpus": 0, "via": via, "error": f"cudaGetDeviceCount: {text} (error {status})"}
        return {"gpus": count.value, "via": via, "error": ""}
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        errors.append(f"no CUDA runtime or driver library ({error})")
        return {"gpus": 0, "via": "none", "error": "; ".join(errors)}
    count = ctypes.c_int(0)
    status = driver.cuInit(0)
    if status == 0:
        status = driver.cuDeviceGetCount(ctypes.byref(count))
    if status != 0:
        return {"gpus": 0, "via": "CUDA driver libcuda.so.1", "error": f"CUDA driver error {status}"}
    return {"gpus": count.value, "via": "CUDA driver libcuda.so.1", "error": ""}


if __name__ == "__main__":
    print(json.dumps(probe()))
    sys.exit(0)
