#!/usr/bin/env python3
"""make.py - the PyTorch gradient fixtures of tests/test_grad_pytorch.c.

Three small models, each with seeded inputs, parameters and targets, one
training step's loss, the gradient of every parameter and of the input as
PyTorch's autograd gives them, and (the CNN) batch norm's running statistics
after the step: an independent reference for eager autograd (eager/autograd.c
and the rules of graph/grad_rules_*.c).  The files are committed; `make test`
never needs PyTorch.  To regenerate (Debian's python3-torch 1.13):

    /usr/bin/python3 tests/data/pytorch_grad/make.py tests/data/pytorch_grad

Models (no dropout: its generator differs from PyTorch's):
  mlp     Linear(20,16)-ReLU-Linear(16,16)-ReLU-Linear(16,10), batch 8,
          F.cross_entropy (mean); mlp_ls: the same with label_smoothing=0.1
  cnn     conv 1->4 3x3 pad 1, BatchNorm2d (training mode), ReLU, max-pool 2,
          conv 4->8 3x3, BatchNorm2d (training), ReLU, max-pool 2, flatten,
          (the convs without bias: see conv_weight)
          Linear(32,16), ReLU, Linear(16,10); input [4,1,12,12];
          F.cross_entropy (mean); running statistics updated with momentum
          0.1, the running variance from the unbiased batch variance
  encoder pre-LayerNorm transformer block, batch 2, seq 5, d 8, 2 heads,
          ff 16: h = x + MHA(LN1(x)), y = h + fc2(GELU(fc1(LN2(h)))) with
          GELU in its erf form and attention written as linear, split,
          reshape, transpose, matmul, scale, softmax, matmul; F.mse_loss
          (mean) against a random target

The inputs and parameters are float32 (what the C test feeds its f32 ops);
the reference is computed from exactly those values in float64 and stored
rounded to float32 (tracegraph's .npy reader takes f32: the rounding, 6e-8
relative, is far below the test's 1e-5).  The kinks are kept away from
float32's reach: the seed is the first from the model's base for which
every ReLU input is at least 1e-5 (relative to its tensor's largest) from 0
and every max-pool window whose maximum is positive has its largest value
at least that far above the second (ties among ReLU's zeros carry no
gradient); the seed used is printed.

Files, for model M: M_x.npy (input), M_target.npy (i64 class indices, or
f32 for the encoder), M_<param>.npy, M_loss.npy ([] f32), M_x_grad.npy,
M_<param>_grad.npy; the CNN also cnn_<bn>_running_mean_in.npy /
_running_var_in.npy (before the step, random so the update is tested) and
cnn_<bn>_running_mean.npy / _running_var.npy (after it).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

MARGIN = 1e-5


def f32(shape, lo, hi):
    return (torch.rand(*shape, dtype=torch.float32) * (hi - lo) + lo)


def linear_params(prefix, n_in, n_out):
    """PyTorch's nn.Linear init: U(-1/sqrt(in), 1/sqrt(in)) for both."""
    b = 1 / math.sqrt(n_in)
    return {prefix + "_weight": f32((n_out, n_in), -b, b), prefix + "_bias": f32((n_out,), -b, b)}


def conv_weight(prefix, c_in, c_out, k):
    """nn.Conv2d's init; no bias: the convs feed batch norm, which removes
    a per-channel shift, so a bias's gradient there is zero in exact
    arithmetic and only round-off in float (as PyTorch's own models, the
    conv sits before batch norm with bias=False)."""
    b = 1 / math.sqrt(c_in * k * k)
    return {prefix + "_weight": f32((c_out, c_in, k, k), -b, b)}


def norm_params(prefix, n):
    """Affine scale and shift away from 1 and 0, so their gradients matter."""
    return {prefix + "_weight": f32((n,), 0.5, 1.5), prefix + "_bias": f32((n,), -0.3, 0.3)}


class Kinks:
    """Smallest distance of a ReLU input from 0 and of a max-pool window's
    maximum from its runner-up, each relative to its tensor's largest."""

    def __init__(self):
        self.margin = math.inf

    def relu(self, z):
        a = z.detach().abs()
        self.margin = min(self.margin, (a.min() / a.max()).item())
        return F.relu(z)

    def max_pool2(self, z):
        d = z.detach()
        n, c, h, w = d.shape
        win = d[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2)
        win = win.permute(0, 1, 2, 4, 3, 5).reshape(-1, 4)
        top2 = win.topk(2, dim=1).values
        pos = top2[:, 0] > 0
        if pos.any():
            gap = (top2[pos, 0] - top2[pos, 1]).min() / d.abs().max()
            self.margin = min(self.margin, gap.item())
        return F.max_pool2d(z, 2)


# ---- models: (inputs, params, extra state) -> loss; written functionally ----

def mlp_make():
    p = {}
    p.update(linear_params("fc1", 20, 16))
    p.update(linear_params("fc2", 16, 16))
    p.update(linear_params("fc3", 16, 10))
    x = f32((8, 20), -1, 1)
    t = torch.randint(0, 10, (8,), dtype=torch.int64)
    return x, t, p, {}


def mlp_loss(x, t, p, state, k, smoothing):
    h = k.relu(F.linear(x, p["fc1_weight"], p["fc1_bias"]))
    h = k.relu(F.linear(h, p["fc2_weight"], p["fc2_bias"]))
    return F.cross_entropy(F.linear(h, p["fc3_weight"], p["fc3_bias"]), t,
                           label_smoothing=smoothing)


