#!/usr/bin/env python3
"""make.py - the dynamic-batch ONNX models of test_onnx_dynbatch.c.

Attention models exported by torch.onnx.export (opset 17) with a dynamic
batch axis, the way issue 17 found two of them failing at batch sizes
other than the one they were imported at:

  padmask   nn.TransformerEncoder (batch_first, 2 layers) given a
            src_key_padding_mask: PyTorch turns the bool mask into a
            float one through zeros_like of a [B*heads, 1, T] mask
            (ConstantOfShape of a shape computed from the batch);
  mha       nn.TransformerEncoder sequence-first (2 layers): the heads
            are split by reshapes to [T, B*heads, head_dim];
  vit       torchvision's VisionTransformer, width-reduced (16x16
            images, 4x4 patches, 2 layers, 2 heads, width 16): the class
            token expanded to the batch, then batch-first attention.

Each model M gives M.onnx and, at batch b in 1, 2, 3, 5, PyTorch's
inputs M_x_b<b>.npy (padmask also M_m_b<b>.npy, the bool padding mask) and outputs M_y_b<b>.npy.
The files are committed; `make test` never needs PyTorch.  To
regenerate (Debian's python3-torch 1.13 and python3-torchvision):

    /usr/bin/python3 tests/data/dynbatch/make.py tests/data/dynbatch
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

BATCHES = (1, 2, 3, 5)
EXPORT_BATCH = 2


class PadMask(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, m):
        return self.enc(x, src_key_padding_mask=m)


class Mha(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=16, patch_size=4, num_layers=2, num_heads=2,
                          hidden_dim=16, mlp_dim=32, num_classes=10)
    nn.init.normal_(m.heads.head.weight, std=0.5)  # torchvision starts it at 0
    nn.init.normal_(m.class_token, std=0.5)
    return m


def padmask_inputs(b):
    x = torch.rand(b, 6, 16) * 2 - 1
    m = torch.zeros(b, 6, dtype=torch.bool)
    for i in range(b):  # each row pads a different number of positions
        m[i, 6 - (i % 3):] = True
    return (x, m)


# name, module, inputs at batch b, input names, dynamic axes (batch dim per input)
MODELS = [
    ("padmask", PadMask, padmask_inputs, ("x", "m"), {"x": 0, "m": 0, "y": 0}),
    ("mha", Mha, lambda b: (torch.rand(7, b, 16) * 2 - 1,), ("x",), {"x": 1, "y": 1}),
    ("vit", vit, lambda b: (torch.rand(b, 3, 16, 16) * 2 - 1,), ("x",), {"x": 0, "y": 0}),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for k, (name, make, inputs, names, axes) in enumerate(MODELS):
        torch.manual_seed(17 + k)
        m = make().eval()
        dyn = {n: {d: "batch"} for n, d in axes.items()}
        # Gradients stay on: under no_grad PyTorch 1.13 runs (and would export)
        # its fused encoder-layer kernel, which ONNX has no op for.
        torch.onnx.export(m, inputs(EXPORT_BATCH), os.path.join(out, name + ".onnx"),
                          input_names=list(names), output_names=["y"], opset_version=17,
                          dynamic_axes=dyn)
        for b in BATCHES:
            xs = inputs(b)
            for n, x in zip(names, xs):
                a = x.numpy() if x.dtype == torch.bool else x.numpy().astype(np.float32)
                np.save(os.path.join(out, "%s_%s_b%d.npy" % (name, n, b)), a)
            np.save(os.path.join(out, "%s_y_b%d.npy" % (name, b)),
                    m(*xs).detach().numpy().astype(np.float32))
        print(name, "exported")


if __name__ == "__main__":
    main()
