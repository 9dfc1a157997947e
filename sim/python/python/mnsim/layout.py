"""`mnsim layout ...` from Python."""

from __future__ import annotations

import json
from typing import Iterable

from ._mnsim import main as _main


def explain(layout: str, shape: Iterable[int], machine: str = "mncore2", dtype: str | None = None) -> dict:
    """`mnsim layout explain LAYOUT --shape ... --json`: fan-out, replication,
    footprint and padding of a TensorLayout on a machine."""
    args = ["layout", "explain", layout, "--shape", ",".join(str(s) for s in shape), "--machine", machine, "--json"]
    if dtype is not None:
        args += ["--dtype", dtype]
    return json.loads(_main(args))
