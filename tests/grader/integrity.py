# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Check what went into a student's object file, before any of it runs (no GPU needed).

After a lesson builds, `Checker.check(lesson, target, program)` finds the student's
translation unit in the build's compile_commands.json and checks, against policy.py:

1. Headers: the compiler's own record of what the translation unit included (`ninja -t deps`,
   read from the depfile the compiler wrote), every path resolved. Only the lesson's folder,
   common/, the CUDA toolkit, NCCL and the system's headers are allowed.
2. References: the object's undefined symbols (readelf -s, demangled with c++filt) may not
   name a refused function (process control, file output) or the test framework.
3. Definitions: the object may not define a global symbol that another input of the test
   program defines (the shared libraries it loads, the static libraries it links), so it can
   replace no function of the CUDA runtime, NCCL, libc, libstdc++, the tests or common/.
4. Raw content: no forbidden bytes (the test framework's mangled namespace) and no system-call
   instruction in its machine code.

Returns a list of problems, one line per kind ("calls exit(), _exit() (process control ...)"),
at most a few names each; empty means the object is accepted.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import policy

_TOOL_TIMEOUT = 300


class Checker:
    """Checks student objects of one build folder; caches what it learns about libraries."""

    def __init__(self, build: Path, source: Path, allow_headers: list[str] = (), allow_symbols: list[str] = (),
                 course: Path | None = None):
        self.build = build.resolve()
        self.source = source.resolve()  # the staged copy that was built
        self.course = course.resolve() if course else None  # the course it was copied from
        self.allow_headers = list(allow_headers)
        self.allow_symbols = set(allow_symbols)
        self._library_symbols: dict[str, set[str]] = {}
        self._toolkit_roots = cuda_roots()
        self._compiler_roots: list[Path] | None = None  # the compilers' own header folders, asked once

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
            problems += self.check_headers(output, (self.source / lesson_folder).resolve())
            problems += self.check_symbols(self.build / output, target, program, output)
            problems += self.check_content(self.build / output)
        return summarize(problems)

    # ------------------------------------------------------------------ headers

    def check_headers(self, output: str, lesson_dir: Path) -> list[tuple[str, str]]:
        done = _run(["ninja", "-C", str(self.build), "-t", "deps", output])
        lines = done.splitlines()
        if not lines or "(VALID)" not in lines[0]:
            return [("cannot check the headers", f"the build recorded no dependencies for {output}")]
        deps = [line.strip() for line in lines[1:] if line.strip()]
        nccl_dirs = {_resolve(self.build, dep).parent for dep in deps if Path(dep).name == "nccl.h"}
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
        return "outside the lesson, common/, the CUDA toolkit, NCCL and the system's headers"

    def _compiler_header_roots(self) -> list[Path]:
        """The folders the build's C++ compilers search for system headers (`-E -v`): a GCC in
        /opt/gcc keeps its own <limits.h> there, not under /usr/lib/gcc."""
        if self._compiler_roots is None:
            compilers = {shlex.split(entry["command"])[0] for entry in self._compile_entries()
                         if entry.get("command") and "nvcc" not in Path(shlex.split(entry["command"])[0]).name}
            compilers |= {name for name in ("c++", "g++") if shutil.which(name)}
            roots: list[Path] = []
            for compiler in sorted(compilers):
                roots += [root for root in compiler_include_dirs(compiler) if root not in roots]
            self._compiler_roots = roots
        return self._compiler_roots

    def _show(self, path: Path) -> str:
        for root, label in ((self.source, ""), (self.build, "<build>/")):
            if _under(path, root):
                return label + str(path.relative_to(root))
        return str(path)

    # ------------------------------------------------------------------ symbols

    def check_symbols(self, obj: Path, target: str, program: Path, output: str) -> list[tuple[str, str]]:
        symbols = read_symbols(obj)
        problems = []
        for symbol in symbols:
            name, shown = symbol["name"], symbol["demangled"]
            if name in self.allow_symbols or shown in self.allow_symbols:
                continue
            part = next((p for p in policy.REFUSED_NAME_PARTS if p in shown), None)
            if symbol["undefined"]:
                if name == "exit" and only_nvcc_device_stubs_call_exit(obj):
                    continue  # the host side of a __device__ function, made by nvcc: exit(1)
                if name in policy.PROCESS_CONTROL:
                    problems.append((f"calls {name}()", "process control is the test program's, not the student's"))
                elif name in policy.FILE_OUTPUT:
                    problems.append((f"calls {name}()", "no files or descriptors in student code"))
                elif part:
                    problems.append((f"uses {shown}", _part_reason(part)))
            elif part:
                problems.append((f"defines {shown}", _part_reason(part)))
        owners = self._other_definitions(target, program, output)
        for symbol in symbols:
            if symbol["undefined"] or not symbol["replaces"]:
                continue
            name = symbol["name"]
            if name in self.allow_symbols or symbol["demangled"] in self.allow_symbols:
                continue
            if name.startswith(policy.COMPILER_SYMBOLS_PREFIXES):
                continue
            owner = owners.get(name)
            if owner:
                problems.append((f"defines {symbol['demangled']} (as {owner} does)",
                                 "a library's function may not be replaced"))
        return problems

    def _other_definitions(self, target: str, program: Path, output: str) -> dict[str, str]:
        """{symbol: library} for every global symbol another input of `program` defines."""
        inputs = self._link_inputs(target, output) + shared_libraries(program)
        owners: dict[str, str] = {}
        for library in inputs:
            for name in self._defined_in(library):
                owners.setdefault(name, Path(library).name)
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

    def _defined_in(self, library: str) -> set[str]:
        if library not in self._library_symbols:
            dynamic = ".so" in Path(library).name
            argv = ["nm", "-D", "--defined-only", library] if dynamic else ["nm", "-g", "--defined-only", library]
            names = set()
            for line in _run(argv).splitlines():
                fields = line.split()
                if len(fields) >= 3 and len(fields[1]) == 1:
                    names.add(fields[2].split("@")[0])
            self._library_symbols[library] = names
        return self._library_symbols[library]

    # ------------------------------------------------------------------ raw content

    def check_content(self, obj: Path) -> list[tuple[str, str]]:
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

    # ------------------------------------------------------------------ the build's records

    def _compile_entries(self) -> list[dict]:
        try:
            return json.loads((self.build / "compile_commands.json").read_text())
        except (OSError, ValueError):
            return []

    def _entry_file(self, entry: dict) -> Path:
        folder = Path(entry.get("directory", self.build))
        return _resolve(folder, entry["file"])


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


def read_symbols(obj: Path) -> list[dict]:
    """The global symbols of an object: name, demangled, undefined, and `replaces` (a definition
    that would take the place of another: strong, or weak outside a COMDAT group)."""
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
        replaces = not undefined and (bind == "GLOBAL" or index not in grouped)
        symbols.append({"name": name, "undefined": undefined, "replaces": replaces})
    names = [symbol["name"] for symbol in symbols]
    demangled = _run(["c++filt"], stdin="\n".join(names) + "\n").splitlines() if names else []
    for symbol, shown in zip(symbols, demangled + names[len(demangled):]):
        symbol["demangled"] = shown
    return symbols


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
_STUB_LOAD = re.compile(r"^\s*[0-9a-f]+:\s+movl\s+\$0x1,(0x[0-9a-f]+\(%rsp\))\s*$")
_STUB_ARG = re.compile(r"^\s*[0-9a-f]+:\s+mov\s+(0x[0-9a-f]+\(%rsp\)),%edi\s*$")
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
        if index < 3 or not _STUB_CALL.match(lines[index - 1]):
            return False
        load, argument = _STUB_LOAD.match(lines[index - 3]), _STUB_ARG.match(lines[index - 2])
        if not (load and argument and load.group(1) == argument.group(1)):
            return False
    return found


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


def _part_reason(part: str) -> str:
    if part in ("__wrap_", "__real_"):
        return "the test program's wrapped functions are not the student's"
    if part == "Catch::":
        return "the test framework is not the student's to use"
    if part == "course::testing::":
        return "the test support is not the student's to use"
    return "no file streams in student code"


def _resolve(folder: Path, path: str) -> Path:
    return Path(os.path.realpath(os.path.join(folder, path)))


def _under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root.resolve())
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
