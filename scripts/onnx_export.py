#!/usr/bin/env python3
"""Exports model blocks from PyTorch as ONNX, the form `mnsim import` reads.

Every model is written by `torch.onnx.export`, with the TorchScript exporter
(`dynamo=False`, opset 17, or 20 where a block uses `Gelu`) or the dynamo exporter
(`dynamo=True`, opset 18 or later), and its floating-point weights are then marked as external data whose file is not
written (`externalise`): the `.onnx` file keeps the graph, the shapes, the small
constants and the integer and boolean tensors (shape tensors, masks),
and mnsim gives the weights seeded random values (their values matter only in
functional mode, where the run is checked against the host reference on the same
values). The files stay a few KiB.

The GPT-2 attention and MLP blocks have the shapes (and the operations) of
`scripts/stablehlo_export.py`'s JAX blocks, so the two imports can be compared.

Usage: python3 scripts/onnx_export.py OUT_DIR
Needs `pip install torch onnx onnxscript` (CPU is enough); not run by CI. The files of
`scenarios/workloads/onnx/` were made this way (versions in its README).
"""

import math
import os
import sys

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """GPT-2 causal self-attention: fused QKV projection split in three, heads,
    scores scaled by 1/sqrt(head dim), the causal mask by `where`, softmax, output
    projection."""

    def __init__(self, d, heads, t_max):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(t_max, t_max, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)

        def heads(y):
            return y.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = heads(q), heads(k), heads(v)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        s = torch.where(self.mask[:t, :t], s, torch.tensor(-1e10, dtype=x.dtype))
        o = F.softmax(s, dim=-1) @ v
        return self.proj(o.transpose(1, 2).reshape(b, t, d))


class AttnBlock(nn.Module):
    """JAX's `gpt2_attn_block`: x + attention(layernorm(x))."""

    def __init__(self, d=768, heads=12, t_max=128):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = Attention(d, heads, t_max)

    def forward(self, x):
        return x + self.attn(self.ln(x))


class Mlp(nn.Module):
    """JAX's `gpt2_mlp_gelu`: x + fc2(gelu_tanh(fc1(x))) (no layernorm)."""

    def __init__(self, d=768):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class Gpt2Block(nn.Module):
    """A whole pre-LN GPT-2 block: attention and MLP, each after a layernorm."""

    def __init__(self, d=768, heads=12, t_max=128):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, t_max)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    """A small GPT-2: token and position embeddings, `layers` blocks, the final
    layernorm and the head tied to the token embedding."""

    def __init__(self, vocab=2048, d=256, heads=4, layers=2, t_max=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(t_max, d)
        self.blocks = nn.ModuleList([Gpt2Block(d, heads, t_max) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.wte.weight.t()


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.c1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(c_out)
        self.c2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """A ResNet-style CNN for 32×32 images: a 3×3 stem, max pooling, three stages of
    basic blocks (the later two halving the resolution), global average pooling and a
    linear classifier."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.stages = nn.Sequential(BasicBlock(32, 32, 1), BasicBlock(32, 64, 2), BasicBlock(64, 128, 2))
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        y = self.stages(self.pool(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class BertLayer(nn.Module):
    """A BERT-base encoder layer (post-LN): self-attention with no mask, residual and
    layernorm, the erf GELU feed-forward, residual and layernorm."""

    def __init__(self, d=768, heads=12, ff=3072):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x):
        b, t, d = x.shape

        def heads(y):
            return y.reshape(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        p = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), dim=-1)
        a = (p @ v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class MnistMlp(nn.Module):
    """An MLP classifier: 784 → 512 → 256 → 10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x):
        return self.net(x)


FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


def externalise(path):
    """Moves the floating-point weights of more than 1 KiB to external data, as
    `onnx.save_model(..., save_as_external_data=True)` would, but writes no data file:
    what stays in the `.onnx` file is the graph, the shapes, the small constants and
    the integer and boolean tensors (shape tensors, masks), each external tensor naming
    its `location`, `offset` and `length` in a file that is not shipped."""
    m = onnx.load(path)
    data = os.path.basename(path) + ".data"
    offset = 0
    for t in m.graph.initializer:
        raw = t.raw_data or onnx.numpy_helper.to_array(t).tobytes()
        if t.data_type not in FLOATS or len(raw) <= 1024:
            continue
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            t.ClearField(field)
        t.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", data), ("offset", str(offset)), ("length", str(len(raw)))):
            e = t.external_data.add()
            e.key, e.value = k, v
        offset += (len(raw) + 4095) // 4096 * 4096
    onnx.save_model(m, path)


def export(model, args, path, dynamo, opset, names, dynamic=None):
    model.eval()
    kw = dict(input_names=names, output_names=["out"], opset_version=opset, dynamo=dynamo)
    if dynamic:
        if dynamo:
            kw["dynamic_shapes"] = {names[0]: {ax: torch.export.Dim(n, min=2, max=4096) for ax, n in dynamic.items()}}
        else:
            kw["dynamic_axes"] = {names[0]: dynamic, "out": dynamic}
    with torch.no_grad():
        torch.onnx.export(model, args, path, **kw)
    externalise(path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    x128 = torch.randn(1, 128, 768)
    p = lambda n: os.path.join(out, n + ".onnx")  # noqa: E731
    export(AttnBlock(), (x128,), p("gpt2_attn_block_s128_f32"), False, 17, ["x"])
    export(AttnBlock(), (x128,), p("gpt2_attn_block_s128_f32_dynamo"), True, 18, ["x"])
    export(Mlp(), (x128,), p("gpt2_mlp_gelu_s128_f32"), False, 20, ["x"])
    export(Gpt2Block(), (x128,), p("gpt2_block_s128_f32_dynamo"), True, 20, ["x"])
    export(Gpt2(), (torch.randint(0, 2048, (1, 64)),), p("gpt2_small_s64_f32_dynamo"), True, 20, ["ids"])
    export(ResNet(), (torch.randn(1, 3, 32, 32),), p("resnet_cifar_f32"), False, 17, ["image"])
    export(BertLayer(), (x128,), p("bert_layer_s128_f32_dynamo"), True, 20, ["x"])
    export(MnistMlp(), (torch.randn(32, 784),), p("mlp_784_dynB_f32"), False, 17, ["x"], {0: "batch"})


if __name__ == "__main__":
    main()
