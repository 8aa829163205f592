# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""What a student's translation unit may include and call: the grader's lists, in one place.

A student's code runs inside the test program, so it could do what the test program does.
Before any of it runs, integrity.py checks the student's object file against these lists;
a lesson whose file breaks one scores 0, and the report names the header or the symbol.
An instructor relaxes a list for one run with `--allow-header GLOB` or `--allow-symbol NAME`
(grade.py). Every entry says why it is here; keep the lists short.

Headers: only the lesson's own folder, common/, the CUDA toolkit (with CCCL and cuBLAS),
NCCL's include folder and the system's C and C++ headers. Never solutions/, tests/, Catch2,
another lesson's folder or anything under a build folder. Every path is resolved (symbolic
links followed) before it is judged.

Symbols the student's object may not reference (undefined symbols, read with readelf, names
demangled with c++filt):
"""

from __future__ import annotations

# System folders whose headers any translation unit may include (besides the CUDA toolkit and
# NCCL folders, which integrity.py finds on this machine).
SYSTEM_HEADER_ROOTS = ("/usr/include", "/usr/lib/gcc", "/usr/local/include", "/usr/lib/llvm")

# A header with one of these folder names in its path is refused wherever it lies: the test
# framework is the grader's, not the student's.
REFUSED_HEADER_FOLDERS = ("catch2",)

# C functions the student's code may not call. Why each group:
PROCESS_CONTROL = {
    # Ending the process on its own terms: a case would end without a result, or with the exit
    # status the student chose. (abort() is allowed: it is a crash, and a crash scores 0.)
    "exit", "_exit", "_Exit", "quick_exit",
    # New processes, sessions and signals: something that outlives the case or kills the grader's.
    "fork", "vfork", "clone", "clone3", "daemon", "setsid", "setpgid", "setpgrp", "kill", "killpg", "tgkill",
    "execl", "execlp", "execle", "execv", "execvp", "execvpe", "execve", "execveat", "fexecve",
    "posix_spawn", "posix_spawnp", "system", "popen", "ptrace", "prctl",
    # Anything at all, by number or by name, around every other list.
    "syscall", "dlopen", "dlmopen", "dlsym", "dlvsym",
    # Leaving a test case sideways: jumps past Catch2, signal handlers that replace Catch2's,
    # and exceptions made by hand (a forged Catch2 exception; result_channel.cpp checks too).
    "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "signal", "sigaction", "sigset", "bsd_signal",
    "_Unwind_RaiseException", "_Unwind_ForcedUnwind", "_Unwind_Resume_or_Rethrow", "__cxa_init_primary_exception",
}
FILE_OUTPUT = {
    # Files and descriptors: a report or a result written by the student's code, or the result
    # channel's pipe found and written to. (printf, std::cout and std::cerr stay allowed.)
    "fopen", "fopen64", "freopen", "freopen64", "fdopen", "tmpfile", "tmpfile64",
    "open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2", "__openat64_2", "creat", "creat64",
    "mkstemp", "mkstemp64", "mkostemp", "mkostemps", "mkstemps", "memfd_create", "shm_open", "mkfifo", "mknod",
    "write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2", "send", "sendto", "sendmsg", "sendfile",
    "sendfile64", "splice", "tee", "vmsplice", "copy_file_range", "process_vm_writev", "socket", "connect",
    "dup", "dup2", "dup3", "fcntl", "fcntl64", "ioctl",
    "rename", "renameat", "renameat2", "unlink", "unlinkat", "remove", "truncate", "truncate64", "ftruncate",
    "ftruncate64", "symlink", "symlinkat", "link", "linkat", "chmod", "fchmod",
}
REFUSED_FUNCTIONS = PROCESS_CONTROL | FILE_OUTPUT

# Demangled names containing one of these may be neither referenced nor defined:
REFUSED_NAME_PARTS = (
    "Catch::",  # the test framework (its control exceptions, its registries, its results)
    "course::testing::",  # the test support: skips, the watchdog, the result channel
    "basic_filebuf", "basic_ofstream", "basic_ifstream", "basic_fstream",  # C++ file streams
    "stdio_filebuf", "stdio_sync_filebuf",  # C++ streams on a descriptor or a FILE*
    "__wrap_", "__real_",  # the linker's wrapped functions (the test programs wrap __cxa_throw)
)

# Raw bytes that may not appear anywhere in the object: the mangled name of the test
# framework's namespace, needed to fake one of its exception types by name.
REFUSED_BYTES = (b"N5Catch",)

# Machine instructions that enter the kernel directly, around every list of functions
# (objdump -d of the host code).
REFUSED_INSTRUCTIONS = ("syscall", "sysenter", "int    $0x80")

# Defined symbols: the student's object may not define a global symbol (a strong one, or a weak
# one outside a COMDAT group, which is how inline functions and templates are emitted) that
# another input of the test program also defines: the shared libraries it loads (CUDA runtime,
# cuBLAS, NCCL, libc, libstdc++, libm, libgcc_s: their dynamic symbol tables), the static
# libraries it links (course-common, the tests, Catch2, a static CUDA runtime). Otherwise
# every call in the program to that function would reach the student's version. The
# student's own functions and kernels, in any namespace, are not in those tables.
# These names are emitted by the compiler for every object and are never a replacement:
COMPILER_SYMBOLS_PREFIXES = ("DW.ref.", "__gxx_personality", "_GLOBAL_")
