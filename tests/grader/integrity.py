# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Check what went into a student's object file, before any of it runs (no GPU needed).

After a lesson builds, `Checker.check(lesson, target, program)` finds the student's
translation unit in the build's compile_commands.json and checks, against policy.py (whose
lists are allowlists: what they do not name is refused):

1. Headers: the compiler's own record of what the translation unit included (`ninja -t deps`,
   read from the depfile the compiler wrote), every path resolved. Only the lesson's folder,
   common/, the CUDA toolkit, NCCL and the system's headers are allowed.
2. Assembly: the compiler's own assembly of the file (kept by the build's -save-temps, option
   grader_listing): GCC marks every asm statement, in a function or at file scope, with #APP;
   none may come from the student (nvcc's own embedding of the device code is recognised).
3. References: every undefined symbol of the object (demangled with c++filt) must be on the
   allowlist: the CUDA runtime, cuBLAS, NCCL, the course's library, what libstdc++ gives for
   containers, strings, streams, threads, atomics, chrono and exceptions, and a small part of
   libc (memory, strings, math, formatted output to stdout and stderr, threads, time).
4. Definitions: the object may not define a global symbol that another input of the test
   program defines (the shared libraries it loads, the static libraries it links), strong,
   weak or in a COMDAT group, so it can replace no function of the CUDA runtime, NCCL, libc,
   libstdc++, the tests or common/ (a template both emit from the same header excepted).
5. Code before main(): what the object's .init_array (.ctors, .preinit_array) names may call
   only nvcc's kernel registration, <iostream>'s set-up and atexit; a function marked
   __attribute__((constructor)) is refused.
6. Sections and raw content: only the sections a compiler makes (no section attributes), no
   data in code sections, no forbidden bytes (the test framework's mangled namespace) and no
   system-call instruction in the machine code.

Returns a list of problems, one line per kind ("calls exit(), getenv() (... use instead ...)"),
at most a few names each; empty means the object is accepted.
"""

from __future__ import annotations

import bisect
import dataclasses
import fnmatch
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

import policy

_TOOL_TIMEOUT = 300


class Checker:
    """Checks student objects of one build folder; caches what it learns about libraries. The
    grader checks several lessons at once from threads: each library's symbols and the compilers'
    folders are learned once, by the first thread that needs them, while the others wait (nm of
    cuBLAS is seconds, and every lesson links it)."""

    def __init__(self, build: Path, source: Path, allow_headers: list[str] = (), allow_symbols: list[str] = (),
                 course: Path | None = None):
        self.build = build.resolve()
        self.source = source.resolve()  # the staged copy that was built
        self.course = course.resolve() if course else None  # the course it was copied from
        self.allow_headers = list(allow_headers)
        self.allow_symbols = set(allow_symbols)
        self._library_symbols: dict[str, dict[str, bool]] = {}
        self._toolkit_roots = cuda_roots()
        self._compiler_roots: list[Path] | None = None  # the compilers' own header folders, asked once
        self._roots_lock = threading.Lock()  # the compilers are asked once
        self._locks_lock = threading.Lock()  # guards _library_locks
        self._library_locks: dict[str, threading.Lock] = {}  # one per library: its symbols read once

    # ------------------------------------------------------------------ entry point

    def check(self, student_path: str, lesson_folder: str, target: str, program: Path) -> list[str]:
        """Problems of the object(s) compiled from `student_path` (relative to the course root)."""
        missing = [tool for tool in ("ninja", "readelf", "c++filt", "nm", "objdump") if not shutil.which(tool)]
        if missing:
            return [f"cannot check the student's object: {', '.join(missing)} not installed"]
        student = (self.source / student_path).resolve()
        entries = [entry for entry in self._compile_entries() if self._entry_file(entry) == student]
        if not entries:
            return [f"cannot check the student's object: {student_path} is not in compile_commands.json"]
        problems: list[tuple[str, str]] = []
        for entry in entries:
            output = entry["output"]
            obj = self.build / output
            problems += self.check_headers(output, (self.source / lesson_folder).resolve())
            problems += check_assembly(obj)
            problems += self.check_symbols(obj, target, program, output)
            elf = ElfObject(obj)
            problems += check_sections(elf)
            problems += check_before_main(elf)
            problems += self.check_content(obj)
        return summarize(problems)

    # ------------------------------------------------------------------ headers

    def check_headers(self, output: str, lesson_dir: Path) -> list[tuple[str, str]]:
        done = _run(["ninja", "-C", str(self.build), "-t", "deps", output])
        lines = done.splitlines()
        if not lines or "(VALID)" not in lines[0]:
            return [("cannot check the headers", f"the build recorded no dependencies for {output}")]
        deps = [line.strip() for line in lines[1:] if line.strip()]
        # NCCL's and MPI's folders, wherever this machine has them (Open MPI's mpi.h lies in
        # /usr/lib/x86_64-linux-gnu/openmpi/include on Debian and Ubuntu): the folder of the one the build used.
        nccl_dirs = {_resolve(self.build, dep).parent for dep in deps if Path(dep).name in ("nccl.h", "mpi.h", "nvshmem.h", "nvshmem_host.h", "nvshmemx.h")}
        problems = []
        for dep in deps:
            path = _resolve(self.build, dep)
            why = self._header_refused(dep, path, lesson_dir, nccl_dirs)
            if why:
                problems.append((f"includes {self._show(path)}", why))
        return problems

    def _header_refused(self, dep: str, path: Path, lesson_dir: Path, nccl_dirs: set[Path]) -> str:
        text = str(path)
        if any(fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(dep, pattern) for pattern in self.allow_headers):
            return ""
        if any(part.lower() in policy.REFUSED_HEADER_FOLDERS for part in path.parts):
            return "the test framework's headers are not the student's to include"
        if _under(path, self.build):
            return "a file of the build folder"
        if _under(path, lesson_dir) or _under(path, self.source / "common"):
            return ""
        if _under(path, self.source) or (self.course and _under(path, self.course)):
            return "only the lesson's own folder and common/ may be included from the course"
        roots = ([Path(root) for root in policy.SYSTEM_HEADER_ROOTS] + self._toolkit_roots + list(nccl_dirs)
                 + self._compiler_header_roots())
        if any(_under(path, root) for root in roots):
            return ""
        return "outside the lesson, common/, the CUDA toolkit, NCCL, MPI and the system's headers"

    def _compiler_header_roots(self) -> list[Path]:
        """The folders the build's C++ compilers search for system headers (`-E -v`): a GCC in
        /opt/gcc keeps its own <limits.h> there, not under /usr/lib/gcc."""
        with self._roots_lock:
            if self._compiler_roots is None:
                self._compiler_roots = self._ask_compiler_roots()
        return self._compiler_roots

    def _ask_compiler_roots(self) -> list[Path]:
        compilers = {compiler_word(entry["command"]) for entry in self._compile_entries() if entry.get("command")}
        compilers = {word for word in compilers if word and "nvcc" not in Path(word).name}
        compilers |= {name for name in ("c++", "g++") if shutil.which(name)}
        roots: list[Path] = []
        for compiler in sorted(compilers):
            roots += [root for root in compiler_include_dirs(compiler) if root not in roots]
        return roots

    def _show(self, path: Path) -> str:
        for root, label in ((self.source, ""), (self.build, "<build>/")):
            if _under(path, root):
                return label + str(path.relative_to(root))
        return str(path)

    # ------------------------------------------------------------------ symbols

    def check_symbols(self, obj: Path, target: str, program: Path, output: str) -> list[tuple[str, str]]:
        symbols = read_symbols(obj)
        problems = check_references(obj, self.allow_symbols, symbols)
        owners = self._other_definitions(target, program, output)
        for symbol in symbols:
            if symbol["undefined"]:
                continue
            name = symbol["name"]
            if name in self.allow_symbols or symbol["demangled"] in self.allow_symbols:
                continue
            if compilers_own(symbol):
                continue
            owner = owners.get(name)
            if owner is None:
                continue
            library, strong = owner
            same_template = symbol["comdat"] and name.startswith("_Z") and not strong
            if not same_template:
                problems.append((f"defines {short(symbol['demangled'])} (as {library} does)",
                                 "a library's function or object may not be replaced: give yours another name"))
        return problems

    def _other_definitions(self, target: str, program: Path, output: str) -> dict[str, tuple[str, bool]]:
        """{symbol: (library, strong)} for every global symbol another input of `program` defines;
        strong when any of them defines it other than weakly."""
        inputs = self._link_inputs(target, output) + shared_libraries(program)
        owners: dict[str, tuple[str, bool]] = {}
        for library in inputs:
            for name, strong in self._defined_in(library).items():
                known = owners.get(name)
                if known is None or (strong and not known[1]):
                    owners[name] = (Path(library).name, strong)
        return owners

    def _link_inputs(self, target: str, output: str) -> list[str]:
        """The static libraries and objects of the program's link command, except the archive
        or object that holds the student's object, and the shared libraries named on it."""
        commands = _run(["ninja", "-C", str(self.build), "-t", "commands", target]).strip().splitlines()
        if not commands:
            return []
        own_archive = output.split(".p/")[0] if ".p/" in output else None
        words = shlex.split(commands[-1])
        search = [word[2:] for word in words if word.startswith("-L")]
        program = words[words.index("-o") + 1] if "-o" in words[:-1] else None
        inputs = []
        for word in words:
            if word.startswith("-Wl,"):
                continue
            if word.endswith((".a", ".so", ".o")) or ".so." in word:
                if word in (own_archive, own_archive and own_archive + ".a", output, program):
                    continue
                path = _resolve(self.build, word)
                if path.is_file():
                    inputs.append(str(path))
            elif word.startswith("-l") and len(word) > 2:
                for folder in search:
                    for name in (f"lib{word[2:]}.so", f"lib{word[2:]}.a"):
                        if (Path(folder) / name).is_file():
                            inputs.append(str((Path(folder) / name).resolve()))
                            break
                    else:
                        continue
                    break
        return inputs

    def _defined_in(self, library: str) -> dict[str, bool]:
        """{name: strong} of the global symbols `library` defines (weak: nm's W, V, u)."""
        with self._locks_lock:
            lock = self._library_locks.setdefault(library, threading.Lock())
        with lock:
            if library not in self._library_symbols:
                self._library_symbols[library] = _read_definitions(library)
        return self._library_symbols[library]

    # ------------------------------------------------------------------ raw content

    def check_content(self, obj: Path) -> list[tuple[str, str]]:
        return check_content(obj)

    # ------------------------------------------------------------------ the build's records

    def _compile_entries(self) -> list[dict]:
        try:
            return json.loads((self.build / "compile_commands.json").read_text())
        except (OSError, ValueError):
            return []

    def _entry_file(self, entry: dict) -> Path:
        folder = Path(entry.get("directory", self.build))
        return _resolve(folder, entry["file"])


def check_content(obj: Path) -> list[tuple[str, str]]:
    """No forbidden bytes (policy.REFUSED_BYTES), no system-call instruction in the machine code."""
    problems = []
    data = obj.read_bytes()
    for needle in policy.REFUSED_BYTES:
        if needle in data:
            problems.append((f"contains the text {needle.decode()!r}", "the test framework's mangled names"))
    disassembly = _run(["objdump", "-d", "--no-show-raw-insn", str(obj)])
    for instruction in policy.REFUSED_INSTRUCTIONS:
        if re.search(r"\s" + re.escape(instruction) + r"\s*$", disassembly, re.MULTILINE):
            problems.append((f"its machine code holds a '{instruction}' instruction", "a direct system call"))
    return problems


def check_object(obj: Path, allow_symbols=()) -> list[tuple[str, str]]:
    """The checks that need only the object and the listing beside it (no build folder, no test
    program): asm, references, sections, code before main(), raw content. Checker.check adds the
    headers and the definitions; the grader's tests and the corpus's harness call this."""
    elf = ElfObject(obj)
    return (check_assembly(obj) + check_references(obj, allow_symbols) + check_sections(elf)
            + check_before_main(elf) + check_content(obj))


def summarize(problems: list[tuple[str, str]], shown: int = 3) -> list[str]:
    """One line per reason: 'includes A, B, C and 12 more (reason)', in the order first seen."""
    by_reason: dict[str, list[str]] = {}
    for what, why in problems:
        if what not in by_reason.setdefault(why, []):
            by_reason[why].append(what)
    lines = []
    for why, whats in by_reason.items():
        more = f" and {len(whats) - shown} more" if len(whats) > shown else ""
        lines.append(f"{'; '.join(whats[:shown])}{more} ({why})")
    return lines


def compilers_own(symbol: dict) -> bool:
    """A symbol the compiler emits in every object of its kind (policy.COMPILER_SYMBOLS_PREFIXES;
    nvcc -rdc=true's weak markers), which no definition of it elsewhere makes a replacement."""
    name = symbol["name"]
    return name.startswith(policy.COMPILER_SYMBOLS_PREFIXES) or (name in policy.NVCC_RDC_WEAK_SYMBOLS
                                                                 and symbol["weak"])


def read_symbols(obj: Path) -> list[dict]:
    """The global symbols of an object: name, demangled, undefined, `weak`, and `comdat` (a weak
    or unique definition inside a COMDAT group, which is how inline functions and templates are
    emitted)."""
    grouped = set()
    for line in _run(["readelf", "-g", "-W", str(obj)]).splitlines():
        match = re.match(r"\s+\[\s*(\d+)\]\s+\S", line)
        if match:
            grouped.add(match.group(1))
    symbols = []
    for line in _run(["readelf", "-s", "-W", str(obj)]).splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].endswith(":") or fields[4] not in ("GLOBAL", "WEAK", "UNIQUE"):
            continue
        kind, bind, index, name = fields[3], fields[4], fields[6], fields[7].split("@")[0]
        if kind in ("FILE", "SECTION") or not name:
            continue
        undefined = index == "UND"
        comdat = not undefined and bind in ("WEAK", "UNIQUE") and index in grouped
        symbols.append({"name": name, "undefined": undefined, "comdat": comdat, "weak": bind == "WEAK"})
    names = [symbol["name"] for symbol in symbols]
    demangled = _run(["c++filt"], stdin="\n".join(names) + "\n").splitlines() if names else []
    for symbol, shown in zip(symbols, demangled + names[len(demangled):]):
        symbol["demangled"] = shown
    return symbols


# ----------------------------------------------------------------------------- references

def check_references(obj: Path, allow_symbols=(), symbols: list[dict] | None = None) -> list[tuple[str, str]]:
    """What the object uses (its undefined symbols) that student code may not, and the test
    framework's names it defines. Needs nothing but the object (and the tools)."""
    problems = []
    for symbol in read_symbols(obj) if symbols is None else symbols:
        name, shown = symbol["name"], symbol["demangled"]
        if name in allow_symbols or shown in allow_symbols:
            continue
        if symbol["undefined"]:
            if name == "exit" and only_nvcc_device_stubs_call_exit(obj):
                continue  # the host side of a __device__ function, made by nvcc: exit(1)
            if name == "syscall" and only_allowed_system_calls(obj):
                continue  # <atomic>'s wait and notify (std::latch, std::barrier, ...): futex only
            if name in policy.DECLARED_BY_HEADER_ASM and not referred_to(obj, name):
                continue  # GCC 13's <iostream> declares it, and nothing calls it
            if name in policy.MAKE_EXCEPTION_PTR_SYMBOLS and only_make_exception_ptr(obj):
                continue  # std::make_exception_ptr<T> (and <future>): a real type's description
            why = reference_refused(name, shown)
            if why:
                problems.append((f"uses {short(shown)}", why))
        elif any(fnmatch.fnmatchcase(qualified_name(shown), pattern) for pattern in ("course::testing::*",
                                                                                      "Catch::*")):
            problems.append((f"defines {short(shown)}", "the test framework and the test support are not "
                                                        "the student's to define"))
    return problems



_OPERATORS = ("operator<<=", "operator>>=", "operator<=>", "operator<<", "operator>>", "operator<=", "operator>=",
              "operator->*", "operator->", "operator<", "operator>", "operator()")


def qualified_name(demangled: str) -> str:
    """'std::basic_ostream<char>& std::__ostream_insert<char>(std::basic_ostream<char>&, char const*, long)'
    -> 'std::__ostream_insert': the name without template arguments, parameters, ABI tags,
    qualifiers and return type; 'typeinfo for X' keeps its kind ('typeinfo for std::thread::_State')."""
    kind = next((k for k in policy.TYPE_SYMBOL_KINDS if demangled.startswith(k)), "")
    text = demangled[len(kind):]
    for thunk in ("non-virtual thunk to ", "virtual thunk to ", "guard variable for ", "TLS init function for ",
                  "TLS wrapper function for "):
        if text.startswith(thunk):
            text = text[len(thunk):]
    placeholders = {}
    for number, operator in enumerate(_OPERATORS):
        if operator in text:
            key = f"operator@{number}@"
            placeholders[key] = operator
            text = text.replace(operator, key)
    text = re.sub(r"\[abi:\w+\]", "", text)
    for opening, closing in (("<", ">"), ("(", ")")):
        previous = None
        while previous != text:
            previous = text
            text = re.sub(re.escape(opening) + r"[^" + re.escape(opening + closing) + r"]*" + re.escape(closing),
                          "", text)
    text = text.strip()
    previous = None
    while previous != text:
        previous = text
        for suffix in (" const", " volatile", " &&", " &", "&&", "&"):
            if text.endswith(suffix):
                text = text[: -len(suffix)].strip()
    if not kind and " " in text and not text.startswith("operator "):
        text = text.rsplit(" ", 1)[-1]  # a function template's return type comes first
    for key, operator in placeholders.items():
        text = text.replace(key, operator)
    return kind + text


def _matches(name: str, patterns) -> bool:
    return any(name == pattern or fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def reference_refused(name: str, demangled: str) -> str:
    """'' when student code may use the undefined symbol `name`, else why not and what instead."""
    if name in policy.REFUSED_MANGLED:
        return "an exception made by hand is not the student's to raise: " + policy.INSTEAD["__cxa_init_primary_exception"]
    if not name.startswith("_Z"):
        prefix = next((prefix for prefix in policy.REFUSED_C_PREFIXES if name.startswith(prefix)), None)
        if prefix is not None:
            return _not_allowed(prefix)
        if name in policy.ALLOWED_C_NAMES:
            return ""
        if name.startswith(policy.ALLOWED_C_PREFIXES) and name not in policy.REFUSED_DESPITE_PREFIX:
            return ""
        return _not_allowed(name)
    qualified = qualified_name(demangled)
    if (qualified.startswith(policy.CXX_LINKAGE_C_API_PREFIXES) and "::" not in qualified
            and demangled.startswith(qualified + "(")):
        return reference_refused(qualified, qualified)  # a free function of a C API declared without extern "C"
    kind = next((k for k in policy.TYPE_SYMBOL_KINDS if qualified.startswith(k)), "")
    subject = qualified[len(kind):]
    names = (subject, subject + "::") if kind else (subject,)  # a type's symbols go with its members
    if any(_matches(name, policy.REFUSED_CXX_NAMES) for name in names):
        return _not_allowed(subject)
    if kind:
        if subject in policy.FUNDAMENTAL_TYPES or subject.rstrip("*& ").replace(" const", "") in policy.FUNDAMENTAL_TYPES:
            return ""
        if _matches(subject, policy.ALLOWED_TYPE_SYMBOLS):
            return ""
    if any(_matches(name, policy.ALLOWED_CXX_NAMES) for name in names):
        return ""
    return _not_allowed(subject)


def _not_allowed(name: str) -> str:
    instead = next((text for key, text in policy.INSTEAD.items() if name == key or name.startswith(key + "::")), "")
    base = "not on the list of what student code may use (tests/grader/README.md, 'What a student file may contain')"
    return f"{base}: {instead}" if instead else base


def demangle(name: str) -> str:
    return (_run(["c++filt", name]).strip() or name) if name.startswith("_Z") else name


def short(demangled: str, width: int = 120) -> str:
    """A demangled name cut to a readable length."""
    return demangled if len(demangled) <= width else demangled[: width - 3] + "..."


def compiler_include_dirs(compiler: str) -> list[Path]:
    """The folders `compiler` searches for <...> headers, from `compiler -E -v -x c++ -`."""
    try:
        done = subprocess.run([compiler, "-E", "-v", "-x", "c++", "-"], input="", capture_output=True, text=True,
                              timeout=_TOOL_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return []
    lines = done.stderr.splitlines()
    try:
        first = next(i for i, line in enumerate(lines) if line.startswith("#include <...> search starts here"))
    except StopIteration:
        return []
    roots = []
    for line in lines[first + 1:]:
        if not line.startswith(" "):
            break
        roots.append(Path(line.strip().split(" (")[0]).resolve())
    return roots


# nvcc compiles the host side of a __device__ function as a stub that ends the program with
# exit(1) should the host ever call it:   movl $0x1,N(%rsp) ; mov N(%rsp),%edi ; call exit
# (unoptimised:   movl $0x1,-N(%rbp) ; mov -N(%rbp),%eax ; mov %eax,%edi ; call exit).
_STUB_LOAD = re.compile(r"^\s*[0-9a-f]+:\s+movl\s+\$0x1,(-?0x[0-9a-f]+\(%r[sb]p\))\s*$")
_STUB_ARG = re.compile(r"^\s*[0-9a-f]+:\s+mov\s+(-?0x[0-9a-f]+\(%r[sb]p\)),%(edi|eax)\s*$")
_STUB_EAX_TO_EDI = re.compile(r"^\s*[0-9a-f]+:\s+mov\s+%eax,%edi\s*$")
_STUB_CALL = re.compile(r"^\s*[0-9a-f]+:\s+call\s")
_EXIT_RELOCATION = re.compile(r"^\s*[0-9a-f]+: R_X86_64_\w+\s+exit([-+]0x[0-9a-f]+)?\s*$")


def only_nvcc_device_stubs_call_exit(obj: Path) -> bool:
    """True when every reference to exit() in `obj` is a call of exit(1) in nvcc's stub pattern.
    Such a call can only end the program with a failure, which earns nothing."""
    lines = _run(["objdump", "-dr", "--no-show-raw-insn", str(obj)]).splitlines()
    found = False
    for index, line in enumerate(lines):
        if not _EXIT_RELOCATION.match(line):
            continue
        found = True
        if index < 4 or not _STUB_CALL.match(lines[index - 1]):
            return False
        argument = _STUB_ARG.match(lines[index - 2])
        load = _STUB_LOAD.match(lines[index - 3])
        if argument is None and _STUB_EAX_TO_EDI.match(lines[index - 2]):
            argument, load = _STUB_ARG.match(lines[index - 3]), _STUB_LOAD.match(lines[index - 4])
            if argument is not None and argument.group(2) != "eax":
                return False
        elif argument is not None and argument.group(2) != "edi":
            return False
        if not (load and argument and load.group(1) == argument.group(1)):
            return False
    return found


# libc's syscall(): only a number of policy.ALLOWED_SYSTEM_CALLS, loaded into its first argument
# right before the call:   mov $0xca,%edi ; ... ; call syscall   (what <atomic> inlines).
_SYSCALL_NUMBER = re.compile(r"movl?\s+\$0x([0-9a-f]+),%edi$")
_FIRST_ARGUMENT = re.compile(r"%(rdi|edi|di|dil)\b")
_CONTROL = re.compile(r"^(?:\S+\s+)?(?:call|jmp|j[a-z]{1,3}|ret|loop\w*|syscall|int|ud2|hlt|\(bad\))\b")
_SYSCALL_WINDOW = 16  # instructions between the number and the call, at most


def only_allowed_system_calls(obj: Path) -> bool:
    """True when every reference to syscall() in `obj` is a direct call (or jump) shortly after
    the compiler loaded a number of policy.ALLOWED_SYSTEM_CALLS into the first argument, with
    nothing in between that touches that register, branches, or is where a branch can land: a
    direct branch's target, or a place whose address the object holds (a jump table's entry, a
    pointer to code, an address taken with lea), which an indirect jump or call can reach.
    libstdc++ inlines its futex wait and notify that way (std::atomic::wait, std::latch,
    std::barrier, std::counting_semaphore, std::jthread); a switch's jump table or a call through
    a pointer elsewhere in the same function is fine (a correct file was refused for either while
    any indirect jump in the function refused the call). Where the object holds code addresses
    this cannot place (a jump table whose start it cannot find), any indirect jump in the function
    refuses it, as before."""
    elf = ElfObject(obj)
    code = disassembly(obj)
    landings = _indirect_landings(elf, code)
    found = False
    for section, relocations in elf.relocations.items():
        uses = [relocation for relocation in relocations if relocation.target == "syscall"]
        if not uses:
            continue
        instructions = code.get(section, [])
        starts = [address for address, _ in instructions]
        targets = {int(branch.group(1), 16) for _, text in instructions if (branch := _DIRECT_BRANCH.match(text))}
        for relocation in uses:
            found = True
            index = bisect.bisect_right(starts, relocation.offset) - 1
            if relocation.kind not in ("R_X86_64_PLT32", "R_X86_64_PC32") or index < 0 or \
                    not re.match(r"(?:call|jmp)\s", instructions[index][1]):
                return False  # its address taken, or not a direct call
            function = elf.function_at(section, starts[index])
            if function is None:
                return False
            reachable = landings.get(section)
            if reachable is None:  # code addresses this cannot place: no indirect jump in the function
                if any(_INDIRECT_JUMP.search(text) for address, text in instructions
                       if function.value <= address < function.value + max(function.size, 1)):
                    return False
                reachable = set()
            targets_here = targets | reachable
            number = None
            for back in range(index, max(index - _SYSCALL_WINDOW, 0) - 1, -1):
                if back < index:
                    load = _SYSCALL_NUMBER.match(instructions[back][1])
                    if load:
                        number = int(load.group(1), 16)
                        break
                    if _FIRST_ARGUMENT.search(instructions[back][1]) or _CONTROL.match(instructions[back][1]):
                        return False
                if starts[back] in targets_here:
                    return False  # a branch lands between the number and the call, or on the call
            if number not in policy.ALLOWED_SYSTEM_CALLS:
                return False
    return found


_INDIRECT_JUMP = re.compile(r"(?:^|\s)jmp\s+\*")  # a call through a pointer returns after itself
_RIP_TARGET = re.compile(r"\(%rip\).*#\s*([0-9a-f]+)\s*<")
_ABSOLUTE = ("R_X86_64_64", "R_X86_64_32", "R_X86_64_32S")
_RELATIVE = ("R_X86_64_PC32", "R_X86_64_PLT32", "R_X86_64_PC64")


def _indirect_landings(elf: ElfObject, code: dict[str, list[tuple[int, str]]]) -> dict[str, set[int] | None]:
    """{code section: the offsets in it whose address the object holds} (None for a section where
    some cannot be placed): what an indirect jump or call can reach without address arithmetic.
    Three sources: a relocation to the section from any section but the debugging information
    (a pointer to a function or a label; a jump table's entry), and a rip-relative address within
    the section that the assembler resolved itself (lea of a label of the same section, as for
    GCC's `&&label`). GCC's jump tables of position-independent code hold entry - table: the
    entry's relocation to the section carries the target plus the entry's distance from the table,
    whose start is where the code's lea of the table points."""
    def place(relocation: Relocation) -> tuple[str, int] | None:  # (section, offset) it refers to
        if relocation.target in elf.sections:
            return relocation.target, relocation.addend
        symbol = elf.symbol(relocation.target)
        return (symbol.section, symbol.value + relocation.addend) if symbol is not None else None

    landings: dict[str, set[int] | None] = {section: set() for section in code}
    tables: dict[str, list[int]] = {}  # data section -> the starts of the tables the code loads
    for section in code:
        for relocation in elf.relocations.get(section, []):
            where = place(relocation)
            if where is not None and where[0] not in code and relocation.kind in _RELATIVE:
                tables.setdefault(where[0], []).append(where[1] + 4)
    for section, relocations in elf.relocations.items():
        if section.startswith(".debug") or section == ".eh_frame":
            continue  # where the debugger and the unwinder read code addresses: never jumped to
        in_code = section in code
        starts = sorted(tables.get(section, []))
        for relocation in relocations:
            where = place(relocation)
            if where is None or where[0] not in code or landings.get(where[0]) is None:
                continue
            into, value = where
            if relocation.kind in _ABSOLUTE:
                landings[into].add(value)
            elif in_code:
                landings[into].add(value + 4)  # rip-relative: the field ends the instruction
            else:  # a jump table's entry: target - table
                base = bisect.bisect_right(starts, relocation.offset) - 1
                if base < 0:
                    landings[into] = None
                else:
                    landings[into].add(value - (relocation.offset - starts[base]))
    for section, instructions in code.items():
        if landings[section] is None:
            continue
        placed = sorted(relocation.offset for relocation in elf.relocations.get(section, []))
        for index, (address, text) in enumerate(instructions):
            rip = _RIP_TARGET.search(text)
            if rip is None:
                continue
            end = instructions[index + 1][0] if index + 1 < len(instructions) else address + 16
            first = bisect.bisect_left(placed, address)
            if first == len(placed) or placed[first] >= end:  # no relocation: the assembler resolved it
                landings[section].add(int(rip.group(1), 16))
    return landings


def referred_to(obj: Path, name: str) -> bool:
    """True when a relocation of `obj` names the symbol `name` (a call, a load, an address taken)."""
    return any(relocation.target == name for relocations in ElfObject(obj).relocations.values()
               for relocation in relocations)


_TYPEINFO = "typeinfo for "
_DEST_THUNK = "std::__exception_ptr::__dest_thunk<"


def only_make_exception_ptr(obj: Path) -> bool:
    """True when every reference to __cxa_init_primary_exception or to exception_ptr's constructor from
    a raw pointer (policy.MAKE_EXCEPTION_PTR_SYMBOLS) lies in a function that also refers to
    `typeinfo for T` and to `std::__exception_ptr::__dest_thunk<T>` of one T: the shape of
    std::make_exception_ptr<T> in GCC 12's and 13's <exception>, inlined or not. (Which type
    description reaches the call is not traced: the test program's wrapped __cxa_begin_catch is what
    stops a forged control exception, as it stops one thrown with __cxa_throw, which is allowed.)"""
    elf = ElfObject(obj)
    found = False
    for section, relocations in elf.relocations.items():
        for use in relocations:
            if use.target not in policy.MAKE_EXCEPTION_PTR_SYMBOLS:
                continue
            found = True
            function = elf.function_at(section, use.offset)
            if function is None:
                return False
            end = function.value + max(function.size, 1)
            names = [_relocated_name(elf, relocation) for relocation in relocations
                     if function.value <= relocation.offset < end]
            shown = _demangle_all([name for name in names if name])
            types = {text[len(_TYPEINFO):] for text in shown if text.startswith(_TYPEINFO)}
            thunks = {text.split(_DEST_THUNK, 1)[1].rsplit(">(", 1)[0] for text in shown if _DEST_THUNK in text}
            if not types & thunks:
                return False
    return found


def _relocated_name(elf: "ElfObject", relocation: "Relocation") -> str:
    """The symbol a relocation names; for a relocation against a section (a local symbol the
    assembler replaced), the function or object defined where it points."""
    if relocation.target not in elf.sections:
        return relocation.target
    for offset in (relocation.addend, relocation.addend + 4):  # + 4: a PC-relative operand's own size
        for symbol in elf.symbols:
            if symbol.section == relocation.target and symbol.kind in ("FUNC", "OBJECT") and \
                    symbol.value <= offset < symbol.value + max(symbol.size, 1):
                return symbol.name
    return ""


def _demangle_all(names: list[str]) -> list[str]:
    if not names:
        return []
    shown = _run(["c++filt"], stdin="\n".join(names) + "\n").splitlines()
    return shown if len(shown) == len(names) else names


# ----------------------------------------------------------------------------- the source, before the build

def check_source(path: Path) -> list[str]:
    """Problems of the student's source text that refuse it before it is built (policy.REFUSED_SOURCE)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return [f"cannot read the file: {error}"]
    problems = []
    for pattern, what in policy.REFUSED_SOURCE:
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            line = text.count("\n", 0, match.start()) + 1
            problems.append((f"uses {what} at line {line}", "the file may include and read only what the lesson "
                             "needs: headers by name, nothing else from the disk"))
    return summarize(problems)


# ----------------------------------------------------------------------------- assembly

# nvcc embeds the device code in the host object with an asm statement of its own, at file
# scope: exactly these lines, the .quad lines holding the fat binary (in section __nv_relfatbin
# where the code is relocatable, -rdc=true: lesson 10's, which a device link joins to NVSHMEM's).
_FATBIN = re.compile(r'^\s*\.section (?:\.nv_fatbin|__nv_relfatbin), "a"\n\s*\.align 8\nfatbinData:\n(?:\s*\.quad [0-9a-fx, ]+\n)+\s*\.text\n',
                     re.MULTILINE)
_ASM_BLOCK = re.compile(r"^#APP\n(.*?)(?:^#NO_APP\n|\Z)", re.MULTILINE | re.DOTALL)
_ASM_PLACE = re.compile(r'^# (\d+) "([^"]*)" 1$', re.MULTILINE)


def listing_of(obj: Path) -> Path | None:
    """The assembly the compiler wrote beside `obj` (-save-temps=obj: X.cu.o -> X.cu.s)."""
    for candidate in (obj.with_suffix(".s"), obj.parent / (obj.name + ".s")):
        if candidate.is_file():
            return candidate
    return None


def check_assembly(obj: Path) -> list[tuple[str, str]]:
    """Every asm statement of the host code (check_listing), read from the listing the build kept."""
    listing = listing_of(obj)
    if listing is None:
        return [("cannot check for asm statements", "the build kept no assembly of the file (the grader "
                 "configures the course with -Dgrader_listing=true); the file is refused rather than unchecked")]
    cuda = ".cu." in obj.name or obj.name.endswith(".cu.o")
    return check_listing(listing.read_text(errors="replace"), cuda)


def check_listing(text: str, cuda: bool) -> list[tuple[str, str]]:
    """Every asm statement of a listing, which GCC brackets with #APP and #NO_APP.

    A block inside a function starts with the statement's place (# LINE "FILE" 1): always the
    student's. File-scope asm comes first in the assembly, in source order (or, unoptimised, in
    its place among the file's variables and functions), and GCC goes on writing its own output
    (string constants, say) before it closes the block. What a header emits itself
    (policy.HEADER_ASM: GCC 13's <iostream>) is recognised line for line at the start of a block;
    nvcc's embedding of the device code is the last file-scope asm of a .cu file (its stub is
    included at the end). So a block may start with header asm, then (a .cu file) hold nvcc's
    exact embedding and nothing between, and what follows the embedding is the compiler's; a
    block of header asm alone may go on only with what GCC writes itself there
    (_compiler_output_refused); there is exactly one embedding; any other block is the student's."""
    fatbins = 0
    problems = []
    for block in _ASM_BLOCK.finditer(text):
        body = block.group(1)
        embedding = _FATBIN.search(body) if cuda else None
        if embedding is not None:
            fatbins += 1
            body = body[:embedding.start()]  # after it: the compiler's own output
        rest = body
        recognised = True
        while recognised:
            recognised = False
            for line in policy.HEADER_ASM:
                if rest.startswith(line):
                    rest, recognised = rest[len(line):], True
        if rest is not body and embedding is None:
            line = _compiler_output_refused(rest)
            if line is None:
                continue
            problems.append((f"holds an asm statement at file scope after <iostream>'s ({line.strip()[:60]})",
                             "no asm in host code: write C++ (asm inside a __device__ function is fine)"))
            continue
        if not rest.strip():
            continue
        place = _ASM_PLACE.search(rest)
        instructions = [line.strip() for line in rest.splitlines() if line.strip() and not line.startswith("# ")]
        if not instructions or (place and len(instructions) == 1 and instructions[0] in policy.HARMLESS_HOST_ASM):
            continue  # inside a function: a hint alone (CCCL's spin-wait `pause`)
        where = f" at {Path(place.group(2)).name}:{place.group(1)}" if place else " at file scope"
        first = instructions[0]
        problems.append((f"holds an asm statement{where} ({first[:60]})",
                         "no asm in host code: write C++ (asm inside a __device__ function is fine)"))
    if fatbins > 1:
        problems.append(("embeds a second fat binary", "no asm in host code"))
    return problems


# What GCC itself writes after the last file-scope asm statement before it closes the block: its
# constant pool (strings, floating-point constants) in read-only data sections and, when nothing
# follows in the file, the debugging information, .ident and the notes at the end. A line of any
# other shape, or data while the current section holds code, is the student's.
_ASM_DATA_SECTION = re.compile(r'\t\.section\t(?:\.rodata[\w.$]*|\.debug_\w+|\.note\.GNU-stack|\.note\.gnu\.property)'
                               r'(?:,"[aMS]*"(?:,@(?:progbits|note)(?:,\d+)?)?)?$')
_ASM_CODE_SECTION = re.compile(r'\t(?:\.text|\.section\t\.text[\w.$]*(?:,"ax",@progbits)?)$')
_ASM_NEUTRAL = re.compile(r'(?:\.L[\w.$]+:|\d+:|\t\.align \d+|\t\.p2align \d+(?:,,\d+)?|\t\.ident\t"[^"\\]*"'
                          r'|\t\.file \d+ "[^"\\]*"(?: "[^"\\]*")?(?: md5 0x[0-9a-f]+)?|\s*)$')
_ASM_DATA = re.compile(r'\t\.(?:string|ascii)\t"(?:[^"\\]|\\.)*"$'
                       r'|\t\.(?:long|quad|byte|value|short|zero|uleb128|sleb128)\s+[-\w.+*/ ()$]+$')


def _compiler_output_refused(rest: str) -> str | None:
    """None when every line of `rest` is what GCC writes itself before it closes a block of
    file-scope asm; else the first line that is not."""
    data_section = False  # the block opens where GCC was, which may be code
    for line in rest.splitlines():
        if _ASM_DATA_SECTION.match(line):
            data_section = True
        elif _ASM_CODE_SECTION.match(line):
            data_section = False
        elif _ASM_NEUTRAL.match(line):
            continue
        elif not (_ASM_DATA.match(line) and data_section):
            return line
    return None


# ----------------------------------------------------------------------------- sections and code before main

@dataclasses.dataclass
class ElfSymbol:
    name: str
    kind: str  # FUNC, OBJECT, NOTYPE, SECTION, ...
    bind: str
    section: str  # the section's name, 'UND' or 'ABS'
    value: int
    size: int


@dataclasses.dataclass
class Relocation:
    offset: int
    kind: str  # R_X86_64_PLT32 (a call or jump), R_X86_64_PC32, ...
    target: str  # a symbol's name, or a section's name for a section symbol
    addend: int


class ElfObject:
    """The sections, symbols and relocations of an object file, read with readelf."""

    def __init__(self, obj: Path):
        self.path = obj
        self.sections: dict[str, str] = {}  # name -> flags
        self._names: dict[int, str] = {}
        applies_to: dict[int, int] = {}  # a relocation section's file offset -> the section it patches
        for line in _run(["readelf", "-S", "-W", str(obj)]).splitlines():
            match = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+[0-9a-f]+"
                             r"\s+(?:([A-Za-z]+)\s+)?(\d+)\s+(\d+)\s+\d+\s*$", line)
            if match and match.group(1) != "0":
                self._names[int(match.group(1))] = match.group(2)
                self.sections[match.group(2)] = match.group(5) or ""
                if match.group(3) in ("RELA", "REL"):
                    applies_to[int(match.group(4), 16)] = int(match.group(7))
        self.symbols: list[ElfSymbol] = []
        for line in _run(["readelf", "-s", "-W", str(obj)]).splitlines():
            fields = line.split()
            if len(fields) < 7 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
                continue
            index = fields[6]
            section = self._names.get(int(index), "") if index.isdigit() else index
            name = fields[7].split("@")[0] if len(fields) > 7 else (section if fields[3] == "SECTION" else "")
            try:
                size = int(fields[2], 0) if fields[2].startswith("0x") else int(fields[2])
            except ValueError:
                size = 0
            self.symbols.append(ElfSymbol(name, fields[3], fields[4], section, int(fields[1], 16), size))
        self.relocations: dict[str, list[Relocation]] = {}
        current = None
        for line in _run(["readelf", "-r", "-W", str(obj)]).splitlines():
            # readelf cuts a long section name short in this heading: the section comes from the
            # relocation section's own header (found by its offset), which names it in full.
            head = re.match(r"Relocation section '\.rela?(\S*)' at offset 0x([0-9a-f]+)", line)
            if head:
                patched = self._names.get(applies_to.get(int(head.group(2), 16), -1), head.group(1))
                current = self.relocations.setdefault(patched, [])
                continue
            match = re.match(r"\s*([0-9a-f]+)\s+[0-9a-f]+\s+(R_\w+)\s+[0-9a-f]+\s+(.+?)\s*([+-])\s*([0-9a-f]+)\s*$", line)
            if match and current is not None:
                addend = int(match.group(5), 16) * (1 if match.group(4) == "+" else -1)
                current.append(Relocation(int(match.group(1), 16), match.group(2), match.group(3).split("@")[0],
                                          addend))

    def function_at(self, section: str, offset: int) -> ElfSymbol | None:
        for symbol in self.symbols:
            if symbol.kind == "FUNC" and symbol.section == section and symbol.value <= offset < symbol.value + max(
                    symbol.size, 1):
                return symbol
        return None

    def symbol(self, name: str) -> ElfSymbol | None:
        return self._by_name.get(name)

    @functools.cached_property
    def _by_name(self) -> dict[str, ElfSymbol]:
        """The first symbol of each name that is not a section's."""
        named: dict[str, ElfSymbol] = {}
        for symbol in self.symbols:
            if symbol.kind != "SECTION":
                named.setdefault(symbol.name, symbol)
        return named


def _section_allowed(name: str) -> bool:
    return any(name == allowed or name.startswith(allowed + ".") for allowed in policy.ALLOWED_SECTIONS)


def check_sections(elf: ElfObject) -> list[tuple[str, str]]:
    """Only the sections a compiler makes, and no data in a section that holds code."""
    problems = []
    for name in elf.sections:
        if not _section_allowed(name):
            problems.append((f"has a section {name!r}", "no section attributes: the compiler places code and data"))
    for symbol in elf.symbols:
        if symbol.kind in ("OBJECT", "TLS") and "X" in elf.sections.get(symbol.section, ""):
            problems.append((f"puts data ({symbol.name}) into the code section {symbol.section}",
                             "no section attributes: the compiler places code and data"))
    return problems


_INIT_SECTIONS = (".init_array", ".ctors", ".preinit_array")
_NVCC_REGISTRATION = "_ZL24__sti____cudaRegisterAllv"
_NVCC_CALLBACKS = ("_ZL31__nv_cudaEntityRegisterCallbackPPv", "_ZL26__cudaUnregisterBinaryUtilv")


def check_before_main(elf: ElfObject) -> list[tuple[str, str]]:
    """What the object runs before main(): every function its .init_array (.ctors,
    .preinit_array) names, and every function those call (by a relocation, or directly within
    a section, which the assembler resolves without one), may call only what
    policy.ALLOWED_BEFORE_MAIN lists, make no indirect call and read or write no data but the
    object's own."""
    problems: list[tuple[str, str]] = []
    cuda = ".cu." in elf.path.name or elf.path.name.endswith(".cu.o")
    todo: list[ElfSymbol] = []
    for section, relocations in elf.relocations.items():
        if not section.startswith(_INIT_SECTIONS):
            continue
        for relocation in relocations:
            function = _target_function(elf, relocation)
            if function is None:
                problems.append((f"runs {relocation.target} before main()", "no code before main()"))
                continue
            nvcc = function.name == _NVCC_REGISTRATION and cuda
            if not (nvcc or function.name.startswith("_GLOBAL__sub_I_")) or function.bind != "LOCAL":
                problems.append((f"runs {demangle(function.name)} before main() (a function marked constructor)",
                                 "no code before main(): do the work inside the function the test calls"))
                continue
            todo.append(function)
    code = disassembly(elf.path)
    seen: set[tuple[str, int]] = set()
    while todo:
        function = todo.pop()
        if (function.section, function.value) in seen:
            continue
        seen.add((function.section, function.value))
        end = function.value + max(function.size, 1)
        relocations = [relocation for relocation in elf.relocations.get(function.section, [])
                       if function.value <= relocation.offset < end]
        for relocation in relocations:
            why = _before_main_refused(elf, relocation, todo)
            if why:
                problems.append((f"runs code before main() that uses {demangle(why)}",
                                 "a global object whose constructor does more than set its own members must "
                                 "become a function-local static (made when first used)"))
        instructions = [(address, text) for address, text in code.get(function.section, [])
                        if function.value <= address < end]
        relocated = _relocated_instructions(instructions, relocations)
        for address, text in instructions:
            branch = _DIRECT_BRANCH.match(text)
            if branch is None or address in relocated:
                continue
            target = int(branch.group(1), 16)
            if function.value <= target < end:
                continue  # a branch inside the function
            callee = elf.function_at(function.section, target)
            if callee is None:
                problems.append((f"runs code before main() that branches out of {demangle(function.name)}",
                                 "no code before main()"))
            else:
                todo.append(callee)  # the object's own code, called without a relocation
        if function.name == _NVCC_REGISTRATION and cuda:
            # nvcc's registration (unoptimised) calls its entity callback through a pointer: that
            # callback is nvcc's too, and checked like the rest (the kernels it registers are
            # only named there, never called).
            todo += [symbol for symbol in elf.symbols if symbol.kind == "FUNC" and symbol.bind == "LOCAL"
                     and symbol.name.startswith(_NVCC_CALLBACKS)]
            continue
        if any(_INDIRECT_BRANCH.search(text) for _, text in instructions):
            problems.append((f"runs code before main() that calls through a pointer ({demangle(function.name)})",
                             "a global whose construction calls through a pointer (a std::function copied, a "
                             "virtual call) cannot be checked before main(): make it a function-local static, "
                             "made when first used (const auto& table() { static const std::map<...> t{...}; "
                             "return t; })"))
    return problems


_DIRECT_BRANCH = re.compile(r"(?:bnd\s+|notrack\s+)?(?:call|jmp|j[a-z]{1,3}|loop\w*)\s+([0-9a-f]+) <")
_INDIRECT_BRANCH = re.compile(r"(?:^|\s)(?:call|jmp)\s+\*")


def _relocated_instructions(instructions: list[tuple[int, str]], relocations: list[Relocation]) -> set[int]:
    """The addresses of the instructions that a relocation patches (its offset lies inside them)."""
    starts = [address for address, _ in instructions]
    found = set()
    for relocation in relocations:
        index = bisect.bisect_right(starts, relocation.offset) - 1
        if index >= 0:
            found.add(starts[index])
    return found


def disassembly(obj: Path) -> dict[str, list[tuple[int, str]]]:
    """{section: [(address, instruction)]} of every code section of an object (objdump -d)."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current = None
    for line in _run(["objdump", "-d", "--no-show-raw-insn", "-w", str(obj)]).splitlines():
        head = re.match(r"Disassembly of section (\S+):", line)
        if head:
            current = sections.setdefault(head.group(1), [])
            continue
        match = re.match(r"\s*([0-9a-f]+):\s+(\S.*?)\s*$", line)
        if match and current is not None:
            current.append((int(match.group(1), 16), match.group(2)))
    return sections


def _target_function(elf: ElfObject, relocation: Relocation) -> ElfSymbol | None:
    if relocation.target in elf.sections:
        return elf.function_at(relocation.target, relocation.addend)
    symbol = elf.symbol(relocation.target)
    if symbol is None or symbol.kind != "FUNC":
        return None
    return symbol


def _before_main_refused(elf: ElfObject, relocation: Relocation, todo: list) -> str:
    """'' when a relocation in code that runs before main() is fine, else the name it uses."""
    target = relocation.target
    if target in policy.ALLOWED_BEFORE_MAIN:
        return ""
    cuda = ".cu." in elf.path.name or elf.path.name.endswith(".cu.o")
    if cuda and target.startswith(policy.ALLOWED_BEFORE_MAIN_PREFIXES) and target not in elf.sections:
        defined = elf.symbol(target)
        if defined is None or defined.section in ("UND", ""):
            return ""  # nvcc's registration of the file's relocatable device code, defined by nvcc -dlink
    call = relocation.kind in ("R_X86_64_PLT32", "R_X86_64_PLT64")
    if target in elf.sections:  # the object's own section: its data, or its own code
        if "X" in elf.sections[target] and call:
            callee = elf.function_at(target, relocation.addend + 4)
            if callee is not None:
                todo.append(callee)
        return ""
    symbol = elf.symbol(target)
    if symbol is not None and symbol.section not in ("UND", ""):
        if symbol.kind == "FUNC" and call:
            todo.append(symbol)  # the object's own function, called: check what it does too
        return ""
    if not call and re.search(r"D[012]Ev$", target):
        return ""  # a destructor's address, registered with __cxa_atexit to run at exit
    return target


def shared_libraries(program: Path) -> list[str]:
    """The shared libraries `program` loads (ldd), resolved."""
    found = []
    for line in _run(["ldd", str(program)]).splitlines():
        match = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if match and Path(match.group(1)).is_file():
            found.append(str(Path(match.group(1)).resolve()))
    return found


def cuda_roots() -> list[Path]:
    """The CUDA toolkit's folders on this machine (nvcc's, $CUDA_HOME, /usr/local/cuda*)."""
    roots = set()
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.add(Path(nvcc).resolve().parents[1])
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(name):
            roots.add(Path(os.environ[name]).resolve())
    for folder in Path("/usr/local").glob("cuda*"):
        roots.add(folder.resolve())
    return sorted(root for root in roots if (root / "include").is_dir())


_WRAPPERS = ("ccache", "sccache", "distcc", "icecc")


def compiler_word(command: str) -> str:
    """The compiler of a compile command, past a wrapper such as ccache."""
    for word in shlex.split(command):
        if Path(word).name not in _WRAPPERS and not word.startswith("-") and "=" not in word:
            return word
    return ""


def _resolve(folder: Path, path: str) -> Path:
    return Path(os.path.realpath(os.path.join(folder, path)))


def _read_definitions(library: str) -> dict[str, bool]:
    dynamic = ".so" in Path(library).name
    argv = ["nm", "-D", "--defined-only", library] if dynamic else ["nm", "-g", "--defined-only", library]
    names: dict[str, bool] = {}
    for line in _run(argv).splitlines():
        fields = line.split()
        if len(fields) >= 3 and len(fields[1]) == 1:
            name = fields[2].split("@")[0]
            names[name] = names.get(name, False) or fields[1] not in "WVuwv"
    return names


@functools.lru_cache(maxsize=None)
def _resolved(root: Path) -> Path:
    """`root` resolved: the same few folders are asked about for every header of every lesson."""
    return root.resolve()


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(_resolved(root))
        return True
    except ValueError:
        return False


def _run(argv: list[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TOOL_TIMEOUT, input=stdin,
                              errors="replace")
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout
