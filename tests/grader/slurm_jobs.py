# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Grading a class on a Slurm cluster: the job scripts, their submission, and the merge.

`grade.py --batch CLASS --slurm --out RUN` writes, in the run folder RUN (on a file system
every node sees):

    RUN/slurm.json         the plan: course, class, lessons, the students of each task, the CSV's path
    RUN/prepare.sbatch     one job: stages the course and builds its own starters once (RUN/build/pristine)
    RUN/grade.sbatch       the array: task N grades its students with `grade.py --batch CLASS
                           --student ...`, exactly as a local batch does, into RUN/tasks/NNNN/
    RUN/merge.sbatch       one job: `grade.py --merge RUN`
    RUN/jobs.json          with --submit: the job ids of every submission (prepare, array, merge)

A task copies the prepared build to a folder of its node (--prepared-build), so it compiles
only its students' files; it writes RUN/tasks/NNNN/started.json when it starts and done.json
(with grade.py's exit status) when it ends, and its grades.csv, machine.json and one folder
per student in between.

`grade.py --merge RUN` gathers the tasks into RUN/grade/: the class CSV (the rows of the tasks'
CSVs, in the order a local batch writes them, so the file is byte for byte the one a local
`--batch` writes), each student's folder (report.txt, results.json, junit.xml, machine.json,
logs/), tasks.csv (which node graded whom, with its GPUs, driver, CUDA and NCCL) and
missing.txt: every submission whose task failed, timed out, was cancelled or never ran, with
its Slurm job and task id (and, with --require-gpus, every student graded with cases skipped for
missing GPUs: the merge then exits 3, as the task did). Such a student still has a row in the CSV, with the reason in the
`problem` column, so nobody is silently missing. The merge only reads the tasks' folders:
run twice, it writes the same files. `--only-missing` then submits the array again for the
missing tasks only (and a merge job after it).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import io
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import report_csv
from course_layout import safe_name

PLAN = "slurm.json"
JOBS = "jobs.json"
SCRIPTS = ("prepare.sbatch", "grade.sbatch", "merge.sbatch")
EXIT_MISSING = 4  # grade.py --merge: some submissions were not graded
EXIT_GPUS = 3  # grade.py --require-gpus: some case was skipped for missing GPUs
ACTIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING")  # Slurm's job states
_GPU_TAG = re.compile(r'"([^"\n]*\[gpus:(\d+)\][^"\n]*)"')


class SlurmError(RuntimeError):
    """sbatch failed, or the run folder is not one that --slurm wrote."""


@dataclasses.dataclass
class Resources:
    """What each array task asks Slurm for (None: the cluster's default)."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None  # per task, Slurm's format: "30", "1:00:00", "1-0"
    gpus_per_task: int | None = None  # --gpus-per-task=N
    gres: str | None = None  # --gres=gpu:N instead
    cpus_per_task: int | None = None
    mem: str | None = None
    extra: list[str] = dataclasses.field(default_factory=list)  # more #SBATCH lines, as written

    def lines(self, gpus: bool = True) -> list[str]:
        """The #SBATCH lines; `gpus` False for the jobs that only build or merge."""
        lines = [f"#SBATCH --{name}={value}" for name, value in
                 (("partition", self.partition), ("account", self.account), ("time", self.time)) if value]
        if gpus and self.gres:
            lines.append(f"#SBATCH --gres={self.gres}")
        elif gpus and self.gpus_per_task:
            lines.append(f"#SBATCH --gpus-per-task={self.gpus_per_task}")
        lines += [f"#SBATCH --{name}={value}" for name, value in
                  (("cpus-per-task", self.cpus_per_task), ("mem", self.mem)) if value]
        return lines + [line if line.startswith("#SBATCH") else f"#SBATCH {line}" for line in self.extra]


