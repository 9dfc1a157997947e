"""mnsim from Python: run, plan, compare and sweep MN-Core simulations.

Every function runs the `mnsim` command of the same name in-process (the binary's own
code, compiled into the extension module `mnsim._mnsim`) and turns its JSON into Python
objects: a `Report` with the numbers of `report.json` and its tables as pandas
DataFrames, or a DataFrame of plans or sweep points. An error raises `MnsimError` with
the message the command line prints. See docs/python.md.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Iterable, Mapping

import pandas as pd

from . import layout
from ._mnsim import MnsimError, __version__
from ._mnsim import main as _main

__all__ = [
    "MnsimError",
    "Report",
    "Reports",
    "cli",
    "compare",
    "from_jax",
    "from_torch",
    "layout",
    "machines",
    "plan",
    "run",
    "sweep",
]


def cli(*args: str) -> str:
    """Runs `mnsim ARGS...` in-process and returns what it prints on stdout."""
    return _main([str(a) for a in args])


def _knobs(flag: str, values: Mapping[str, Any] | None) -> list[str]:
    out: list[str] = []
    for k, v in (values or {}).items():
        if isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        out += [flag, f"{k}={v}"]
    return out


def _common(set: Mapping[str, Any] | None, bind: Mapping[str, Any] | None, schedule: str | None) -> list[str]:
    return _knobs("--set", set) + _knobs("--bind", bind) + (["--schedule", schedule] if schedule else [])


def _frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of JSON objects as a DataFrame of their scalar fields."""
    return pd.DataFrame([{k: v for k, v in r.items() if not isinstance(v, (list, dict))} for r in rows])


class Report:
    """One plan's run: `report.json`'s numbers as attributes (`total_cycles`,
    `bound_cycles`, `bottleneck`, ...), the whole object as `.json`, and its tables as
    DataFrames: `.ops` (one row per op), `.resources` (busy cycles and utilisation of
    each resource), `.energy` (joules per level)."""

    def __init__(self, data: dict):
        self.json = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["json"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.json))

    @property
    def times_bound(self) -> float:
        """Cycles over the bound (`× bound`)."""
        return self.json["total_cycles"] / max(self.json["bound_cycles"], 1)

    @property
    def ops(self) -> pd.DataFrame:
        return _frame(self.json["ops"]).set_index("index")

    @property
    def resources(self) -> pd.DataFrame:
        return _frame(self.json["resources"])

    @property
    def energy(self) -> pd.DataFrame:
        return _frame(self.json["energy"]["levels"])

    def __repr__(self) -> str:
        j = self.json
        return (
            f"<mnsim.Report {j['scenario']} plan={j.get('plan')} {j['total_cycles']:,} cycles "
            f"({self.times_bound:.2f}× bound {j['bound_cycles']:,}), bottleneck {(j.get('bottleneck') or {}).get('resource')}>"
        )


class Reports(list):
    """The reports of several plans, with `.summary`: one row per plan."""

    @property
    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "plan": r.json.get("plan"),
                    "total_cycles": r.total_cycles,
                    "bound_cycles": r.bound_cycles,
                    "times_bound": r.times_bound,
                    "bottleneck": (r.json.get("bottleneck") or {}).get("resource"),
                    "verified": r.json.get("verified"),
                }
                for r in self
            ]
        ).set_index("plan")


def run(
    path: str | os.PathLike,
    plan: str | None = None,
    mode: str | None = "timing",
    set: Mapping[str, Any] | None = None,
    bind: Mapping[str, Any] | None = None,
    schedule: str | None = None,
):
    """`mnsim run PATH --json`: a `Report`, or `Reports` when several plans ran (no
    `plan` given). `mode` is "timing", "functional", or None for the file's own."""
    args = ["run", os.fspath(path), "--json"] + _common(set, bind, schedule)
    if plan is not None:
        args += ["--plan", plan]
    if mode is not None:
        args += ["--mode", mode]
    reps = [Report(r) for r in json.loads(cli(*args))]
    return reps[0] if len(reps) == 1 else Reports(reps)


