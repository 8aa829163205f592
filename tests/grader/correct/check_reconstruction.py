#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The multi-GPU course authors
#
# ONE-OFF (removed with the whole files it checks): every whole corpus file, as git's HEAD holds
# it, must come back byte for byte from its stored mutation (NN-name/NAME.right) and solutions/,
# made the way grade_corpus.py makes it at grading time; and every mutation must have its file.
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402

wholes = sorted(p for p in HERE.glob("[0-9][0-9]-*/*") if p.suffix in (".cpp", ".cu"))
stored = [m for variants in corpus.mutations().values() for m in variants]
bad = []
for whole in wholes:
    mutation = whole.with_suffix(corpus.SUFFIX)
    at_head = subprocess.run(["git", "-C", str(corpus.COURSE), "show", f"HEAD:{whole.relative_to(corpus.COURSE)}"],
                             capture_output=True, check=True).stdout
    if not mutation.exists():
        bad.append(f"{whole.relative_to(HERE)}: no stored mutation")
        continue
    name, text = corpus.whole_file(mutation)
    if name != whole.name or text.encode() != at_head or whole.read_bytes() != at_head:
        bad.append(f"{whole.relative_to(HERE)}: differs ({name})")
extra = sorted(set(m.stem for m in stored) - set(w.stem for w in wholes))
print(f"{len(wholes)} whole files, {len(stored)} stored mutations; {len(wholes) - len(bad)} identical byte for byte")
print("\n".join(bad + [f"a mutation without a whole file: {name}" for name in extra]) or "no difference")
sys.exit(1 if bad or extra or len(wholes) != len(stored) else 0)
