#!/usr/bin/python3
"""export.py - exports the real models of issue 17 to ONNX, with PyTorch's
own output on a fixed input, for bench/real/run.py (`make bench-real`).

    /usr/bin/python3 bench/real/export.py OUTDIR [MODEL...]

For each model, OUTDIR/MODEL/ receives model.onnx (torch.onnx.export,
opset 17, batch 1, static shapes), x.npy and y.npy (the input and PyTorch's
eval-mode output, float32) and x.bin and y.bin (the same, raw float32, for
the ONNX Runtime runner bench/peers/ort/ort_workloads.js).  OUTDIR is a
scratch directory, never the repository: vit_b_16 alone is 330 MB.

Weights: torchvision's random initialisation (weights=None: no download is
possible here, and the timings do not depend on the values), seed 0.  Then
every BatchNorm's running mean and variance are set from the model's own
train-mode batch statistics (cumulative average over a few random batches),
so that the eval-mode activations stay O(1) through 50-120 layers instead of
growing or vanishing with the depth: a check against PyTorch on outputs of
1e30 or 1e-30 would prove nothing.  Models without BatchNorm (vit_b_16,
convnext_tiny, the TransformerEncoder) use LayerNorm and need nothing.

The video models (r3d_18, mc3_18, r2plus1d_18: 3-D convolutions on a clip
of 16 frames of 112x112) are exported only when named.

Prints one line per model: name, parameters, output shape and scale, or the
error that stopped its export (the model is then left out of OUTDIR).
"""
import os
import sys
import time

import numpy as np
import torch
import torchvision

SEED = 0


class DeepLabOut(torch.nn.Module):
    """deeplabv3 returns a dict {"out": ...}; ONNX wants a tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def transformer_encoder():
    """A BERT-base-sized-per-layer encoder stack, 6 layers, 128 tokens."""
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                             dropout=0.1, activation="gelu", batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
    # The stack deep-copies one layer: draw each layer's weights anew.
    for m in enc.modules():
        for reset in ("reset_parameters", "_reset_parameters"):
            if m is not enc and hasattr(m, reset):
                getattr(m, reset)()
    return enc


tv = torchvision.models
# name: (constructor, input shape)
MODELS = {
    "resnet18": (lambda: tv.resnet18(weights=None), (1, 3, 224, 224)),
    "resnet50": (lambda: tv.resnet50(weights=None), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: tv.mobilenet_v2(weights=None), (1, 3, 224, 224)),
    "mobilenet_v3_small": (lambda: tv.mobilenet_v3_small(weights=None), (1, 3, 224, 224)),
    "efficientnet_b0": (lambda: tv.efficientnet_b0(weights=None), (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": (lambda: tv.shufflenet_v2_x1_0(weights=None), (1, 3, 224, 224)),
    "squeezenet1_1": (lambda: tv.squeezenet1_1(weights=None), (1, 3, 224, 224)),
    "regnet_y_400mf": (lambda: tv.regnet_y_400mf(weights=None), (1, 3, 224, 224)),
    "convnext_tiny": (lambda: tv.convnext_tiny(weights=None), (1, 3, 224, 224)),
    "densenet121": (lambda: tv.densenet121(weights=None), (1, 3, 224, 224)),
    "googlenet": (lambda: tv.googlenet(weights=None, aux_logits=False, init_weights=True),
                  (1, 3, 224, 224)),
    "vit_b_16": (lambda: tv.vit_b_16(weights=None), (1, 3, 224, 224)),
    "swin_t": (lambda: tv.swin_t(weights=None), (1, 3, 224, 224)),
    "maxvit_t": (lambda: tv.maxvit_t(weights=None), (1, 3, 224, 224)),
    "deeplabv3_mobilenet_v3_large": (
        lambda: DeepLabOut(tv.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False)), (1, 3, 224, 224)),
    "transformer_encoder": (transformer_encoder, (1, 128, 512)),
    # video models: 3-D convolutions on a 16-frame 112x112 clip (N, C, T, H, W)
    "r3d_18": (lambda: tv.video.r3d_18(weights=None), (1, 3, 16, 112, 112)),
    "mc3_18": (lambda: tv.video.mc3_18(weights=None), (1, 3, 16, 112, 112)),
    "r2plus1d_18": (lambda: tv.video.r2plus1d_18(weights=None), (1, 3, 16, 112, 112)),
}
# the video models are run on request only (bench/real/export.py DIR r3d_18 ...)
VIDEO = ("r3d_18", "mc3_18", "r2plus1d_18")
DEFAULT = [n for n in MODELS if n not in VIDEO]


def calibrate_bn(model, shape, batches=3, batch=4):
    """Running statistics of every BatchNorm from train-mode batch statistics
    (momentum None: the cumulative average), on inputs of the model's shape."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return 0
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn((batch,) + tuple(shape[1:]), generator=g))
    model.eval()
    return len(bns)


def export(name, outdir):
    ctor, shape = MODELS[name]
    torch.manual_seed(SEED)
    model = ctor()
    if name == "vit_b_16":
        # torchvision zeroes the head of an untrained ViT: every output
        # would be 0, and a check against it would prove nothing.
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    nbn = calibrate_bn(model, shape)
    model.eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(SEED + 2))
    # Grad mode on, for the reference and the export alike: under no_grad
    # TransformerEncoder takes its fused fast path, which has no ONNX form.
    y = model(x).detach()
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["x"],
                      output_names=["y"], do_constant_folding=True)
    xs, ys = x.numpy().astype(np.float32), y.numpy().astype(np.float32)
    np.save(os.path.join(d, "x.npy"), xs)
    np.save(os.path.join(d, "y.npy"), ys)
    xs.tofile(os.path.join(d, "x.bin"))
    ys.tofile(os.path.join(d, "y.bin"))
    nparam = sum(p.numel() for p in model.parameters())
    return nparam, nbn, ys


def main(argv):
    if len(argv) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    outdir, names = argv[0], argv[1:] or DEFAULT
    bad = [n for n in names if n not in MODELS]
    if bad:
        print("export.py: unknown model(s) %s; known: %s" % (", ".join(bad), ", ".join(MODELS)),
              file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    with open(os.path.join(outdir, "order.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    for name in names:
        t0 = time.time()
        stale = os.path.join(outdir, name + ".export-error")
        if os.path.exists(stale):
            os.remove(stale)
        try:
            nparam, nbn, y = export(name, outdir)
            print("export %-30s %6.1fM params %3d BN  out %-18s max|y| %.3g  (%.1f s)" %
                  (name, nparam / 1e6, nbn, "x".join(map(str, y.shape)),
                   float(np.abs(y).max()), time.time() - t0), flush=True)
        except Exception as e:  # one model's failure is data, not the end of the run
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print("export %-30s FAILED: %s" % (name, msg), flush=True)
            with open(os.path.join(outdir, name + ".export-error"), "w") as f:
                f.write(msg + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