def plan(
    path: str | os.PathLike,
    plan: str | None = None,
    objective: str | None = None,
    work: int | None = None,
    time_limit: float | None = None,
    top: int | None = None,
    set: Mapping[str, Any] | None = None,
    bind: Mapping[str, Any] | None = None,
    rounds: int | None = None,
) -> dict:
    """`mnsim plan PATH --json`: the best assignment (`best`: cycles and layouts), the
    hand plans' cycles, each round's best (`rounds`), and how much was evaluated."""
    args = ["plan", os.fspath(path), "--json"] + _common(set, bind, None)
    for flag, v in (("--plan", plan), ("--objective", objective), ("--work", work), ("--time-limit", time_limit), ("--top", top), ("--rounds", rounds)):
        if v is not None:
            args += [flag, str(v)]
    return json.loads(cli(*args))


def compare(
    path: str | os.PathLike,
    by: str = "cycles",
    mode: str | None = "timing",
    set: Mapping[str, Any] | None = None,
    bind: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """`mnsim compare PATH --json`: one row per plan, ranked (`by` cycles, energy or
    edp)."""
    args = ["compare", os.fspath(path), "--json", "--by", by] + _common(set, bind, None)
    if mode is not None:
        args += ["--mode", mode]
    return _frame(json.loads(cli(*args))["plans"]).set_index("plan")


def sweep(
    path: str | os.PathLike,
    set: Mapping[str, Iterable[Any]] | None = None,
    bind: Mapping[str, Iterable[Any]] | None = None,
    mode: str | None = "timing",
    metric: str | None = None,
) -> pd.DataFrame:
    """`mnsim sweep PATH --json`: one row per point of the cartesian product of the
    values given (`set={"knob": [v1, v2]}`), with each knob, `total_cycles`, joules,
    watts and `error` for a point that failed."""
    args = ["sweep", os.fspath(path), "--json"] + _common(set, bind, None)
    if mode is not None:
        args += ["--mode", mode]
    if metric is not None:
        args += ["--metric", metric]
    out = json.loads(cli(*args))
    axes = out["axes"]
    rows = []
    for r in out["rows"]:
        row = {"point": r["point"], "plan": r.get("plan")}
        # Points are row-major over the axes (the last axis fastest), as sweep.csv.
        p = r["point"]
        vals = [0.0] * len(axes)
        for i in reversed(range(len(axes))):
            n = len(axes[i]["values"])
            vals[i] = axes[i]["values"][p % n]
            p //= n
        row.update({a["name"]: v for a, v in zip(axes, vals)})
        res = r.get("result") or {}
        row.update({k: v for k, v in res.items() if not isinstance(v, (list, dict))})
        row.update({k: v for k, v in (res.get("energy") or {}).items()})
        row["error"] = r.get("error")
        rows.append(row)
    return pd.DataFrame(rows)


def machines(name: str | None = None, set: Mapping[str, Any] | None = None) -> Any:
    """`mnsim machines [NAME] --json`: the presets (a DataFrame), or one machine's
    description (a dict)."""
    args = ["machines"] + ([name] if name else []) + ["--json"] + _knobs("--set", set)
    out = json.loads(cli(*args))
    return _frame(out).set_index("name") if isinstance(out, list) else out


def _temp(suffix: str) -> str:
    fd, p = tempfile.mkstemp(prefix="mnsim-", suffix=suffix)
    os.close(fd)
    return p


def from_jax(f, *avals, **run_args):
    """Exports a JAX function as StableHLO (`jax.jit(f).lower(*avals).as_text()`) and
    runs it: `run`'s `Report` for the import's planned layouts (plan `auto`). `avals` are
    `jax.ShapeDtypeStruct`s or arrays; `run_args` go to `run`."""
    import jax

    text = jax.jit(f).lower(*avals).as_text()
    path = _temp(".mlir")
    try:
        with open(path, "w") as fh:
            fh.write(text)
        return run(path, **{"plan": "auto", **run_args})
    finally:
        os.remove(path)


def from_torch(module, *example, dynamo: bool = True, opset: int = 20, **run_args):
    """Exports a PyTorch module with `torch.onnx.export` (the dynamo exporter, or the
    TorchScript one with `dynamo=False`) at the shapes of `example` and runs it: `run`'s
    `Report` for the import's planned layouts. Needs torch (and onnxscript for dynamo)."""
    import torch

    path = _temp(".onnx")
    try:
        module.eval()
        with torch.no_grad():
            torch.onnx.export(module, tuple(example), path, dynamo=dynamo, opset_version=opset, external_data=False)
        return run(path, **{"plan": "auto", **run_args})
    finally:
        os.remove(path)