@dataclasses.dataclass
class Plan:
    """One class on Slurm: what slurm.json holds."""

    run: Path  # the run folder, on the shared file system
    course: Path
    class_dir: Path
    build: Path  # the prepared build (<build>/pristine)
    lessons: list[str]  # slugs, the CSV's columns
    tasks: list[list[str]]  # the students (folder names) of each task, in the local batch's order
    grade_args: list[str]  # the grading options every task passes to grade.py (--lessons, --timeout, ...)
    csv: Path
    python: str = "python3"  # found on PATH on each node (the job inherits the submitter's environment)
    grade_py: Path = Path(__file__).resolve().parent / "grade.py"
    name: str = "grade"  # the jobs' names: grade-<class>, grade-<class>-prepare, grade-<class>-merge
    roster: str = ""  # --roster: the merge writes the LMS import files too
    require_gpus: bool = False  # --require-gpus: a task that exits 3 graded with cases skipped for GPUs

    def task_folder(self, task: int) -> Path:
        return self.run / "tasks" / f"{task:04d}"

    def to_json(self) -> str:
        data = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in data.items()}, indent=2) + "\n"

    @classmethod
    def load(cls, run: Path) -> "Plan":
        path = run / PLAN
        if not path.is_file():
            raise SlurmError(f"{run} has no {PLAN}: not a run folder that grade.py --slurm wrote")
        data = json.loads(path.read_text())
        paths = {"run", "course", "class_dir", "build", "csv", "grade_py"}
        return cls(**{k: Path(v) if k in paths else v for k, v in data.items()})


def split_tasks(students: list[str], per_task: int) -> list[list[str]]:
    """Consecutive groups of `per_task` students."""
    return [students[i:i + per_task] for i in range(0, len(students), per_task)]


def gpus_needed(course: Path, lessons: list[str]) -> int:
    """The most GPUs any graded case of these lessons asks for: the largest [gpus:G] in a tag
    string naming one of the lessons in the course's tests/ sources (hidden [.] cases left out)."""
    most = 0
    for source in sorted((course / "tests").glob("*")):
        if source.suffix not in (".cpp", ".cu", ".h", ".cuh") or not source.is_file():
            continue
        for tags, count in _GPU_TAG.findall(source.read_text(errors="replace")):
            if "[.]" not in tags and "[.," not in tags and any(f"[{slug}]" in tags for slug in lessons):
                most = max(most, int(count))
    return most


# ----------------------------------------------------------------------------- the scripts

def _header(plan: Plan, job: str, resources: Resources, gpus: bool, output: str) -> list[str]:
    return ["#!/bin/bash",
            f"# Written by grade.py --slurm for the class {plan.class_dir} (tests/grader/README.md).",
            f"#SBATCH --job-name={plan.name}{'-' + job if job else ''}",
            f"#SBATCH --output={plan.run / 'slurm' / output}",
            "#SBATCH --ntasks=1"  # one grade.py; Slurm 22.05 refuses --gpus-per-task without --ntasks
            ] + resources.lines(gpus) + ["set -euo pipefail"]


def _grade_command(plan: Plan, *extra: str) -> str:
    argv = [plan.python, str(plan.grade_py), "--course", str(plan.course)] + list(extra)
    return " ".join(shlex.quote(part) for part in argv)


def prepare_script(plan: Plan, resources: Resources) -> str:
    """The job that builds the course's own starters once, for every task to copy."""
    command = _grade_command(plan, "--batch", str(plan.class_dir), "--build-dir", str(plan.build),
                             "--build-only", *plan.grade_args)
    return "\n".join(_header(plan, "prepare", resources, False, "prepare-%j.out") + [command]) + "\n"


def array_script(plan: Plan, resources: Resources) -> str:
    """The job array: task N grades the students of plan.tasks[N] as a local batch would."""
    q = shlex.quote
    lines = _header(plan, "", resources, True, "%A_%a.out")
    lines.insert(3, f"#SBATCH --array=0-{len(plan.tasks) - 1}")
    lines += ['task=${SLURM_ARRAY_TASK_ID:?"submit this script with sbatch (an array job)"}',
              'case "$task" in']
    for number, students in enumerate(plan.tasks):
        lines.append(f"  {number}) students=({' '.join(q(s) for s in students)}) ;;")
    lines += ['  *) echo "no task $task in this class" >&2; exit 2 ;;', "esac",
              f"folder={q(str(plan.run / 'tasks'))}/$(printf %04d \"$task\")",
              'work="${TMPDIR:-/tmp}/course-grade-${SLURM_ARRAY_JOB_ID}-${task}"',
              'rm -rf "$folder" "$work"',
              'mkdir -p "$folder"',
              "trap 'rm -rf \"$work\"' EXIT",
              "trap 'exit 143' TERM",
              'printf \'{"job": "%s", "task": %d, "node": "%s", "started": "%s"}\\n\' '
              '"${SLURM_ARRAY_JOB_ID}_${task}" "$task" "$(hostname)" "$(date -Is)" >"$folder/started.json"',
              "args=()",
              'for student in "${students[@]}"; do args+=("--student=$student"); done',  # a name may start with -
              "status=0",
              _grade_command(plan, "--batch", str(plan.class_dir), "--prepared-build", str(plan.build),
                             *plan.grade_args)
              + ' --build-dir "$work" --out "$folder" --csv "$folder/grades.csv" "${args[@]}" || status=$?',
              'printf \'{"job": "%s", "task": %d, "node": "%s", "exit_status": %d, "finished": "%s"}\\n\' '
              '"${SLURM_ARRAY_JOB_ID}_${task}" "$task" "$(hostname)" "$status" "$(date -Is)" >"$folder/done.json"',
              'exit "$status"']
    return "\n".join(lines) + "\n"


