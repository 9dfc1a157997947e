#!/usr/bin/env python3
"""Writes StableHLO MLIR text of model blocks with JAX, the form `mnsim import` reads.

Each block is exported twice where it makes sense: with static shapes
(`jax.jit(f).lower(*avals).as_text()`) and with symbolic batch (and sequence)
dimensions (`jax.export.export(jax.jit(f))(*avals).mlir_module()`, shapes from
`jax.export.symbolic_shape("b, ...")`), which carry `get_dimension_size`,
`dynamic_broadcast_in_dim`, `dynamic_reshape` and shape assertions.

Usage: python3 scripts/stablehlo_export.py OUT_DIR
Needs `pip install jax` (CPU is enough); not run by CI. The files of
`scenarios/workloads/stablehlo/` were made this way with JAX 0.10.2.
"""

import os
import sys

import jax
import jax.numpy as jnp
from jax import export


def layernorm(x, g, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def rmsnorm(x, g, eps=1e-6):
    ms = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + eps) * g


def softmax(x):
    m = jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def gpt2_attn_block(x, ln_g, ln_b, w_qkv, b_qkv, w_o, b_o, heads=12):
    bsz, t, d = x.shape
    h = layernorm(x, ln_g, ln_b)
    qkv = h @ w_qkv + b_qkv
    q, k, v = jnp.split(qkv, 3, axis=-1)

    def split_heads(y):
        return y.reshape(bsz, t, heads, d // heads).transpose(0, 2, 1, 3)

    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.array(d // heads, x.dtype))
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    s = jnp.where(mask, s, jnp.array(-1e10, x.dtype))
    p = softmax(s)
    o = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(bsz, t, d)
    return x + (o @ w_o + b_o)


def gpt2_mlp_gelu(x, w1, b1, w2, b2):
    return x + (jax.nn.gelu(x @ w1 + b1, approximate=True) @ w2 + b2)


@jax.jit
def silu(x):
    return x * (1.0 / (1.0 + jnp.exp(-x)))


def llama_gated_mlp(x, w_gate, w_up, w_down):
    return (silu(x @ w_gate) * (x @ w_up)) @ w_down


def spec(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


def static(f, args):
    return jax.jit(f).lower(*args).as_text()


def symbolic(f, dims, args):
    """`dims` names the symbolic dimensions ("b" or "b, t"); `args` give shapes as
    tuples whose strings are those names."""
    syms = export.symbolic_shape(dims)
    by_name = dict(zip([d.strip() for d in dims.split(",")], syms))
    avals = [
        spec(tuple(by_name.get(d, d) if isinstance(d, str) else d for d in shape), dt)
        for shape, dt in args
    ]
    return export.export(jax.jit(f))(*avals).mlir_module()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    f32, bf16 = jnp.float32, jnp.bfloat16
    d, s = 768, 128

    def attn_args(b, t, dt):
        return [((b, t, d), dt), ((d,), dt), ((d,), dt), ((d, 3 * d), dt), ((3 * d,), dt), ((d, d), dt), ((d,), dt)]

    files = {
        "gpt2_attn_block_s128_f32": static(gpt2_attn_block, [spec(*a) for a in attn_args(1, s, f32)]),
        "gpt2_attn_block_s512_f32": static(gpt2_attn_block, [spec(*a) for a in attn_args(1, 512, f32)]),
        "gpt2_attn_block_s128_bf16": static(gpt2_attn_block, [spec(*a) for a in attn_args(1, s, bf16)]),
        "gpt2_attn_block_dynB_s128_f32": symbolic(gpt2_attn_block, "b", attn_args("b", s, f32)),
        "gpt2_attn_block_dynB_dynT_f32": symbolic(gpt2_attn_block, "b, t", attn_args("b", "t", f32)),
        "gpt2_mlp_gelu_s128_f32": static(
            gpt2_mlp_gelu,
            [spec((1, s, d), f32), spec((d, 4 * d), f32), spec((4 * d,), f32), spec((4 * d, d), f32), spec((d,), f32)],
        ),
        "layernorm_1x128x768_f32": static(layernorm, [spec((1, s, d), f32), spec((d,), f32), spec((d,), f32)]),
        "layernorm_dynB_128x768_f32": symbolic(layernorm, "b", [(("b", s, d), f32), ((d,), f32), ((d,), f32)]),
        "rmsnorm_1x128x4096_f32": static(rmsnorm, [spec((1, s, 4096), f32), spec((4096,), f32)]),
        "softmax_1x12x128x128_f32": static(softmax, [spec((1, 12, s, s), f32)]),
        "softmax_dynB_12x128x128_f32": symbolic(softmax, "b", [(("b", 12, s, s), f32)]),
    }
    for dt, tag in [(f32, "f32"), (bf16, "bf16")]:
        w = [spec((4096, 11008), dt), spec((4096, 11008), dt), spec((11008, 4096), dt)]
        files[f"llama_gated_mlp_s128_{tag}"] = static(llama_gated_mlp, [spec((1, s, 4096), dt)] + w)
    files["llama_gated_mlp_dynB_s128_f32"] = symbolic(
        llama_gated_mlp, "b", [(("b", s, 4096), f32), ((4096, 11008), f32), ((4096, 11008), f32), ((11008, 4096), f32)]
    )
    for name, text in files.items():
        path = os.path.join(out, name + ".mlir")
        with open(path, "w") as f:
            f.write(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
