"""Every ```python block of docs/python.md runs, in order, in one namespace, from the
repository's root; a block that imports jax or torch is skipped (and says so) where
that package is missing."""

import importlib.util
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "python.md").read_text(), re.S)


def test_every_block_of_docs_python_md_runs(capsys):
    assert len(BLOCKS) >= 6
    ns, skipped = {}, []
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for i, code in enumerate(BLOCKS):
            need = [m for m in ("jax", "torch") if re.search(rf"^import {m}\b", code, re.M)]
            missing = [m for m in need if importlib.util.find_spec(m) is None]
            if missing:
                skipped.append((i, missing))
                continue
            exec(compile(code, f"docs/python.md block {i}", "exec"), ns)
    finally:
        os.chdir(cwd)
    with capsys.disabled():
        for i, m in skipped:
            print(f"docs/python.md block {i} skipped: {', '.join(m)} not installed")
    assert len(skipped) <= 2