def merge_script(plan: Plan, resources: Resources) -> str:
    """The job that merges the tasks' results once the array has ended."""
    command = _grade_command(plan, "--merge", str(plan.run))
    return "\n".join(_header(plan, "merge", resources, False, "merge-%j.out") + [command]) + "\n"


def write_run(plan: Plan, resources: Resources) -> list[Path]:
    """slurm.json and the three scripts in the run folder; returns the scripts' paths."""
    (plan.run / "slurm").mkdir(parents=True, exist_ok=True)
    (plan.run / "tasks").mkdir(exist_ok=True)
    (plan.run / PLAN).write_text(plan.to_json())
    # The build and merge jobs need neither GPUs nor the tasks' time limit.
    small = dataclasses.replace(resources, gpus_per_task=None, gres=None, time=None)
    paths = []
    for name, text in zip(SCRIPTS, (prepare_script(plan, small), array_script(plan, resources),
                                    merge_script(plan, small))):
        path = plan.run / name
        path.write_text(text)
        path.chmod(0o755)
        paths.append(path)
    return paths


# ----------------------------------------------------------------------------- submission

GRES_ADVICE = ("Ask for what the cluster has: --gpus-per-task 0 where no node offers a GPU as a Slurm resource (the "
               "GPU cases are then ungraded, and --require-gpus makes that an error), --gres SPEC with a resource "
               "that `sinfo -o '%P %G'` lists, or --partition P of a partition whose nodes have GPUs.")


def sbatch(argv: list[str]) -> str:
    """Runs `sbatch --parsable ...`; returns the job id."""
    try:
        done = subprocess.run(["sbatch", "--parsable"] + argv, capture_output=True, text=True, timeout=120)
    except OSError as error:
        raise SlurmError(f"sbatch: {error} (is this a Slurm submit host?)") from error
    if done.returncode != 0:
        refused = done.stderr.strip()
        advice = f"\n{GRES_ADVICE}" if re.search(r"generic resource|\bgres\b", refused, re.I) else ""
        raise SlurmError(f"sbatch {' '.join(argv)} failed: {refused}{advice}")
    return done.stdout.strip().split(";")[0]


