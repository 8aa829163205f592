#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The grader's own count of the GPUs a test program can use; prints two lines of JSON.

    {"gpus": 2, "via": "CUDA runtime libcudart.so.13 (13.0)", "error": ""}
    {"driver_api": "13.0", "runtime": "13.0", "devices": [{"index": 0, "name": "NVIDIA H100 ...", ...}]}

The grader decides which cases are ungraded ("needs 2 GPUs, found 1") from this count, never
from what a graded program prints. It asks the CUDA runtime (cudaGetDeviceCount, through the
toolkit's shared libcudart), which sees what the tests' runtime sees: CUDA_VISIBLE_DEVICES,
a driver too old for the runtime, no driver at all. Without a shared runtime it asks the
driver (cuDeviceGetCount in libcuda.so.1). The grader runs this script with the same
environment, limits and sandbox as the test programs. No GPU or no driver: 0. The count is
printed (and flushed) first; the second line describes the devices for the machine record,
best effort: if it fails, the count stands.

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


def describe(runtime, count: int) -> dict:
    """Versions and, per device, name, compute capability, memory, SMs and PCI bus id."""
    def version(function) -> str:
        value = ctypes.c_int(0)
        function(ctypes.byref(value))
        return f"{value.value // 1000}.{value.value % 1000 // 10}"

    details = {"driver_api": version(runtime.cudaDriverGetVersion),
               "runtime": version(runtime.cudaRuntimeGetVersion), "devices": []}
    get_properties = getattr(runtime, "cudaGetDeviceProperties_v2", None) or runtime.cudaGetDeviceProperties
    for device in range(count):
        # cudaDeviceProp begins with char name[256], cudaUUID_t uuid, char luid[8], unsigned
        # luidDeviceNodeMask, size_t totalGlobalMem (offset 288); the buffer is far larger than
        # the whole structure of any CUDA version.
        properties = ctypes.create_string_buffer(65536)
        if get_properties(properties, device) != 0:
            continue
        name = properties.raw[:256].split(b"\0")[0].decode(errors="replace")
        memory = ctypes.c_size_t.from_buffer(properties, 288).value
        attributes = {}
        for key, number in (("major", 75), ("minor", 76), ("sms", 16)):
            value = ctypes.c_int(0)
            runtime.cudaDeviceGetAttribute(ctypes.byref(value), number, device)
            attributes[key] = value.value
        bus = ctypes.create_string_buffer(32)
        runtime.cudaDeviceGetPCIBusId(bus, 32, device)
        details["devices"].append({"index": device, "name": name, "cc": f"{attributes['major']}.{attributes['minor']}",
                                   "memory_gb": round(memory / 1e9, 1), "sms": attributes["sms"],
                                   "pci_bus_id": bus.value.decode(errors="replace")})
    return details


def probe() -> dict:
    fake = os.environ.get("COURSE_GRADER_TEST_GPU_COUNT")
    if fake is not None:
        return {"gpus": int(fake), "via": "COURSE_GRADER_TEST_GPU_COUNT (the grader's own tests)", "error": "",
                "details": {"driver_api": "test", "runtime": "test", "devices": [
                    {"index": d, "name": "Test GPU", "cc": "9.0", "memory_gb": 80.0, "sms": 132,
                     "pci_bus_id": f"0000:{17 + d:02X}:00.0"} for d in range(int(fake))]}}
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
            return {"gpus": 0, "via": via, "error": f"cudaGetDeviceCount: {text} (error {status})",
                    "runtime_library": runtime}
        return {"gpus": count.value, "via": via, "error": "", "runtime_library": runtime}
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
    found = probe()
    runtime = found.pop("runtime_library", None)
    details = found.pop("details", None)
    print(json.dumps(found), flush=True)
    if details is None and runtime is not None:
        details = describe(runtime, found["gpus"])
    print(json.dumps(details or {}), flush=True)
    sys.exit(0)
