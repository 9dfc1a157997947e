#!/usr/bin/env python3
"""Writes the whole models of `scenarios/workloads/models/` as StableHLO MLIR text.

Three models, written in JAX and exported with `jax.jit(f).lower(*avals).as_text()`
(weights are function arguments: the files hold shapes, not values):

- gpt2_small_prefill_s128_f32: GPT-2 small over 128 tokens: token-embedding lookup (a
  `gather`), 12 pre-LN blocks (fused QKV split by `slice`, causal mask, softmax, tanh
  GELU MLP), final layernorm, LM head tied to the embedding;
- gpt2_small_decode_kv1024_f32: one decode step: a token at a run-time position `pos`,
  each layer's K and V written into a 1024-position cache with
  `lax.dynamic_update_slice`, attention over positions <= pos; returns the logits and
  the updated caches;
- llama_4layer_scan_s256_bf16: a LLaMA-style model in bf16 (d 2048, 16 query heads, 4
  KV heads, SwiGLU 5632, RMSNorm, RoPE), its 4 layers a `lax.scan` over stacked weights
  (a `stablehlo.while`).

Usage: python3 scripts/models_export.py OUT_DIR
Needs `pip install jax==0.10.2` (CPU is enough); not run by CI. The files of
`scenarios/workloads/models/` were made this way, with JAX 0.10.2: this script writes
them again byte for byte.
"""

import os
import sys

import jax
import jax.numpy as jnp

F32, BF16, I32 = jnp.float32, jnp.bfloat16, jnp.int32

# GPT-2 small.
VOCAB, CTX, D, HEADS, LAYERS, FF = 50257, 1024, 768, 12, 12, 3072