def ask_slurm(argv: list[str]) -> str:
    """What a Slurm command prints, or '' when it is missing or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def gpu_resource_problem(resources: Resources, ask=ask_slurm) -> str:
    """Why Slurm would refuse the array's GPU request on this cluster, said before sbatch is
    called: '' when the array asks for no GPU, when the partition it goes to has the resource,
    or when `sinfo` cannot tell. Reads `sinfo -o '%P %G'`: each partition (the default one
    marked '*') with the generic resources of its nodes, '(null)' for none."""
    if not resources.gres and not resources.gpus_per_task:
        return ""
    wanted = resources.gres.split(":")[0] if resources.gres else "gpu"
    offering = re.compile(rf"(?:^|,){re.escape(wanted)}(?::|\(|,|$)")
    partitions: dict[str, set[str]] = {}
    defaults = []
    for line in ask(["sinfo", "-h", "-o", "%P %G"]).splitlines():
        name, _, gres = line.strip().partition(" ")
        if name.endswith("*"):
            name = name[:-1]
            defaults.append(name)
        if name:
            partitions.setdefault(name, set()).add(gres.strip() or "(null)")
    chosen = resources.partition.split(",") if resources.partition else defaults or sorted(partitions)
    if not any(name in partitions for name in chosen):
        return ""  # sinfo cannot tell (or lists no such partition: sbatch says what is wrong with it)
    if any(offering.search(gres) for name in chosen for gres in partitions.get(name, ())):
        return ""
    found = "; ".join(f"{name}: {', '.join(sorted(partitions[name]))}" for name in chosen if name in partitions)
    others = [f"{name} ({', '.join(sorted(partitions[name]))})" for name in sorted(partitions)
              if name not in chosen and any(offering.search(gres) for gres in partitions[name])]
    request = f"--gres={resources.gres}" if resources.gres else f"--gpus-per-task={resources.gpus_per_task}"
    return (f"the array asks for {request}, but the nodes of partition {', '.join(chosen)} offer no '{wanted}' "
            f"resource to Slurm (sinfo -o '%P %G' says {found}), so sbatch would refuse it with \"Invalid generic "
            "resource (gres) specification\". " + (f"Partitions with GPUs: {'; '.join(others)}. " if others else "")
            + GRES_ADVICE)


def array_spec(tasks: list[int]) -> str:
    """'0-2,5,7-8'."""
    parts, start = [], None
    for index, task in enumerate(tasks):
        if start is None:
            start = task
        if index + 1 == len(tasks) or tasks[index + 1] != task + 1:
            parts.append(str(start) if start == task else f"{start}-{task}")
            start = None
    return ",".join(parts)


def submit(plan: Plan, tasks: list[int] | None = None, run=sbatch) -> dict:
    """Submits the build (unless it is done), the array (all tasks, or `tasks`) after it, and
    the merge after the array (afterany: it also runs when tasks failed). Returns the record
    appended to jobs.json."""
    tasks = list(range(len(plan.tasks))) if tasks is None else tasks
    record: dict = {"submitted": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                    "tasks": array_spec(tasks)}
    after = []
    if not prepared(plan.build):
        record["prepare"] = run([str(plan.run / "prepare.sbatch")])
        after = [f"--dependency=afterok:{record['prepare']}", "--kill-on-invalid-dep=yes"]
    record["array"] = run(after + [f"--array={record['tasks']}", str(plan.run / "grade.sbatch")])
    record["merge"] = run([f"--dependency=afterany:{record['array']}", str(plan.run / "merge.sbatch")])
    jobs = load_jobs(plan.run)
    jobs.append(record)
    (plan.run / JOBS).write_text(json.dumps(jobs, indent=2) + "\n")
    return record


def load_jobs(run: Path) -> list[dict]:
    path = run / JOBS
    return json.loads(path.read_text()) if path.is_file() else []


def prepared(build: Path) -> bool:
    """Whether the build job finished (grade.py --build-only writes prepared.json last)."""
    try:
        return json.loads((build / "prepared.json").read_text()).get("ok", False)
    except (OSError, ValueError):
        return False


# ----------------------------------------------------------------------------- the merge

@dataclasses.dataclass
class TaskState:
    """What the merge found of one task."""

    task: int
    students: list[str]
    job: str  # "<array job>_<task>", or "unknown"
    complete: bool
    state: str  # in words: "done (exit status 0)", "timed out", "never ran (...)", ...
    rows: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    machine: dict = dataclasses.field(default_factory=dict)
    waiting: bool = False  # still queued or running: --only-missing leaves it alone
    short_of_gpus: bool = False  # --require-gpus and its grade.py exited 3: cases skipped for missing GPUs


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _slurm_state(job: str, ask=ask_slurm) -> str:
    """The array task's state from sacct, else scontrol ('' when neither knows it).

    Without accounting (sacct), a task cancelled while it was pending leaves no record of its
    own: slurmctld still lists its array job, without it. That reads NOT_LISTED."""
    found = re.match(r"\s*([A-Z_]+)", ask(["sacct", "-n", "-P", "-X", "-j", job, "-o", "State"]))
    if found:
        return found.group(1)
    found = re.search(r"JobState=(\S+)", ask(["scontrol", "-o", "show", "job", job]))
    if found:
        return found.group(1)
    array = job.partition("_")[0]
    if array != job and re.search(rf"\bArrayJobId={array}\b", ask(["scontrol", "-o", "show", "job", array])):
        return "NOT_LISTED"
    return ""


def _last_job(plan: Plan, task: int) -> str:
    """The array job of the latest submission that holds `task` ("unknown" if none is recorded)."""
    for record in reversed(load_jobs(plan.run)):
        for part in record.get("tasks", "").split(","):
            low, _, high = part.partition("-")
            if part and int(low) <= task <= int(high or low):
                return f"{record['array']}_{task}"
    return "unknown"


def task_state(plan: Plan, task: int, slurm_state=_slurm_state) -> TaskState:
    """Reads one task's folder: complete when done.json is there and its CSV has every student."""
    folder, students = plan.task_folder(task), plan.tasks[task]
    started, done = _read_json(folder / "started.json"), _read_json(folder / "done.json")
    job = (done or started or {}).get("job") or _last_job(plan, task)
    state = TaskState(task, students, job, False, "")
    state.machine = _read_json(folder / "machine.json") or {}
    if done is not None and (folder / "grades.csv").is_file():
        with (folder / "grades.csv").open(newline="") as source:
            rows = list(csv.reader(source))[1:]
        named = {report_csv.csv_cell(student): student for student in students}  # as write_table wrote the name
        state.rows = {named[row[0]]: row for row in rows if row and row[0] in named}
        state.complete = len(state.rows) == len(students)
    if state.complete:
        state.state = f"done (exit status {done['exit_status']})"
        state.short_of_gpus = plan.require_gpus and done.get("exit_status") == EXIT_GPUS
        if state.short_of_gpus:
            state.state += f", cases skipped for missing GPUs on {state.machine.get('hostname', 'its node')} " \
                           f"({state.machine.get('gpu_count', '?')} GPUs), an error with --require-gpus"
        return state
    known = slurm_state(job) if job != "unknown" else ""
    seen = f", Slurm: {known}" if known else ""
    if known in ACTIVE:
        state.waiting = True
        state.state = f"not finished yet (Slurm: {known})"
    elif done is not None:
        state.state = f"failed (exit status {done.get('exit_status')}, results incomplete{seen})"
    elif started is not None:
        log = plan.run / "slurm" / f"{job}.out"
        text = log.read_text(errors="replace") if log.is_file() else ""
        if "DUE TO TIME LIMIT" in text or known == "TIMEOUT":
            state.state = "timed out (the task's --time ran out)"
        elif "CANCELLED" in text or known.startswith("CANCELLED"):
            state.state = "cancelled while running"
        else:
            state.state = f"did not finish (killed, or its node failed{seen})"
    elif known.startswith("CANCELLED") or known == "NOT_LISTED":
        state.state = "never ran (cancelled before it started)"
    else:
        state.state = f"never ran{seen or ' (no sign of it in the run folder)'}"
    return state


