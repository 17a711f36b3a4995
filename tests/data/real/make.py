#!/usr/bin/env python3
"""make.py - the width-reduced real models of test_onnx_real.c.

Small versions of models of the real-model benchmark (bench/real, issue
17), built by torchvision's own constructors so that the exported graphs
have the real models' structure (inverted residuals, depthwise and grouped
convolutions, squeeze-excitation, hardswish, residual stages, global
pooling, BatchNorm folded or not), exported by torch.onnx.export at opset
17, batch 1, with a seeded input and PyTorch's own output saved beside
each as .npy.  Weights: random (seed 0), BatchNorm statistics from the
model's own train-mode batches as in bench/real/export.py.  The files are
committed; `make test` never needs PyTorch.  To regenerate (Debian's
python3-torch 1.13 and python3-torchvision 0.14):

    /usr/bin/python3 tests/data/real/make.py tests/data/real [MODEL...]

Each model M gives M.onnx, M_x.npy, M_y.npy.
"""
import os
import sys

import numpy as np
import torch
import torchvision
from torchvision.models.regnet import BlockParams, RegNet

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "bench", "real"))
from export import calibrate_bn  # noqa: E402

tv = torchvision.models
MODELS = {
    # inverted residuals, depthwise 3x3, ReLU6, a 1280-wide head (every
    # stage of mobilenet_v2, one block less in the long ones)
    "mobilenet_v2_w025": (lambda: tv.mobilenet_v2(
        weights=None, width_mult=0.25, num_classes=10,
        inverted_residual_setting=[[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 2, 2], [6, 64, 2, 2],
                                   [6, 96, 2, 1], [6, 160, 2, 2], [6, 320, 1, 1]]),
        (1, 3, 64, 64)),
    # squeeze-excitation (hardsigmoid), hardswish, 5x5 depthwise
    "mobilenet_v3_small_w025": (lambda: tv.mobilenet_v3_small(weights=None, width_mult=0.25,
                                                              num_classes=10), (1, 3, 64, 64)),
    # regnet_y's blocks at small widths: grouped 3x3, SE, residual stages
    "regnet_y_tiny": (lambda: RegNet(BlockParams.from_init_params(
        depth=6, w_0=16, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25), num_classes=10),
        (1, 3, 64, 64)),
}


def main(argv):
    outdir, names = argv[0], argv[1:] or list(MODELS)
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        ctor, shape = MODELS[name]
        torch.manual_seed(0)
        model = ctor()
        calibrate_bn(model, shape)
        model.eval()
        x = torch.randn(shape, generator=torch.Generator().manual_seed(2))
        y = model(x).detach()
        path = os.path.join(outdir, name + ".onnx")
        torch.onnx.export(model, (x,), path, opset_version=17, input_names=["x"],
                          output_names=["y"], do_constant_folding=True)
        np.save(os.path.join(outdir, name + "_x.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(outdir, name + "_y.npy"), y.numpy().astype(np.float32))
        print("%s: %d bytes, out %s, max|y| %.3g" % (path, os.path.getsize(path),
                                                    tuple(y.shape), float(y.abs().max())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
