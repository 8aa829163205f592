# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
"""Text from a graded program made safe to show: on a terminal, in a CSV, in report.txt,
results.json, junit.xml and the logs.

A failure message, a program's stderr, a compiler's quote of a student's line and a student's
folder name are hostile input. Written raw, an escape sequence (ESC [ ...) moves the cursor of
the instructor's terminal and draws over what the grader printed (a fake "5/5 points" line over
the real one), a carriage return overwrites a line, a right-to-left override reorders it, and a
lone surrogate (a JSON "\\ud800" in a result record) cannot even be written as UTF-8. And a
spreadsheet reads a CSV cell that starts with =, +, -, @, a tab or a carriage return as a
formula.

- `printable(text)`: every such character written as its escape (`\\x1b`, `\\r`, `\\u202e`,
  `\\udc80`); line feeds and tabs stay (a log keeps its lines), unless `keep=""`. Applying it
  twice gives what applying it once gives.
- `csv_cell(value)`: a cell of the class CSV: a text printable, and one that a spreadsheet would
  read as a formula starts with an apostrophe (`'=HYPERLINK(...)`), which spreadsheets show as
  text; numbers stay numbers. Also idempotent, so the Slurm merge, which reads the tasks' CSVs
  and writes them again, writes the same bytes as a local batch.
"""

from __future__ import annotations

import re

# C0 controls but line feed and tab, DEL, C1 controls, the characters that reorder or break a line
# on display (bidirectional marks, embeddings, overrides and isolates, the Unicode line and
# paragraph separators) and lone surrogates.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_OR_KEPT = {keep: re.compile(f"[{_UNSAFE}{''.join(c for c in chr(10) + chr(9) if c not in keep)}]")
                   for keep in ("\n\t", "\n", "\t", "")}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def escape(character: str) -> str:
    """One character as Python writes it in a string literal: \\x1b, \\r, \\u202e."""
    code = ord(character)
    named = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}
    if character in named:
        return named[character]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, keep: str = "\n\t") -> str:
    """`text` with every control, reordering or unencodable character escaped; the characters
    of `keep` (line feed and tab, or either, or none) stay as they are."""
    pattern = _UNSAFE_OR_KEPT.get(keep)
    if pattern is None:
        raise ValueError(f"keep must be one of {sorted(_UNSAFE_OR_KEPT)}")
    return pattern.sub(lambda match: escape(match.group(0)), text)


def csv_cell(value):
    """A CSV cell: numbers as they are; a text printable, with an apostrophe before a formula."""
    if not isinstance(value, str):
        return value
    text = printable(value, keep="\n")
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def from_csv_cell(text: str) -> str:
    """A text cell of the class CSV as it was before csv_cell guarded a formula (the student's
    folder name, read back to match it: '-dash is the folder -dash)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) else text


def printable_tree(value):
    """Every text in a JSON-like value (dicts, lists, strings; keys too) made printable."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_tree(key): printable_tree(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_tree(item) for item in value]
    return value
