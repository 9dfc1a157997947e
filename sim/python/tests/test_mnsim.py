"""The Python package gives the command line's results: the same reports, plans,
comparisons, sweeps, machines and layouts as `mnsim ... --json`, errors as `MnsimError`
with the command's message, and little time over the Rust call. `MNSIM_BIN` names the
`mnsim` binary to compare with (the test build's, from sim/tests/python.rs)."""

import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

import mnsim

ROOT = Path(__file__).resolve().parents[3]
BIN = os.environ.get("MNSIM_BIN", "mnsim")
MLP = ROOT / "scenarios" / "mlp_block.ron"


def cli(*args):
    out = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    return out


def cli_json(*args):
    out = cli(*args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_run_gives_the_report_of_the_cli():
    want = cli_json("run", MLP, "--json", "--mode", "timing")
    got = mnsim.run(MLP)
    assert isinstance(got, mnsim.Reports) and len(got) == len(want)
    for r, w in zip(got, want):
        assert r.json == w
    w = next(x for x in want if x["plan"] == "split_k")
    one = mnsim.run(MLP, plan="split_k")
    assert one.json == w and one.total_cycles == w["total_cycles"]
    assert list(one.ops["cycles"]) == [o["cycles"] for o in w["ops"]]
    assert list(one.resources["busy_cycles"]) == [r["busy_cycles"] for r in w["resources"]]
    assert one.energy["static_j"].sum() > 0
    assert set(got.summary.index) == {"split_k", "gather"}


def test_functional_mode_and_knobs_reach_the_run():
    r = mnsim.run(MLP, plan="split_k", mode="functional")
    assert r.verified is True
    w = cli_json("run", MLP, "--plan", "split_k", "--json", "--set", "links.L1B.distribute.parent=32")
    assert mnsim.run(MLP, plan="split_k", mode=None, set={"links.L1B.distribute.parent": 32}).json == w[0]


def test_onnx_models_run_with_bindings():
    path = ROOT / "scenarios" / "workloads" / "onnx" / "mlp_784_dynB_f32.onnx"
    r = mnsim.run(path, plan="auto", bind={"batch": 8})
    assert r.json == cli_json("run", path, "--plan", "auto", "--bind", "batch=8", "--json", "--mode", "timing")[0]
    assert r.ops["op"].str.contains("MatMul").any()


def test_errors_carry_the_cli_message():
    with pytest.raises(mnsim.MnsimError) as e:
        mnsim.run(ROOT / "scenarios" / "workloads" / "onnx" / "mlp_784_dynB_f32.onnx")
    out = cli("run", ROOT / "scenarios" / "workloads" / "onnx" / "mlp_784_dynB_f32.onnx")
    assert out.returncode != 0
    assert "the dynamic dimension `batch`" in str(e.value)
    assert "--bind batch=8" in str(e.value) and "--bind batch=8" in out.stderr
    with pytest.raises(mnsim.MnsimError, match="unexpected argument"):
        mnsim.cli("run", MLP, "--no-such-flag")


def test_plan_compare_sweep_machines_layout_match_the_cli():
    p = ROOT / "scenarios" / "plan_layernorm.ron"
    got, want = mnsim.plan(p), cli_json("plan", p, "--json")
    assert got["best"] == want["best"] and got["hand_plans"] == want["hand_plans"]
    once = mnsim.plan(p, rounds=1)
    assert once["rounds"] == [{"total_cycles": once["best"]["total_cycles"], "seconds": once["rounds"][0]["seconds"]}]
    assert once["rounds"][0]["total_cycles"] == got["rounds"][0]["total_cycles"]
    c = mnsim.compare(MLP)
    want = cli_json("compare", MLP, "--json", "--mode", "timing")
    assert list(c.index) == [x["plan"] for x in want["plans"]]
    assert list(c["total_cycles"]) == [x["total_cycles"] for x in want["plans"]]
    t = ROOT / "scenarios" / "transfer_blog_1024x512.ron"
    s = mnsim.sweep(t, set={"links.L1B.distribute.parent": [32, 128]})
    want = cli_json("sweep", t, "--mode", "timing", "--set", "links.L1B.distribute.parent=32,128", "--json")
    assert isinstance(s, pd.DataFrame) and len(s) == len(want["rows"])
    assert list(s["total_cycles"]) == [r["result"]["total_cycles"] for r in want["rows"]]
    m = mnsim.machines()
    assert "mncore2" in m.index and m.loc["mncore2", "pes"] == 4096
    assert mnsim.machines("toy4") == cli_json("machines", "toy4", "--json")
    lay = "((16_L2B, 8_L1B, 8:8), (16_MAB, 8:1, 4_PE))"
    e = mnsim.layout.explain(lay, (1024, 512), machine="mncore1")
    assert e == cli_json("layout", "explain", lay, "--shape", "1024,512", "--machine", "mncore1", "--json")


def test_the_overhead_over_the_rust_call_is_under_10_ms():
    args = ["run", str(MLP), "--plan", "split_k", "--json", "--mode", "timing"]
    rust, py = [], []
    for _ in range(20):
        t = time.perf_counter()
        mnsim._mnsim.main(args)
        rust.append(time.perf_counter() - t)
        t = time.perf_counter()
        mnsim.run(MLP, plan="split_k")
        py.append(time.perf_counter() - t)
    over = min(py) - min(rust)
    print(f"Rust call {min(rust) * 1e3:.2f} ms, mnsim.run {min(py) * 1e3:.2f} ms, overhead {over * 1e3:.2f} ms")
    assert over < 0.010


def test_from_jax_runs_a_jax_function():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    f = lambda x, w: jax.nn.relu(x @ w)  # noqa: E731
    r = mnsim.from_jax(f, jax.ShapeDtypeStruct((128, 256), jnp.float32), jax.ShapeDtypeStruct((256, 128), jnp.float32))
    assert r.total_cycles >= r.bound_cycles > 0
    assert {"GeneralMatMul", "MatMul"} & set(r.ops["op"])


def test_from_torch_runs_a_pytorch_module():
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    m = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU())
    r = mnsim.from_torch(m, torch.randn(16, 64))
    assert r.total_cycles >= r.bound_cycles > 0
    assert (r.ops["op"] == "Unary").any()