def cnn_make():
    p = {}
    p.update(conv_weight("conv1", 1, 4, 3))
    p.update(norm_params("bn1", 4))
    p.update(conv_weight("conv2", 4, 8, 3))
    p.update(norm_params("bn2", 8))
    p.update(linear_params("fc1", 32, 16))
    p.update(linear_params("fc2", 16, 10))
    x = f32((4, 1, 12, 12), -1, 1)
    t = torch.randint(0, 10, (4,), dtype=torch.int64)
    state = {}
    for bn, c in (("bn1", 4), ("bn2", 8)):
        state[bn + "_running_mean"] = f32((c,), -0.2, 0.2)
        state[bn + "_running_var"] = f32((c,), 0.5, 1.5)
    return x, t, p, state


def cnn_loss(x, t, p, state, k, smoothing):
    def bn(z, name):
        # F.batch_norm updates running_mean / running_var in place (momentum
        # 0.1, unbiased variance), normalizes with the biased batch variance
        return F.batch_norm(z, state[name + "_running_mean"], state[name + "_running_var"],
                            p[name + "_weight"], p[name + "_bias"], training=True,
                            momentum=0.1, eps=1e-5)

    h = F.conv2d(x, p["conv1_weight"], padding=1)
    h = k.max_pool2(k.relu(bn(h, "bn1")))
    h = F.conv2d(h, p["conv2_weight"])
    h = k.max_pool2(k.relu(bn(h, "bn2")))
    h = k.relu(F.linear(torch.flatten(h, 1), p["fc1_weight"], p["fc1_bias"]))
    return F.cross_entropy(F.linear(h, p["fc2_weight"], p["fc2_bias"]), t,
                           label_smoothing=smoothing)


ENC_B, ENC_T, ENC_D, ENC_H, ENC_FF = 2, 5, 8, 2, 16


def encoder_make():
    d, ff = ENC_D, ENC_FF
    p = {}
    p.update(norm_params("ln1", d))
    p.update(linear_params("qkv", d, 3 * d))
    p.update(linear_params("proj", d, d))
    p.update(norm_params("ln2", d))
    p.update(linear_params("fc1", d, ff))
    p.update(linear_params("fc2", ff, d))
    x = f32((ENC_B, ENC_T, d), -1, 1)
    t = f32((ENC_B, ENC_T, d), -1, 1)
    return x, t, p, {}


def encoder_loss(x, t, p, state, k, smoothing):
    b, n, d, heads = ENC_B, ENC_T, ENC_D, ENC_H
    dh = d // heads
    a = F.layer_norm(x, (d,), p["ln1_weight"], p["ln1_bias"], 1e-5)
    q, kk, v = F.linear(a, p["qkv_weight"], p["qkv_bias"]).split(d, dim=-1)
    q, kk, v = (z.reshape(b, n, heads, dh).transpose(1, 2) for z in (q, kk, v))
    s = torch.matmul(q, kk.transpose(-2, -1)) * (1 / math.sqrt(dh))
    o = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(b, n, d)
    h = x + F.linear(o, p["proj_weight"], p["proj_bias"])
    m = F.layer_norm(h, (d,), p["ln2_weight"], p["ln2_bias"], 1e-5)
    m = F.linear(F.gelu(F.linear(m, p["fc1_weight"], p["fc1_bias"])),
                 p["fc2_weight"], p["fc2_bias"])
    return F.mse_loss(h + m, t)


# name, make, loss, label smoothing, base seed
MODELS = [
    ("mlp", mlp_make, mlp_loss, 0.0, 100),
    ("mlp_ls", mlp_make, mlp_loss, 0.1, 100),
    ("cnn", cnn_make, cnn_loss, 0.0, 200),
    ("encoder", encoder_make, encoder_loss, 0.0, 300),
]


def save(out, name, a):
    a = a.detach().numpy()
    np.save(os.path.join(out, name + ".npy"), a.astype(np.int64 if a.dtype == np.int64
                                                        else np.float32))


def one(out, name, make, loss_fn, smoothing, seed0):
    for seed in range(seed0, seed0 + 1000):
        torch.manual_seed(seed)
        x, t, p, state = make()
        # float64 copies of exactly the float32 values
        x64 = x.double().requires_grad_(True)
        t64 = t if t.dtype == torch.int64 else t.double()
        p64 = {k: v.double().requires_grad_(True) for k, v in p.items()}
        s64 = {k: v.double() for k, v in state.items()}
        kinks = Kinks()
        loss = loss_fn(x64, t64, p64, s64, kinks, smoothing)
        if kinks.margin >= MARGIN:
            break
    else:
        raise SystemExit(name + ": no seed keeps the kinks apart")
    loss.backward()
    save(out, name + "_x", x)
    save(out, name + "_target", t)
    for k, v in p.items():
        save(out, name + "_" + k, v)
    for k, v in state.items():
        save(out, name + "_" + k + "_in", v)
    save(out, name + "_loss", loss)
    save(out, name + "_x_grad", x64.grad)
    for k, v in p64.items():
        save(out, name + "_" + k + "_grad", v.grad)
    for k, v in s64.items():
        save(out, name + "_" + k, v)
    print("%s: seed %d, loss %.6f, kink margin %.2e" % (name, seed, loss.item(), kinks.margin))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    for m in MODELS:
        one(out, *m)


if __name__ == "__main__":
    main()