def layernorm(x, g, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def split_heads(y):
    b, t, d = y.shape
    return y.reshape(b, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)


def merge_heads(y):
    b, h, t, hd = y.shape
    return y.transpose(0, 2, 1, 3).reshape(b, t, h * hd)


def attend(q, k, v, mask):
    s = q @ jnp.swapaxes(k, -1, -2) / jnp.sqrt(float(D // HEADS))
    s = jnp.where(mask, s, -1e9)
    return jax.nn.softmax(s, axis=-1) @ v


def mlp(x, p):
    return jax.nn.gelu(x @ p["w_mlp1"] + p["b_mlp1"], approximate=True) @ p["w_mlp2"]


def block_params():
    """One GPT-2 block's parameters: keys sort as JAX flattens them."""
    v = lambda n: jax.ShapeDtypeStruct((n,), F32)
    m = lambda a, b: jax.ShapeDtypeStruct((a, b), F32)
    return {
        "b_ln1": v(D),
        "b_ln2": v(D),
        "b_mlp1": v(FF),
        "b_mlp2": v(D),
        "b_o": v(D),
        "b_qkv": v(3 * D),
        "g_ln1": v(D),
        "g_ln2": v(D),
        "w_mlp1": m(D, FF),
        "w_mlp2": m(FF, D),
        "w_o": m(D, D),
        "w_qkv": m(D, 3 * D),
    }


def gpt2_prefill(tokens, wte, wpe, g_f, b_f, blocks):
    t = tokens.shape[1]
    x = wte[tokens] + wpe[:t]
    mask = jnp.arange(t)[:, None] >= jnp.arange(t)[None, :]
    for p in blocks:
        h = layernorm(x, p["g_ln1"], p["b_ln1"])
        q, k, v = jnp.split(h @ p["w_qkv"] + p["b_qkv"], 3, axis=-1)
        o = attend(split_heads(q), split_heads(k), split_heads(v), mask)
        x = x + merge_heads(o) @ p["w_o"] + p["b_o"]
        x = x + mlp(layernorm(x, p["g_ln2"], p["b_ln2"]), p) + p["b_mlp2"]
    return layernorm(x, g_f, b_f) @ wte.T


def gpt2_decode(token, pos, wte, wpe, g_f, b_f, k_cache, v_cache, blocks):
    x = wte[token] + jax.lax.dynamic_slice(wpe, (pos, 0), (1, D))
    mask = (jnp.arange(CTX) <= pos)[None, None, None, :]
    ks, vs = [], []
    for i, p in enumerate(blocks):
        h = layernorm(x, p["g_ln1"], p["b_ln1"])
        q, k, v = jnp.split(h @ p["w_qkv"] + p["b_qkv"], 3, axis=-1)
        q, k, v = split_heads(q), split_heads(k), split_heads(v)
        kc = jax.lax.dynamic_update_slice(k_cache[i], k, (0, 0, pos, 0))
        vc = jax.lax.dynamic_update_slice(v_cache[i], v, (0, 0, pos, 0))
        ks.append(kc)
        vs.append(vc)
        x = x + merge_heads(attend(q, kc, vc, mask)) @ p["w_o"] + p["b_o"]
        x = x + mlp(layernorm(x, p["g_ln2"], p["b_ln2"]), p) + p["b_mlp2"]
    return layernorm(x, g_f, b_f) @ wte.T, jnp.stack(ks), jnp.stack(vs)


def gpt2_avals(tokens_shape):
    """The tokens, the token and position tables, the final layernorm's scale and
    shift."""
    s = jax.ShapeDtypeStruct
    return [
        s(tokens_shape, I32),
        s((VOCAB, D), F32),
        s((CTX, D), F32),
        s((D,), F32),
        s((D,), F32),
    ]


# LLaMA-style.
L_D, L_HEADS, L_KV, L_HD, L_FF, L_LAYERS, L_SEQ = 2048, 16, 4, 128, 5632, 4, 256


@jax.jit
def silu(x):
    return x * (1 / (1 + jnp.exp(-x)))


def rmsnorm(x, g, eps=1e-6):
    xf = x.astype(F32)
    r = jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return x * r.astype(x.dtype) * g


def rope(x, cos, sin):
    x1, x2 = x[..., : L_HD // 2], x[..., L_HD // 2 :]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def llama_layer(x, p, cos, sin, mask):
    b, t, _ = x.shape
    h = rmsnorm(x, p["norm1"])
    q = (h @ p["w_q"]).reshape(b, t, L_HEADS, L_HD)
    k = (h @ p["w_k"]).reshape(b, t, L_KV, L_HD)
    v = (h @ p["w_v"]).reshape(b, t, L_KV, L_HD)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    k = jnp.repeat(k, L_HEADS // L_KV, axis=2)
    v = jnp.repeat(v, L_HEADS // L_KV, axis=2)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(float(L_HD))
    s = jnp.where(mask, s.astype(F32), -1e9)
    a = jax.nn.softmax(s, axis=-1).astype(x.dtype)
    o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, t, L_D)
    x = x + o @ p["w_o"]
    h = rmsnorm(x, p["norm2"])
    return x + (silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]


def llama_scan(x, cos, sin, params):
    t = x.shape[1]
    mask = jnp.arange(t)[:, None] >= jnp.arange(t)[None, :]

    def body(x, p):
        return llama_layer(x, p, cos, sin, mask), None

    x, _ = jax.lax.scan(body, x, params)
    return x


def llama_avals():
    s = jax.ShapeDtypeStruct
    n = L_LAYERS
    params = {
        "norm1": s((n, L_D), BF16),
        "norm2": s((n, L_D), BF16),
        "w_down": s((n, L_FF, L_D), BF16),
        "w_gate": s((n, L_D, L_FF), BF16),
        "w_k": s((n, L_D, L_KV * L_HD), BF16),
        "w_o": s((n, L_D, L_D), BF16),
        "w_q": s((n, L_D, L_HEADS * L_HD), BF16),
        "w_up": s((n, L_D, L_FF), BF16),
        "w_v": s((n, L_D, L_KV * L_HD), BF16),
    }
    return [
        s((1, L_SEQ, L_D), BF16),
        s((L_SEQ, 1, L_HD // 2), BF16),
        s((L_SEQ, 1, L_HD // 2), BF16),
        params,
    ]


def models():
    """(file name, function, avals) of every model."""
    s = jax.ShapeDtypeStruct
    blocks = [block_params() for _ in range(LAYERS)]
    cache = s((LAYERS, 1, HEADS, CTX, D // HEADS), F32)
    token, *tables = gpt2_avals((1, 1))
    return [
        ("gpt2_small_prefill_s128_f32", gpt2_prefill, [*gpt2_avals((1, 128)), blocks]),
        (
            "gpt2_small_decode_kv1024_f32",
            gpt2_decode,
            [token, s((), I32), *tables, cache, cache, blocks],
        ),
        ("llama_4layer_scan_s256_bf16", llama_scan, llama_avals()),
    ]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, f, avals in models():
        text = jax.jit(f).lower(*avals).as_text()
        with open(os.path.join(out, name + ".mlir"), "w") as fh:
            fh.write(text)
        print(f"wrote {name}.mlir ({len(text.splitlines())} lines)")


if __name__ == "__main__":
    main()
