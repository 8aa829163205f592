#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# A real Slurm cluster of one machine, from Debian's packages (slurmctld, slurmd, slurm-client,
# munge), to try cluster grading (grade.py --slurm) without a cluster. Used by CI (.ci/slurm).
#
#   tests/grader/slurm/single-node.sh start [--gpus]   start munged, slurmctld and slurmd; wait for the node
#   tests/grader/slurm/single-node.sh stop             stop exactly the daemons `start` started
#   tests/grader/slurm/single-node.sh run [--gpus] -- COMMAND...
#                                                      start, run COMMAND with SLURM_CONF set, then stop
#                                                      (also when COMMAND fails or the script is interrupted)
#   tests/grader/slurm/single-node.sh env              the line to eval for sinfo, sbatch, ...: export SLURM_CONF=...
#
# Everything lives in one folder, $COURSE_SLURM_DIR (default /tmp/course-slurm): munge's key and
# socket, slurm.conf (and gres.conf), state, spool, logs and the daemons' PID files. Nothing of
# the system's own munge or Slurm set-up (/etc/munge, /etc/slurm, /run/munge) is used or touched, so
# the machine's own daemons, if any, keep running. The node is this host (`hostname -s`, reached at
# 127.0.0.1) with the CPUs `nproc` counts and 95% of MemTotal; one partition, `course`.
# Ports: $COURSE_SLURM_PORT (slurmctld, default 6817) and the next one (slurmd).
#
# Without --gpus the node has no generic resource: `gres (null)` in the start message, and a job must
# ask for no GPU (grade.py --slurm --gpus-per-task 0), or sbatch refuses it ("Invalid generic resource").
# --gpus (a GPU host): the GPUs become a GRES. gres.conf names every /dev/nvidia<N> file, the node
# has Gres=gpu:<count>, and a job that asks for --gpus-per-task=1 or --gres=gpu:1 sees its GPU through
# CUDA_VISIBLE_DEVICES (TaskPlugin=task/none: no cgroup hides the others).
#
# Needs root (or sudo): slurmd starts jobs as their users. Install the packages first:
#   apt-get install -y slurmd slurmctld slurm-client munge
# or, on a host without network or apt, unpack the .deb files (fetched elsewhere with `apt-get download
# slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2 libhwloc15 liblua5.1-0
# libnuma1 libjson-c5 libyaml-0-2 libdbus-1-3`) with `for d in *.deb; do dpkg -x "$d" /tmp/slurm-root; done`
# and set COURSE_SLURM_PREFIX=/tmp/slurm-root: the programs, libraries and plugins are taken from there
# (libdbus-1-3: slurmd's cgroup v2 plugin loads it, even with IgnoreSystemd). For `srun --mpi=pmix`,
# leave Debian's libpmix2 out of the prefix where the host has its own Open MPI: the ranks inherit
# LD_LIBRARY_PATH, and a PMIx older than the host's Open MPI was built with stops them ("undefined
# symbol: PMIx_Info_create", seen with Debian's 4.2 under Ubuntu's Open MPI 4.1.6); Slurm's plugin
# then uses the host's PMIx, as it did on the course's GPU host.
set -euo pipefail

dir=${COURSE_SLURM_DIR:-/tmp/course-slurm}
port=${COURSE_SLURM_PORT:-6817}
prefix=${COURSE_SLURM_PREFIX:-}
if [ -n "$prefix" ]; then
  export PATH="$prefix/usr/sbin:$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/slurm-wlm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Debian ships the daemons as slurmctld-wlm, slurmd-wlm and slurmstepd-wlm, and its installer makes
  # the plain names (update-alternatives); dpkg -x runs no installer, so the names are made here.
  for daemon in slurmctld slurmd slurmstepd; do
    if [ ! -e "$prefix/usr/sbin/$daemon" ] && [ -e "$prefix/usr/sbin/$daemon-wlm" ]; then
      ln -s "$daemon-wlm" "$prefix/usr/sbin/$daemon"
    fi
  done
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo --preserve-env=PATH,LD_LIBRARY_PATH "$@"; fi; }
say() { echo "single-node slurm: $*" >&2; }
die() { say "error: $*"; exit 1; }

