#!/usr/bin/env python3
"""make.py - the PyTorch-exported ONNX models of test_onnx_pytorch.c.

Small versions of the benchmark workloads (and a conv net), exported by
torch.onnx.export at opset 17 the way users export their models, with a
seeded input and PyTorch's own output saved beside each as .npy: an
independent reference for importing what a real exporter writes (Gemm,
LayerNormalization, Erf-form GELU, Split + Reshape + Transpose attention,
BatchNormalization, pools, Flatten, ConvTranspose).  The files are
committed; `make test` never needs PyTorch.  To regenerate (Debian's python3-torch 1.13):

    /usr/bin/python3 tests/data/pytorch/make.py tests/data/pytorch [MODEL...]

Each model M gives M.onnx, M_x.npy, M_y.npy; the dynamic-batch ones also
M_x2.npy, M_y2.npy at another batch.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(32, 24), nn.Linear(24, 24), nn.Linear(24, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.bn1(self.c1(x))), 2)
        y = F.avg_pool2d(F.relu(self.bn2(self.c2(y)) + 0.1), 2)
        return F.log_softmax(self.fc(torch.flatten(y, 1)), dim=-1)


class ResBlock(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class Encoder(nn.Module):
    """Pre-LayerNorm transformer block, as the benchmark's encoder, small."""

    def __init__(self, d=32, heads=2):
        super().__init__()
        self.h, self.d = heads, d
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h), dim=-1) @ v
        x = x + self.out(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Chain(nn.Module):
    def forward(self, x):
        return torch.tanh(x * torch.sigmoid(x) + x * 0.5) * 2.0 - 1.0


class Tiny(nn.Module):
    def forward(self, x):
        for _ in range(10):
            x = (F.relu(x * 1.01 + 0.01) - x * 0.5) + torch.sigmoid(x)
        return x


class Conv1dNet(nn.Module):
    """1-D convolutions and pools (imported as 2-D ones with H = 1)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 8, 5, padding=2)
        self.c2 = nn.Conv1d(8, 8, 3, stride=2, dilation=2, padding=1, groups=2, bias=False)

    def forward(self, x):
        y = F.max_pool1d(F.relu(self.c1(x)), 2)
        return F.avg_pool1d(torch.tanh(self.c2(y)), 3, stride=1, padding=1)


class Pixel(nn.Module):
    """PixelShuffle (DepthToSpace, mode CRD) and PixelUnshuffle."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 12, 3, padding=1)

    def forward(self, x):
        y = F.pixel_shuffle(self.c(x), 2)
        return F.pixel_unshuffle(torch.sigmoid(y) * y, 2)


class Masked(nn.Module):
    """torch.tril / torch.triu (Trilu), as in causal attention masks."""

    def forward(self, x):
        return torch.tril(x) + torch.triu(x * 2, diagonal=2) - torch.tril(x, -1) * 0.5


class Classify(nn.Module):
    """A linear classifier's argmax (ArgMax, int64 output)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 7)

    def forward(self, x):
        return torch.argmax(self.fc(x), dim=-1)


class Upsample(nn.Module):
    """F.interpolate, as in U-Nets and feature pyramids (Resize)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.c(x)
        a = F.interpolate(y, scale_factor=2.0, mode="nearest")
        b = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
        c = F.interpolate(y, size=(10, 7), mode="bicubic", align_corners=True)
        d = F.interpolate(c, size=(12, 8), mode="bilinear", align_corners=False)
        return torch.cat([a, b, d], dim=1)


class UpConv(nn.Module):
    """ConvTranspose2d as U-Net and GAN decoders upsample (stride 2,
    padding 1, output_padding 1; kernel 2 stride 2 grouped) and a dilated
    ConvTranspose1d (imported as 2-D with H = 1)."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(6, 4, 2, stride=2, groups=2, bias=False)
        self.up3 = nn.ConvTranspose1d(4, 3, 3, stride=2, padding=2, output_padding=1,
                                      dilation=2)

    def forward(self, x):
        y = self.up2(F.relu(self.up1(x)))  # [B, 4, 12, 16]
        z = self.up3(y.mean(dim=2))  # [B, 3, 32]
        return torch.cat([y.flatten(1), torch.tanh(z).flatten(1)], dim=1)


class GatherScatter(nn.Module):
    """torch.gather and Tensor.scatter / scatter_add (GatherElements;
    ScatterElements none and add) with indices computed at run time from
    the input (argmax, argmin), duplicates included.  (PyTorch 1.13 does
    not export scatter_reduce.)"""

    def forward(self, x):  # [B, 6, 5]
        i = torch.argmax(x, dim=1, keepdim=True)  # [B, 1, 5]
        j = torch.argmin(x, dim=2, keepdim=True)  # [B, 6, 1]
        top = torch.gather(x, 1, i)
        low = torch.gather(x, -1, j)
        jj = torch.cat([j, 4 - j, j], dim=2)  # [B, 6, 3]: j twice
        src = torch.cat([low, low * 0.5, -low], dim=2)
        y = x.scatter(1, i, top * 2.0)
        y = y.scatter_add(2, jj, src)
        return y * torch.sigmoid(x)


class Recurrent(nn.Module):
    """nn.LSTM (2 layers, bidirectional, batch_first) then nn.GRU and
    nn.RNN (relu) on its output: ONNX LSTM, GRU, RNN, unrolled at import;
    PyTorch makes the zero initial states from the input's batch."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(10, 4, batch_first=True)
        self.rnn = nn.RNN(4, 3, nonlinearity="relu", batch_first=True)

    def forward(self, x):  # [B, 7, 6]
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        y, _ = self.rnn(y)
        return y


class CeilPool(nn.Module):
    """ceil_mode pools whose last window would start in the end padding,
    which PyTorch drops (and so ONNX Runtime and the ONNX spec from 1.16;
    PyTorch 1.13 still declares the output with it): max 2-D, 1-D (k < s
    too) and 3-D, average without the padding counted (its pads in the
    node); and one whose last window starts inside and hangs over."""

    def forward(self, x):  # [B, 2, 5, 7]
        ys = [F.max_pool2d(x, 2, 2, padding=1, ceil_mode=True),  # 3x4
              F.avg_pool2d(x, 2, 2, padding=1, ceil_mode=True, count_include_pad=False),
              F.max_pool2d(x, 1, (4, 3), ceil_mode=True),  # 2x3: k < s
              F.max_pool1d(x.flatten(2), 2, 2, padding=1, ceil_mode=True),  # 35 -> 18
              F.max_pool3d(x.unsqueeze(1), 2, 2, padding=1, ceil_mode=True),  # 2x3x4
              F.max_pool2d(x, 2, 2, ceil_mode=True)]  # 3x4: the last ones hang over
        return torch.cat([y.flatten(1) for y in ys], 1)


class SwinBlock(nn.Module):
    """torchvision's ShiftedWindowAttention (swin_t's, narrow): its mask is
    built by slice assignments (ScatterND whose 4802 indices come from
    Shapes, evaluated at load time) and its F.dropout(p=0.0) calls export
    as training-mode Dropout of ratio 0."""

    def __init__(self):
        super().__init__()
        from torchvision.models.swin_transformer import ShiftedWindowAttention
        self.attn = ShiftedWindowAttention(8, [7, 7], [3, 3], 2)

    def forward(self, x):  # [B, 56, 56, 8]
        return self.attn(x)


class Video(nn.Module):
    """A video ResNet, small: 3-D convolutions (each imported as one conv2d
    over the depth taps) with BatchNorm, ReLU and residual adds between
    them, as torchvision's r3d_18 (3x3x3, a strided block with a 1x1x1
    downsample) and r2plus1d_18 ((1,3,3) then (3,1,1)), a grouped one, and
    AdaptiveAvgPool3d + Linear."""

    def __init__(self):
        super().__init__()

        def cbn(ci, co, k, s=1, p=0, g=1):
            return nn.Sequential(nn.Conv3d(ci, co, k, s, p, groups=g, bias=False),
                                 nn.BatchNorm3d(co))
        self.stem = cbn(3, 8, 3, (1, 2, 2), 1)
        self.b1 = nn.ModuleList([cbn(8, 8, 3, 1, 1), cbn(8, 8, 3, 1, 1)])
        self.b2 = nn.ModuleList([cbn(8, 16, 3, 2, 1), cbn(16, 16, 3, 1, 1), cbn(8, 16, 1, 2)])
        self.sp = cbn(16, 16, (1, 3, 3), 1, (0, 1, 1))
        self.tm = cbn(16, 16, (3, 1, 1), 1, (1, 0, 0))
        self.grp = nn.Conv3d(16, 16, 3, padding=1, groups=4)
        self.fc = nn.Linear(16, 5)
        for m in self.modules():  # running statistics that are not the identity
            if isinstance(m, nn.BatchNorm3d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):  # [B, 3, 4, 6, 6]
        x = F.relu(self.stem(x))
        x = F.relu(self.b1[1](F.relu(self.b1[0](x))) + x)
        x = F.relu(self.b2[1](F.relu(self.b2[0](x))) + self.b2[2](x))
        x = F.relu(self.tm(F.relu(self.sp(x))))
        x = F.relu(self.grp(x)) + x
        return self.fc(F.adaptive_avg_pool3d(x, 1).flatten(1))


class GridSample(nn.Module):
    """F.grid_sample (GridSample, opset 16) with a grid computed from the
    input, some of it outside [-1, 1]: bilinear and nearest, zeros and
    border padding, align_corners both ways (RAFT's lookups are bilinear,
    zeros, align_corners=True)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 2, 3, padding=1)

    def forward(self, x):  # [B, 3, 7, 9]
        g = torch.tanh(self.c(x)).permute(0, 2, 3, 1) * 1.3  # [B, 7, 9, 2]
        ys = [F.grid_sample(x, g, mode=m, padding_mode=p, align_corners=a)
              for m, p, a in (("bilinear", "zeros", True), ("bilinear", "zeros", False),
                              ("bilinear", "border", False), ("nearest", "zeros", False),
                              ("nearest", "border", True))]
        return torch.cat(ys, 1)


class Roberta(nn.Module):
    """RoBERTa-style embeddings and an encoder layer on token ids and an int64
    attention mask: position ids torch.cumsum(am, dim=1) - 1 (CumSum on a
    mask known only at run time), src_key_padding_mask=(am == 0).  Two
    inputs, so exported by roberta() below (roberta_ids, roberta_am)."""

    def __init__(self, vocab=50, d=32, maxpos=20):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d, padding_idx=1), nn.Embedding(maxpos, d)
        self.ln = nn.LayerNorm(d)
        self.layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, 3)

    def forward(self, ids, am):
        pos = torch.cumsum(am, dim=1) - 1
        h = self.ln(self.tok(ids) + self.pos(pos))
        return self.head(self.layer(h, src_key_padding_mask=(am == 0)))


def roberta(out):
    torch.manual_seed(100)
    m = Roberta().eval()
    ids = torch.randint(2, 50, (2, 8))
    am = torch.ones(2, 8, dtype=torch.int64)
    am[1, 5:], ids[1, 5:] = 0, 1
    # outside no_grad: there PyTorch takes the fused encoder-layer kernel,
    # which has no ONNX export
    torch.onnx.export(m, (ids, am), os.path.join(out, "roberta.onnx"),
                      input_names=["ids", "am"], output_names=["y"], opset_version=17)
    with torch.no_grad():
        np.save(os.path.join(out, "roberta_ids.npy"), ids.numpy())
        np.save(os.path.join(out, "roberta_am.npy"), am.numpy())
        np.save(os.path.join(out, "roberta_y.npy"), out_array(m(ids, am)))
    print("roberta exported")


# name, module, input shape, dynamic batch (then also run at batch 5)
MODELS = [
    ("mlp", Mlp, (4, 32), True),
    ("convnet", ConvNet, (2, 3, 8, 8), False),
    ("resblock", ResBlock, (1, 8, 6, 6), True),
    ("encoder", Encoder, (2, 8, 32), True),
    ("chain", Chain, (64,), False),
    ("tiny", Tiny, (16,), False),
    ("conv1d", Conv1dNet, (2, 4, 20), True),
    ("pixel", Pixel, (2, 3, 6, 4), True),
    ("masked", Masked, (2, 5, 7), True),
    ("classify", Classify, (6, 16), True),
    ("upsample", Upsample, (2, 3, 6, 4), True),
    ("upconv", UpConv, (2, 4, 3, 4), True),
    ("gatherscatter", GatherScatter, (3, 6, 5), True),
    ("recurrent", Recurrent, (2, 7, 6), True),
    ("ceilpool", CeilPool, (2, 2, 5, 7), False),
    ("swinblock", SwinBlock, (1, 56, 56, 8), False),
    ("gridsample", GridSample, (2, 3, 7, 9), True),
    ("video", Video, (1, 3, 4, 6, 6), True),
    ("videobn", Video, (1, 3, 4, 6, 6), True),  # BatchNormalization kept (below)
]
# exported with training=PRESERVE: the eval-mode model, but its
# BatchNormalization nodes are kept rather than folded into the Convs
KEEP_BN = {"videobn"}


def out_array(y):
    """float32, or int64 as ArgMax gives it."""
    return y.numpy().astype(np.int64 if y.dtype == torch.int64 else np.float32)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    only = set(sys.argv[2:])  # model names to export (none given: all)
    for k, (name, cls, shape, dynamic) in enumerate(MODELS):
        if only and name not in only:
            continue
        torch.manual_seed(1 + k)
        m = cls().eval()
        x = torch.rand(*shape) * 2 - 1
        axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None
        with torch.no_grad():
            kw = {"training": torch.onnx.TrainingMode.PRESERVE} if name in KEEP_BN else {}
            torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"), input_names=["x"],
                              output_names=["y"], opset_version=17, dynamic_axes=axes, **kw)
            np.save(os.path.join(out, name + "_x.npy"), x.numpy().astype(np.float32))
            np.save(os.path.join(out, name + "_y.npy"), out_array(m(x)))
            if dynamic:
                x2 = torch.rand(5, *shape[1:]) * 2 - 1
                np.save(os.path.join(out, name + "_x2.npy"), x2.numpy().astype(np.float32))
                np.save(os.path.join(out, name + "_y2.npy"), out_array(m(x2)))
        print(name, "exported")
    if not only or "roberta" in only:
        roberta(out)


if __name__ == "__main__":
    main()