def missing_row(student: str, lessons: int, state: TaskState) -> list[str]:
    """A CSV row for a student whose task gave no result: empty points, the reason as problem."""
    return report_csv.ungraded_row(student, lessons, f"not graded: Slurm job {state.job} (task {state.task}) {state.state}")


def merge(plan: Plan, slurm_state=_slurm_state) -> tuple[list[TaskState], list[str]]:
    """Writes RUN/grade/ (or the plan's CSV path) from the tasks' folders. Returns every task's
    state and the lines of missing.txt (empty when every submission was graded)."""
    out = plan.run / "grade"
    out.mkdir(parents=True, exist_ok=True)
    states = [task_state(plan, task, slurm_state) for task in range(len(plan.tasks))]
    rows, missing = [], []
    for state in states:
        for student in state.students:
            if state.complete:
                rows.append(state.rows[student])
                _copy_student(plan.task_folder(state.task) / safe_name(student), out / safe_name(student))
                if state.short_of_gpus and state.rows[student][-5] not in ("", "0"):  # the ungraded column
                    missing.append(f"{student}: Slurm job {state.job} (task {state.task}): {state.state}: "
                                   f"{state.rows[student][-4]}; report {out / safe_name(student) / 'report.txt'}")
            else:
                rows.append(missing_row(student, len(plan.lessons), state))
                missing.append(f"{student}: Slurm job {state.job} (task {state.task}): {state.state}; "
                               f"log {plan.run / 'slurm' / (state.job + '.out')}")
                shutil.rmtree(out / safe_name(student), ignore_errors=True)
    report_csv.write_table(plan.csv, report_csv.header(plan.lessons), rows)
    (out / "missing.txt").write_text("".join(line + "\n" for line in missing))
    _write_tasks_csv(out / "tasks.csv", states)
    return states, missing


def _copy_student(source: Path, destination: Path) -> None:
    if destination.exists():
        shutil.rmtree(destination)
    if source.is_dir():
        shutil.copytree(source, destination)


def _write_tasks_csv(path: Path, states: list[TaskState]) -> None:
    """Which node graded whom: one row per task."""
    from machine import describe  # noqa: PLC0415 - only the merge needs it

    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["task", "slurm_job", "state", "node", "gpus", "machine", "students"])
    for state in states:
        machine = state.machine
        writer.writerow([state.task, state.job, state.state, machine.get("hostname", ""),
                         machine.get("gpu_count", ""), describe(machine) if machine else "",
                         " ".join(state.students)])
    path.write_text(text.getvalue())
