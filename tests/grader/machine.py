# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""The record of the machine a grade was made on.

A multi-GPU grade depends on the machine: a case that needs 4 GPUs is ungraded on a
machine with 2. So every grade carries this record: the GPUs as the grader's own probe sees
them (gpu_probe.py: the count that decides what is ungraded, names, compute capability,
memory, driver and runtime versions), nvidia-smi's list, nvcc, NCCL, and whether the graded
programs ran in a sandbox. Nothing in it comes from a graded program. Anything that cannot be
found reads "unknown".
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

UNKNOWN = "unknown"


def _run(argv: list[str]) -> str:
    """A command's stdout, or '' if it is missing or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def nvidia_smi_gpus() -> list[dict]:
    """[{name, pci_bus_id, driver_version}] from nvidia-smi; [] without it."""
    if not shutil.which("nvidia-smi"):
        return []
    text = _run(["nvidia-smi", "--query-gpu=name,pci.bus_id,driver_version", "--format=csv,noheader"])
    gpus = []
    for line in text.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) == 3:
            gpus.append({"name": fields[0], "pci_bus_id": fields[1], "driver_version": fields[2]})
    return gpus


GPU_STATE_FIELDS = "index,compute_mode,clocks.applications.graphics,clocks.applications.memory,persistence_mode"


def gpu_state() -> str:
    """The GPU settings a program could change and leave for the next (compute mode, application
    clocks, persistence), one line per GPU from nvidia-smi; '' without it."""
    if not shutil.which("nvidia-smi"):
        return ""
    return _run(["nvidia-smi", f"--query-gpu={GPU_STATE_FIELDS}", "--format=csv,noheader"]).strip()


def _cuda_homes() -> list[Path]:
    homes = [Path(os.environ[name]) for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name)]
    return homes + [Path("/usr/local/cuda")]


def nvcc_version() -> str:
    """'12.4.131' from `nvcc --version`."""
    candidates = [shutil.which("nvcc")] + [str(home / "bin" / "nvcc") for home in _cuda_homes()]
    for nvcc in candidates:
        if nvcc and Path(nvcc).is_file():
            match = re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", _run([nvcc, "--version"]))
            if match:
                return match.group(1)
    return UNKNOWN


def nccl_version() -> str:
    """'2.21.5', read from NCCL_MAJOR/MINOR/PATCH in the first nccl.h found."""
    folders = [Path("/usr/include"), Path("/usr/local/cuda/include")] + \
        [home / "include" for home in _cuda_homes()]
    for folder in folders:
        header = folder / "nccl.h"
        if header.is_file():
            text = header.read_text(errors="replace")
            parts = [re.search(rf"#define\s+NCCL_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR", "PATCH")]
            if all(parts):
                return ".".join(match.group(1) for match in parts)
    return UNKNOWN


def machine_record(probe: dict | None = None, sandbox: str = "off (unknown)") -> dict:
    """Everything known about this machine, from the grader's own GPU probe (gpu_probe.py) and
    nvidia-smi: a graded program's own inventory is never trusted."""
    smi = nvidia_smi_gpus()
    inventory = None
    if probe is not None:
        details = probe.get("details") or {}
        inventory = {"gpus_visible": probe["gpus"], "gpus": details.get("devices", UNKNOWN),
                     "driver_api": details.get("driver_api", UNKNOWN), "runtime": details.get("runtime", UNKNOWN),
                     "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")}
        probe = {key: value for key, value in probe.items() if key != "details"}
    count = inventory["gpus_visible"] if inventory else (len(smi) if smi else UNKNOWN)
    return {
        "hostname": platform.node() or UNKNOWN,
        "graded_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "gpu_count": count,
        "gpu_probe": probe if probe is not None else UNKNOWN,
        "sandbox": sandbox,
        "cuda_visible_devices": inventory["cuda_visible_devices"] if inventory else
        os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"),
        "gpus": inventory["gpus"] if inventory else UNKNOWN,
        "nvidia_smi": smi or UNKNOWN,
        "driver": smi[0]["driver_version"] if smi else UNKNOWN,
        "driver_api": inventory["driver_api"] if inventory else UNKNOWN,
        "cuda_runtime": inventory["runtime"] if inventory else UNKNOWN,
        "nvcc": nvcc_version(),
        "nccl": nccl_version(),
        **slurm_record(),
    }


def slurm_record() -> dict:
    """{"slurm": job, array task, node, partition} inside a Slurm job (which node graded whom); {} elsewhere."""
    names = {"job": "SLURM_JOB_ID", "array_job": "SLURM_ARRAY_JOB_ID", "array_task": "SLURM_ARRAY_TASK_ID",
             "node": "SLURMD_NODENAME", "partition": "SLURM_JOB_PARTITION", "gpus_on_node": "SLURM_GPUS_ON_NODE",
             "cluster": "SLURM_CLUSTER_NAME"}
    if not os.environ.get("SLURM_JOB_ID"):
        return {}
    return {"slurm": {key: os.environ[name] for key, name in names.items() if os.environ.get(name)}}


def describe(record: dict) -> str:
    """The record on one line: '2 GPUs (2x NVIDIA H100 80GB HBM3), driver 550.54, CUDA runtime 12.4, ...'."""
    gpus = record.get("gpus")
    count = record.get("gpu_count", UNKNOWN)
    if isinstance(gpus, list) and gpus:
        names: dict[str, int] = {}
        for gpu in gpus:
            names[gpu["name"]] = names.get(gpu["name"], 0) + 1
        kinds = ", ".join(f"{n}x {name}" for name, n in names.items())
        head = f"{count} GPU{'s' if count != 1 else ''} ({kinds})"
    else:
        head = f"{count} GPUs" if count != UNKNOWN else "GPUs unknown"
    driver = record.get("driver", UNKNOWN)
    if driver == UNKNOWN and record.get("driver_api", UNKNOWN) != UNKNOWN:
        driver = f"API {record['driver_api']}"
    return (f"{head}, driver {driver}, CUDA runtime {record.get('cuda_runtime', UNKNOWN)}, "
            f"nvcc {record.get('nvcc', UNKNOWN)}, NCCL {record.get('nccl', UNKNOWN)}, "
            f"host {record.get('hostname', UNKNOWN)}")
