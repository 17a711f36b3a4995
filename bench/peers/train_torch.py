#!/usr/bin/python3
"""train_torch.py - the PyTorch side of the training benchmark (issue 32):
the three models of bench/train.c, one training step = forward, loss,
loss.backward(), opt.step() with torch.optim.SGD(lr=0.01, momentum=0.9),
batch 64, one thread (torch.set_num_threads(1)).

    /usr/bin/python3 bench/peers/train_torch.py --weights DIR [--models mlp,cnn,encoder]
        [--steps N] [--warmup N] [--enc-seq T] [--json FILE]
    /usr/bin/python3 bench/peers/train_torch.py --epoch DIR [--data DIR] [--json FILE]
    /usr/bin/python3 bench/peers/train_torch.py --ops N

Use Debian's /usr/bin/python3 (python3-torch 1.13), not a pyenv python3.

--weights DIR: the initial weights and the first batch that `train --export
DIR` wrote (DIR/<model>/<name>.npy): the first step's loss ("loss0") is
then the same computation as ours, from the same weights and batch.  The
timed steps run on random batches of the same shapes (random data: the
time does not depend on it), rotating over 4, after --warmup untimed steps;
opt.zero_grad(set_to_none=True) before each step, as our eager step drops
its gradients.  Output: one JSON object per model, {"model", "torch_ms":
{"median", "min", "max", "runs"}, "loss0", "torch_version", "threads": 1,
"mkldnn": torch.backends.mkldnn.is_available(), "openblas_coretype": $OPENBLAS_CORETYPE
or "auto"}.  Debian's torch runs its matrix products on OpenBLAS, which
picks its kernels from the CPU model: on a CPU it does not know it falls
back to SSE3 ("Prescott"; OPENBLAS_VERBOSE=2 prints the choice), and
OPENBLAS_CORETYPE=SkylakeX gives it its AVX-512 kernels
(bench/train_compare.sh runs both).

--epoch DIR: one epoch of Fashion-MNIST for the MLP from DIR/init_*.npy in
the order of DIR/perm.npy (written by `train --epoch DIR`), 937 batches of
64 (the last 32 images dropped), pixels scaled to [0, 1]; then the test
accuracy.  Output: {"epoch": "mlp", "torch_test_acc", "loss_first",
"loss_last", "steps", "seconds"}.

--ops N: the CNN step's heavy nodes alone, as bench/train.c --ops N times
ours: the median of N runs of each (stderr).
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
ED, EHEADS, EFFN = 256, 4, 1024


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    """As bench/train.c's: dropout 0.25 after the second pooling (other random
    numbers than ours: the losses differ from the first step on)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc1 = nn.Linear(3136, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h = F.max_pool2d(F.relu(self.bn2(self.conv2(h))), 2)
        h = F.dropout(torch.flatten(h, 1), 0.25, self.training)
        return self.fc2(F.relu(self.fc1(h)))


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(ED, 3 * ED)
        self.out = nn.Linear(ED, ED)


class FFN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(ED, EFFN)
        self.fc2 = nn.Linear(EFFN, ED)


class Encoder(nn.Module):
    """Pre-LN block, as bench/train.c's: parameter names match ours."""

    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(ED)
        self.attn = Attn()
        self.ln2 = nn.LayerNorm(ED)
        self.ffn = FFN()

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.attn.qkv(self.ln1(x)).split(d, dim=-1)

        def heads(z):
            return z.reshape(b, t, EHEADS, d // EHEADS).transpose(1, 2)

        s = heads(q) @ heads(k).transpose(-1, -2) * (1.0 / math.sqrt(d // EHEADS))
        o = (s.softmax(-1) @ heads(v)).transpose(1, 2).reshape(b, t, d)
        h = x + self.attn.out(o)
        return h + self.ffn.fc2(F.gelu(self.ffn.fc1(self.ln2(h))))


def make(name, enc_seq):
    if name == "mlp":
        return MLP(), (BATCH, 784), nn.CrossEntropyLoss()
    if name == "cnn":
        return CNN(), (BATCH, 1, 28, 28), nn.CrossEntropyLoss()
    return Encoder(), (BATCH, enc_seq, ED), nn.MSELoss()


def load_weights(model, d, prefix=""):
    """Our names are PyTorch's; each .npy replaces the parameter's data."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            a = np.load(os.path.join(d, prefix + name + ".npy"))
            if tuple(a.shape) != tuple(p.shape):
                sys.exit("train_torch: %s: shape %s, the model's %s"
                         % (name, a.shape, tuple(p.shape)))
            p.copy_(torch.from_numpy(a))


def random_batch(name, shape, i):
    g = torch.Generator().manual_seed(1000 + i)
    if name == "encoder":
        return torch.rand(shape, generator=g) * 2 - 1, torch.rand(shape, generator=g) * 2 - 1
    return torch.rand(shape, generator=g), torch.randint(0, 10, (BATCH,), generator=g)


def bench(name, args):
    model, shape, lossf = make(name, args.enc_seq)
    model.train()
    d = os.path.join(args.weights, name)
    load_weights(model, d)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    x0 = torch.from_numpy(np.load(os.path.join(d, "x.npy")))
    y0 = torch.from_numpy(np.load(os.path.join(d, "y.npy")))
    loss0 = step(x0, y0)
    batches = [random_batch(name, shape, i) for i in range(4)]
    t = []
    for i in range(args.warmup + args.steps):
        x, y = batches[i % 4]
        t0 = time.perf_counter()
        step(x, y)
        if i >= args.warmup:
            t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    n = len(t)
    med = t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])
    rec = {"model": name, "torch_ms": {"median": med, "min": t[0], "max": t[-1], "runs": n},
           "loss0": loss0, "torch_version": torch.__version__, "threads": torch.get_num_threads(),
           "mkldnn": torch.backends.mkldnn.is_available(),
           "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE") or "auto"}
    print("train_torch: %-8s torch %9.3f ms  (loss0 %.6f)" % (name, med, loss0), file=sys.stderr)
    return rec


def read_idx_gz(path, dims):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:3] != b"\0\0\x08" or raw[3] != dims:
        sys.exit("train_torch: %s: at byte 0: not an IDX file of u8 with %d dims" % (path, dims))
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if data.size != int(np.prod(shape)):
        sys.exit("train_torch: %s: %d bytes of data for shape %s" % (path, data.size, shape))
    return data.reshape(shape)


def load_set(data, prefix):
    x = read_idx_gz(os.path.join(data, prefix + "-images-idx3-ubyte.gz"), 3)
    y = read_idx_gz(os.path.join(data, prefix + "-labels-idx1-ubyte.gz"), 1)
    return (torch.from_numpy(x.reshape(-1, 784).astype(np.float32) / np.float32(255.0)),
            torch.from_numpy(y.astype(np.int64)))


def epoch(args):
    xtr, ytr = load_set(args.data, "train")
    xte, yte = load_set(args.data, "t10k")
    perm = torch.from_numpy(np.load(os.path.join(args.epoch, "perm.npy")))
    model = MLP()
    load_weights(model, args.epoch, "init_")
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    steps = xtr.shape[0] // BATCH
    t0 = time.perf_counter()
    first = last = None
    for j in range(steps):
        idx = perm[j * BATCH:(j + 1) * BATCH]
        opt.zero_grad(set_to_none=True)
        loss = lossf(model(xtr[idx]), ytr[idx])
        loss.backward()
        opt.step()
        last = loss.item()
        if first is None:
            first = last
    secs = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    print("train_torch: epoch: %d steps in %.1f s, test accuracy %.4f" % (steps, secs, acc),
          file=sys.stderr)
    return {"epoch": "mlp", "torch_test_acc": acc, "loss_first": first, "loss_last": last,
            "steps": steps, "seconds": secs}


def ops(n):
    """The nodes of bench/train.c --ops, as PyTorch runs them (its autograd
    computes a conv's weight and input gradients with one
    convolution_backward call each, here asked for one gradient at a time;
    max-pool's backward from the indices its forward saved)."""
    def med(f):
        for _ in range(2):
            f()
        t = []
        for _ in range(n):
            t0 = time.perf_counter()
            f()
            t.append((time.perf_counter() - t0) * 1e3)
        t.sort()
        return t[n // 2]

    def conv_bwd(x, w, dy, mask):
        return lambda: torch.ops.aten.convolution_backward(
            dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)

    def pool(shape):
        x = torch.rand(shape, requires_grad=True)
        g = torch.rand(shape[0], shape[1], shape[2] // 2, shape[3] // 2)

        def f():
            F.max_pool2d(x, 2).backward(g)
        return f
    x1, w1, dy1 = torch.rand(64, 1, 28, 28), torch.rand(32, 1, 3, 3), torch.rand(64, 32, 28, 28)
    x2, w2, dy2 = torch.rand(64, 32, 14, 14), torch.rand(64, 32, 3, 3), torch.rand(64, 64, 14, 14)
    p1 = torch.rand(64, 32, 28, 28)
    cases = [("conv1 forward", lambda: F.conv2d(x1, w1, padding=1)),
             ("conv2 forward", lambda: F.conv2d(x2, w2, padding=1)),
             ("conv2 input grad", conv_bwd(x2, w2, dy2, [True, False, False])),
             ("conv2 weight grad", conv_bwd(x2, w2, dy2, [False, True, False])),
             ("conv1 weight grad", conv_bwd(x1, w1, dy1, [False, True, False])),
             ("pool1 forward", lambda: F.max_pool2d(p1, 2)),
             ("pool1 forward + backward", pool((64, 32, 28, 28))),
             ("pool2 forward + backward", pool((64, 64, 14, 14)))]
    print("train_torch: the CNN step's heavy nodes alone (median of %d)" % n, file=sys.stderr)
    for name, f in cases:
        print("  %-48s %8.3f ms" % (name, med(f)), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights")
    ap.add_argument("--models", default="mlp,cnn,encoder")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--enc-seq", type=int, default=16)
    ap.add_argument("--json")
    ap.add_argument("--epoch")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--ops", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.ops:
        ops(args.ops)
        return
    out = open(args.json, "a") if args.json else sys.stdout
    if args.epoch:
        recs = [epoch(args)]
    else:
        if not args.weights:
            ap.error("--weights DIR (written by `train --export DIR`) or --epoch DIR")
        recs = [bench(m, args) for m in args.models.split(",")]
    for r in recs:
        out.write(json.dumps(r) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
