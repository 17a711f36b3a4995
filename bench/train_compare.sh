#!/bin/bash
# train_compare.sh - the training benchmark of issue 32 (`make bench-train`):
# bench/train.c (our eager, replay -O0, replay -O2) and
# bench/peers/train_torch.py (PyTorch eager, loss.backward(); opt.step())
# on the MLP, the CNN and the encoder block, batch 64, one thread, from the
# same initial weights, in alternating rounds (ours first in odd rounds,
# PyTorch first in even ones; PyTorch twice: OpenBLAS at AVX-512 and as
# installed, see below) so that load from elsewhere on the machine
# hits both alike; then one Fashion-MNIST epoch of the MLP on each side
# (same initial weights, same batch order); then the table
# (bench/train_table.py): medians over all rounds' timed steps.
#
#   bench/train_compare.sh [BUILD] [--rounds N] [--steps N] [--models LIST]
#                          [--no-epoch] [--out DIR]
#
# BUILD: the build directory (default build).  --rounds (default 5),
# --steps: timed steps per model per round and side (default 10), --out:
# where train.json (every record) and train.md (the table) go (default
# bench/results).  Needs Debian's /usr/bin/python3 with python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
rounds=5
steps=10
models=mlp,cnn,encoder
epoch=1
out=bench/results
# PyTorch's matrix products run on Debian's OpenBLAS, which picks its kernels
# from the CPU model and falls back to SSE3 ("Prescott") on CPUs it does not
# know (this VM's Xeon); the PyTorch column of the targets runs it at
# AVX-512 (OPENBLAS_CORETYPE, default SkylakeX), the "as installed" column
# as it comes.
coretype=${OPENBLAS_CORETYPE:-SkylakeX}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --no-epoch) epoch=0; shift ;;
    --out) out=$2; shift 2 ;;
    -*) echo "train_compare.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "train_compare.sh: $py has no torch/numpy (apt-get install python3-torch)" >&2
  exit 1
fi
[ -x "$build/train" ] || { echo "train_compare.sh: no $build/train (build first)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/tg-train.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
export OMP_NUM_THREADS=1
ours() {
  echo "== round $1: ours" >&2
  "$build/train" --models "$models" --steps "$steps" --export "$tmp/w" --json "$tmp/ours.jsonl"
}
theirs() {
  echo "== round $1: PyTorch (OpenBLAS at $coretype)" >&2
  OPENBLAS_CORETYPE=$coretype "$py" bench/peers/train_torch.py --models "$models" \
    --steps "$steps" --weights "$tmp/w" --json "$tmp/torch.jsonl" || return 1
  echo "== round $1: PyTorch as installed (OpenBLAS picks its kernels from the CPU model)" >&2
  env -u OPENBLAS_CORETYPE "$py" bench/peers/train_torch.py --models "$models" \
    --steps "$steps" --weights "$tmp/w" --json "$tmp/torch_auto.jsonl"
}
st=0
# ours first: it writes the weights PyTorch reads
ours 1 || st=1
theirs 1 || st=1
for ((r = 2; r <= rounds; r++)); do
  if ((r % 2)); then
    ours "$r" || st=1
    theirs "$r" || st=1
  else
    theirs "$r" || st=1
    ours "$r" || st=1
  fi
done
if ((epoch)); then
  echo "== Fashion-MNIST epoch, MLP: ours (replay -O2), then PyTorch" >&2
  "$build/train" --epoch "$tmp/epoch" --json "$tmp/epoch.jsonl" || st=1
  OPENBLAS_CORETYPE=$coretype "$py" bench/peers/train_torch.py --epoch "$tmp/epoch" \
    --json "$tmp/epoch.jsonl" || st=1
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
isa=$("$build/tracegraph" version | sed -n 's/^CPU kernels: //p')
dnnl=$("$build/tracegraph" version | sed -n 's/^oneDNN ISA: //p')
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ':!bench/results' ':!docs/PERFORMANCE.md' 2>/dev/null ||
  rev="$rev+changes"
"$py" bench/train_table.py --ours "$tmp/ours.jsonl" --torch "$tmp/torch.jsonl" \
  --torch-auto "$tmp/torch_auto.jsonl" \
  --epoch "$tmp/epoch.jsonl" --cpu "$cpu" --isa "$isa" --onednn "$dnnl" --commit "$rev" \
  --rounds "$rounds" --json "$out/train.json" --md "$out/train.md" || st=1
exit $st