# The daemons this script starts, each with the PID file it writes and its program's name.
daemons=("slurmd:$dir/run/slurmd.pid" "slurmctld:$dir/run/slurmctld.pid" "munged:$dir/run/munged.pid")

pid_of() {  # pid_of NAME FILE: the PID in FILE if that process is running and is NAME
  local name=$1 file=$2 pid
  [ -s "$file" ] || return 1
  pid=$(<"$file")
  [[ "$pid" =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] && echo "$pid"
}

write_config() {
  local gpus=$1 host cpus memory gres_line="" gres_types=""
  host=$(hostname -s)
  cpus=$(nproc)
  memory=$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.95}' /proc/meminfo)
  if [ "$gpus" = 1 ]; then
    # (COURSE_SLURM_GPU_FILES, a list of device files, stands in for /dev/nvidia<N> in a test.)
    if [ -n "${COURSE_SLURM_GPU_FILES:-}" ]; then
      read -r -a devices <<<"$COURSE_SLURM_GPU_FILES"
    else
      mapfile -t devices < <(find /dev -maxdepth 1 -regex '/dev/nvidia[0-9]+' | sort -V)
    fi
    [ ${#devices[@]} -gt 0 ] || die "--gpus: no /dev/nvidia<N> device files on this host"
    gres_line=" Gres=gpu:${#devices[@]}"
    gres_types="GresTypes=gpu"
    for device in "${devices[@]}"; do echo "NodeName=$host Name=gpu File=$device"; done >"$dir/etc/gres.conf"
    say "GRES: ${#devices[@]} GPU(s): ${devices[*]}"
  else
    rm -f "$dir/etc/gres.conf"
  fi
  # cgroup/v2 (the default where the host mounts it) asks systemd over D-Bus for a scope to put
  # job steps in; a host without systemd (a container, a bare VM) has none, and slurmd would not
  # start: it makes the cgroup folders itself instead. (cgroup/v1 reads no such setting.)
  echo "IgnoreSystemd=yes" >"$dir/etc/cgroup.conf"
  cat >"$dir/etc/slurm.conf" <<EOF
# Written by tests/grader/slurm/single-node.sh: one node, this host.
ClusterName=course
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
${prefix:+PluginDir=$prefix/usr/lib/x86_64-linux-gnu/slurm-wlm}
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$((memory / cpus))
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=10
$gres_types
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory$gres_line State=UNKNOWN
PartitionName=course Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

# A start that went wrong: says why, shows the end of the given logs, and stops whatever did start
# (a second start would otherwise find it running and refuse).  give_up MESSAGE LOG...
give_up() {
  say "$1; the logs:"
  shift
  tail -n 20 "$@" >&2 || true
  stop
  exit 1
}

start() {
  local gpus=0
  [ "${1:-}" = --gpus ] && gpus=1
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || die "$tool is missing: apt-get install -y slurmd slurmctld slurm-client munge"
  done
  # slurmd starts every job step as /usr/sbin/slurmstepd, a path built into it: from a prefix, that
  # file must exist too (a link to the prefix's), or every job fails at its first step.
  if [ -n "$prefix" ] && [ ! -x /usr/sbin/slurmstepd ]; then
    die "slurmd runs job steps as /usr/sbin/slurmstepd, which this host lacks: as root, ln -s $prefix/usr/sbin/slurmstepd-wlm /usr/sbin/slurmstepd"
  fi
  for entry in "${daemons[@]}"; do
    if pid_of "${entry%%:*}" "${entry#*:}" >/dev/null; then die "${entry%%:*} of $dir is running already: stop it first"; fi
  done
  as_root rm -rf "$dir"
  as_root mkdir -p "$dir"/{etc,run,state,spool,log}
  as_root chmod 755 "$dir" "$dir/run"
  write_config "$gpus"
  export SLURM_CONF=$dir/etc/slurm.conf

  # munge: a fresh key, its own socket, PID and seed files.
  as_root dd if=/dev/urandom of="$dir/etc/munge.key" bs=1024 count=1 status=none
  as_root chmod 400 "$dir/etc/munge.key"
  as_root munged --force --key-file="$dir/etc/munge.key" --socket="$dir/run/munge.socket" \
    --pid-file="$dir/run/munged.pid" --seed-file="$dir/state/munged.seed" --log-file="$dir/log/munged.log" ||
    give_up "munged did not start" "$dir/log/munged.log"
  as_root slurmctld -f "$SLURM_CONF" || give_up "slurmctld did not start" "$dir/log/slurmctld.log"
  # With IgnoreSystemd, slurmd puts its job steps in /sys/fs/cgroup/system.slice/<node>_slurmstepd.scope,
  # making only the last folder: where no systemd made system.slice (a container on cgroup v2, as on
  # the course's GPU hosts), it is made here, and removed by `stop` if still empty.
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && [ ! -d /sys/fs/cgroup/system.slice ]; then
    if as_root mkdir /sys/fs/cgroup/system.slice; then
      as_root touch "$dir/run/made-system-slice"
    else
      say "cannot make /sys/fs/cgroup/system.slice: slurmd may not start"
    fi
  fi
  as_root slurmd -f "$SLURM_CONF" || give_up "slurmd did not start" "$dir/log/slurmd.log"

  local waited=0 state=""
  while :; do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
    [ "$state" = idle ] && break
    if [ $waited -ge 60 ]; then
      give_up "the node is not idle after 60 s (state: '${state:-none}')" "$dir"/log/*.log
    fi
    sleep 1
    waited=$((waited + 1))
  done
  say "up in ${waited} s: $(sinfo -h -N -o '%N %T, %c CPUs, %m MB, gres %G, partition %P')"
  if [ "$(sinfo -h -N -o '%G' | head -1)" = "(null)" ]; then
    say "gres (null): the node offers no GPU to Slurm jobs (start --gpus makes this host's GPUs a GRES), so a job"
    say "  that asks for one is refused (\"Invalid generic resource\"): grade with --slurm --gpus-per-task 0"
  fi
  say "export SLURM_CONF=$SLURM_CONF"
}

stop() {
  export SLURM_CONF=$dir/etc/slurm.conf
  # Jobs still in this cluster are cancelled first, so slurmd leaves no job behind.
  if pid_of slurmctld "$dir/run/slurmctld.pid" >/dev/null; then
    local jobs
    jobs=$(squeue -h -o '%A' 2>/dev/null | sort -u || true)
    if [ -n "$jobs" ]; then
      say "cancelling the jobs still queued: $(tr '\n' ' ' <<<"$jobs")"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 20); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 1; done
    fi
  fi
  local entry name file pid stopped=()
  for entry in "${daemons[@]}"; do
    name=${entry%%:*} file=${entry#*:}
    pid=$(pid_of "$name" "$file") || continue
    as_root kill -TERM "$pid" || true
    for _ in $(seq 30); do [ -d "/proc/$pid" ] || break; sleep 1; done
    if [ -d "/proc/$pid" ]; then as_root kill -KILL "$pid" || true; fi
    stopped+=("$name ($pid)")
  done
  if [ -f "$dir/run/made-system-slice" ]; then  # start made it: the scope this node's slurmd left in it, then it
    local scope
    scope="/sys/fs/cgroup/system.slice/$(hostname -s)_slurmstepd.scope"
    if [ -d "$scope" ]; then as_root find "$scope" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    as_root rmdir /sys/fs/cgroup/system.slice 2>/dev/null || true
    if [ -d /sys/fs/cgroup/system.slice ]; then
      say "left /sys/fs/cgroup/system.slice (not empty yet); rmdir it when no job step is left"
    else
      as_root rm -f "$dir/run/made-system-slice"
    fi
  fi
  say "stopped: ${stopped[*]:-nothing was running}"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  env)
    echo "export SLURM_CONF=$dir/etc/slurm.conf"
    [ -z "$prefix" ] || echo "export PATH=\"$prefix/usr/bin:\$PATH\" LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH\""
    ;;
  run)
    shift
    gpus=()
    [ "${1:-}" = --gpus ] && { gpus=(--gpus); shift; }
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || die "run: no command (run [--gpus] -- COMMAND...)"
    start "${gpus[@]}"
    trap stop EXIT
    trap 'exit 130' INT TERM
    export SLURM_CONF=$dir/etc/slurm.conf
    "$@"
    ;;
  *) sed -n '5,12p' "$0" >&2; exit 2 ;;
esac
