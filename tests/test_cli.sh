#!/usr/bin/env bash
# test_cli.sh TRACEGRAPH BUILD_DIR - the `tracegraph` tool end to end.
#
# BUILD_DIR/make_model traces and saves the test models (MLP with a dynamic
# batch, a guarded branch, a two-input/two-output graph) with their inputs
# and eager outputs as .npy; every command then runs on them.  Outputs that
# replay writes must equal the eager outputs byte for byte (cmp).  Each
# command's stderr is also scanned for sanitizer reports, so the ASan build
# fails here even where the expected exit code is non-zero.
# Prints "N passed, M failed"; exits non-zero on any failure.
set -u
TG=${1:?usage: test_cli.sh TRACEGRAPH BUILD_DIR}
BUILD=${2:?usage: test_cli.sh TRACEGRAPH BUILD_DIR}
. "$(dirname "$0")/checks.sh"

# ---- the models ----
expect 0 "$BUILD/make_model" .
for f in mlp.tgraph branchy.tgraph pair.tgraph mlp_x.npy mlp_y.npy branchy_site.txt \
    train.tgraph train_x.npy train_expect5.ckpt train_loss5.txt fmnist.tgraph; do
    [ -s "$f" ] && good || bad "make_model did not write $f"
done
site=$(cat branchy_site.txt) # "make_model.c:LINE branchy"

# ---- version, help, usage errors ----
expect 0 "$TG" version
has out "tracegraph 0.1.0 (.tgraph format 1"
expect 0 "$TG" --version
has out "tracegraph 0.1.0"
# The CPU kernel set (eager/isa.h): what the CPU supports unless TG_CPU
# asks for less; a native build has one set and says TG_CPU is ignored.
level=$(TG_CPU= "$TG" version | sed -n 's/^CPU kernels: //p')
case $level in
avx512 | avx2 | baseline)
    good
    TG_CPU=baseline expect 0 "$TG" version
    has out "CPU kernels: baseline"
    TG_CPU=sse9 expect 0 "$TG" version
    has out "CPU kernels: $level"
    has err "TG_CPU=sse9 is not a kernel level (baseline, avx2, avx512); using $level"
    if [ "$level" != avx512 ]; then
        TG_CPU=avx512 expect 0 "$TG" version
        has err "TG_CPU=avx512: this CPU supports up to $level"
    fi ;;
native)
    good
    TG_CPU=baseline expect 0 "$TG" version
    has err "TG_CPU=baseline ignored: this library was built with one kernel set (native" ;;
*) bad "tracegraph version: CPU kernels '$level'" ;;
esac
# oneDNN's instruction set, capped by ONEDNN_MAX_CPU_ISA (bench/ records it)
case $(ONEDNN_MAX_CPU_ISA= "$TG" version | sed -n 's/^oneDNN ISA: //p') in
sse41 | avx | avx2* | avx512*) good ;;
*) bad "tracegraph version: no oneDNN ISA line" ;;
esac
if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    ONEDNN_MAX_CPU_ISA=AVX2 expect 0 "$TG" version
    has out "oneDNN ISA: avx2"
fi
expect 0 "$TG" --help
has out "usage: tracegraph <command>"
has out "exit codes:"
for cmd in info dump dot run bench check train opt convert ops version help; do
    expect 0 "$TG" "$cmd" --help
    has out "usage: tracegraph $cmd"
    has out "example:"
done
expect 0 "$TG" help run
has out "usage: tracegraph run"
expect 0 "$TG" ops
has out "conv2d               inputs 2-3"
has out "ops (graph/ops.def)"
expect 0 "$TG" ops --onnx
has out "GridSample             inputs 2          outputs 1   attributes: align_corners, mode, padding_mode"
has out "Range                  inputs 3          outputs 1   attributes: -  (load time only)"
expect 2 "$TG" ops --onnx conv
has err "unexpected argument 'conv'"
expect 2 "$TG"
has err "usage: tracegraph <command>"
expect 2 "$TG" frobnicate
has err "tracegraph: unknown command 'frobnicate'"
has err "usage: tracegraph <command>"
expect 2 "$TG" run mlp.tgraph --frob
has err "tracegraph run: unknown option '--frob'"
has err "usage: tracegraph run FILE.tgraph"
expect 2 "$TG" info --frob mlp.tgraph
has err "tracegraph info: unknown option '--frob'"
expect 2 "$TG" run mlp.tgraph -i
has err "tracegraph run: option '-i' needs a value"
expect 2 "$TG" bench mlp.tgraph --runs 0
has err "--runs wants an integer from 1 to"
expect 2 "$TG" check mlp.tgraph --rtol x
has err "--rtol wants a number >= 0, not 'x'"
expect 2 "$TG" run
has err "tracegraph run: no FILE.tgraph given"
expect 2 "$TG" info mlp.tgraph pair.tgraph
has err "one FILE.tgraph only"
expect 2 "$TG" run mlp.tgraph --backend tpu
has err "--backend takes a backend's name (cpu, opencl; NAME:N or NAME:TEXT picks a device: tracegraph devices), not 'tpu'"
expect 2 "$TG" opt -O3 mlp.tgraph o3.tgraph --target tpu:0
has err "--target takes a backend's name (cpu, opencl;"
expect 1 "$TG" check mlp.tgraph --backend cpu:7
has err 'replay: no device "cpu:7" (devices: cpu = '
# every backend's devices by name: the CPU always
expect 0 "$TG" devices
has out "cpu  "
has out "cores online, kernels "
expect 2 "$TG" dot mlp.tgraph -T jpg
has err "-T takes png or svg, not 'jpg'"
expect 2 "$TG" dump mlp.tgraph --inline-all=1
has err "option '--inline-all' takes no value"

# ---- info ----
expect 0 "$TG" info mlp.tgraph
has out "file mlp.tgraph: .tgraph format version 1"
has out "compressed"
for s in strings symbols values nodes provenance guards signature constants; do
    has out "  $s "
done
has out "trace main: 4 nodes"
has out "linear=2"
has out "relu=1"
has out "log_softmax=1"
has out "input  x: f32[B,32]"
has out "output y: f32[B,10]"
has out "dynamic dim B (traced as 4)"
has out "params: 4, 2792 bytes"
grep -qE "fc1.weight +f32\[16,32\] +2048 bytes" out && good || bad "info lists fc1.weight's bytes"
has out "constants: 0, 0 bytes"
has out "guards: 0"
has out "specialized: none"
has out "oneDNN kernels (2 conv / matmul nodes, CPU, 1 thread):"
# the -O3 cost model's rates, where the CPU has a blocked layout (ctest pins
# them: TG_COST_RATES=builtin; a bad value is named, info still succeeds)
if grep -q "blocks of [0-9]* channels" out && ! grep -q "blocks of 0 channels" out; then
    has out "cost rates (-O3 layout, 1 thread): built-in (TG_COST_RATES=builtin; fitted on one Zen 5 machine): gemm 48.0,"
    expect 0 env TG_COST_RATES=gemm=fast "$TG" info mlp.tgraph
    has out "cost rates: TG_COST_RATES: gemm=fast: not a number from 0.01 to 100000"
fi
expect 0 "$TG" info branchy.tgraph
has out "guards: 1"
has out "guard 0: strict decision of element 0 of the gt result == 1 at $site"
has out "constants: 1, 4 bytes"

# ---- train: a traced SGD step (make_model's train.tgraph) replayed ----
# against make_model's eager steps on the same rows: the state after 5
# steps byte for byte (the checkpoint), the losses as printed
D="--data x=train_x.npy --data y=train_y.npy"
losses() { sed -n 's/^\(step [0-9]*\/[0-9]*  loss [^ ]*\)  .* steps\/s$/\1/p' "$1"; }
expect 0 "$TG" train train.tgraph --steps 5 $D --save t5.ckpt --every 1
has out "train train.tgraph: 5 steps (1 to 5), batch 4 of 10 rows, 5 states, loss: loss, 1 thread"
has out "trained 5 steps in "
has out "state after step 5 saved to t5.ckpt (resume with --state t5.ckpt --start 5)"
same t5.ckpt train_expect5.ckpt
losses out >t5.txt
same t5.txt train_loss5.txt
# --every: the loss every K steps (counted from --start) and at the end
expect 0 "$TG" train train.tgraph --steps 5 $D --every 2
[ "$(losses out | cut -d' ' -f2)" = "$(printf '2/5\n4/5\n5/5')" ] && good ||
    bad "--every 2 printed $(losses out | cut -d' ' -f2 | tr '\n' ' ')"
# resuming from a checkpoint is running straight through: 3 + 3 steps
# (the second from step 3's rows, --start 3) against 6
expect 0 "$TG" train train.tgraph --steps 6 $D --save s6.ckpt --every 1
losses out | awk '{print $4}' >s6.txt
expect 0 "$TG" train train.tgraph --steps 3 $D --save h3.ckpt --every 1
losses out | awk '{print $4}' >r6.txt
expect 0 "$TG" train train.tgraph --steps 3 --start 3 --state h3.ckpt $D --save r6.ckpt --every 1 \
    --print-state
has out "train train.tgraph: 3 steps (4 to 6)"
has out "step 6/6  loss "
has out "state after step 6 saved to r6.ckpt (resume with --state r6.ckpt --start 6)"
has out "  fc1.weight: f32[6,5] = ["
has out "  lr: f32[] = [0.05]"
losses out | awk '{print $4}' >>r6.txt
same s6.ckpt r6.ckpt
same s6.txt r6.txt
cmp -s s6.ckpt h3.ckpt && bad "3 and 6 steps gave the same state" || good
# --lr sets the learning rate's state first: eager steps at lr 0.2
expect 0 "$TG" train train.tgraph --steps 3 $D --lr 0.2 --save lr.ckpt
same lr.ckpt train_lr_expect.ckpt
expect 0 "$TG" train train.tgraph --steps 3 $D --lr 0.2 --lr-state lr --save lr2.ckpt
same lr2.ckpt train_lr_expect.ckpt
# the step optimized at -O2 trains the same within rounding (1e-5 relative)
expect 0 "$TG" opt -O2 train.tgraph train.O2.tgraph
expect 0 "$TG" info train.O2.tgraph
has out "5 states (232 bytes): a training step"
expect 0 "$TG" train train.O2.tgraph --steps 5 $D --every 1
losses out | awk '{print $4}' >o2.txt
if awk '{print $4}' train_loss5.txt | paste - o2.txt |
    awk 'NF != 2 || ($1 - $2) ^ 2 > (1e-5 * $1) ^ 2 { bad = 1 } END { exit bad || NR != 5 }'; then
    good
else
    bad "-O2 losses $(tr '\n' ' ' <o2.txt) differ from eager's $(awk '{print $4}' train_loss5.txt | tr '\n' ' ')"
fi
# Ctrl-C: stops after the step in flight, saves the state, exits 130; the
# checkpoint resumes
"$TG" train train.tgraph --steps 1000000000 $D --save int.ckpt --every 1000 >int.out 2>int.err &
pid=$!
for _ in $(seq 300); do grep -q "^step 1000/" int.out 2>/dev/null && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && good || bad "train after SIGINT: exit $rc (want 130)"
has int.err "tracegraph train: interrupted after step "
has int.out "saved to int.ckpt (resume with --state int.ckpt --start "
at=$(sed -n 's/.*--start \([0-9]*\))$/\1/p' int.out)
expect 0 "$TG" train train.tgraph --steps 1 --start "${at:-0}" --state int.ckpt $D
has out "step $((${at:-0} + 1))/$((${at:-0} + 1))  loss "
# which rows each step gets: train_sum.tgraph adds 10 x the rows fed to its
# state (rows 1, 2, 3; batch 2): steps feed rows 0-1, 2-0, 1-2, 0-1, 2-0
expect 0 "$TG" train train_sum.tgraph --steps 4 --data x=sum_x.npy --data t=sum_t.npy --every 1
has out "batch 2 of 3 rows, 1 state, loss: loss"
[ "$(losses out | awk '{print $4}' | tr '\n' ' ')" = "30 70 120 150 " ] && good ||
    bad "train_sum: losses $(losses out | awk '{print $4}' | tr '\n' ' ') (want 30 70 120 150)"
expect 0 "$TG" train train_sum.tgraph --steps 1 --start 4 --data x=sum_x.npy --data t=sum_t.npy
has out "train train_sum.tgraph: 1 step (5 to 5)"
has out "step 5/5  loss 40  "
# no inputs at all: w <- w * w, three times
expect 0 "$TG" train train_noin.tgraph --steps 3 --print-state
has out "no batched inputs, 1 state"
has out "step 3/3  loss 1.06641  "
has out "  w: f32[3] = [0.00390625, 1.52588e-05, 1]"
# IDX files (formats/idx.h) feed inputs as .npy files do: u8 pixels as v /
# 255, rows reshaped to the input's ([10,5,1] feeds x f32[4,5]), plain or
# gzip; make_model's eager steps on the same data are the reference
expect 0 "$TG" train train.tgraph --steps 5 --data x=train_x.idx --data y=train_y.idx --save i5.ckpt
has out "batch 4 of 10 rows"
same i5.ckpt train_idx_expect5.ckpt
if command -v gzip >/dev/null; then
    gzip -c train_x.idx >train-x-ubyte.gz
    expect 0 "$TG" train train.tgraph --steps 5 --data x=train-x-ubyte.gz --data y=train_y.idx \
        --save i5gz.ckpt
    same i5gz.ckpt train_idx_expect5.ckpt
fi
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_x.idx --data y=train_x.idx
has err "train_x.idx is f32[10,5,1] but input 'y' is f32[4,3]: the file holds the dataset, dim 0 its rows"
head -c 40 train_y.idx >cut_y.idx
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_x.idx --data y=cut_y.idx
has err "cut_y.idx: at byte 12: the data is truncated"
# Fashion-MNIST (Debian's dataset-fashion-mnist, where installed): softmax
# regression, 3 steps equal to eager on the first 48 training images, then
# 300 steps bring the loss down
FM=/usr/share/datasets/fashion-mnist
if [ -e fmnist_expect3.ckpt ]; then
    FMD="--data x=$FM/train-images-idx3-ubyte.gz --data labels=$FM/train-labels-idx1-ubyte.gz"
    expect 0 "$TG" train fmnist.tgraph --steps 3 $FMD --save f3.ckpt
    has out "batch 16 of 60000 rows, 3 states"
    same f3.ckpt fmnist_expect3.ckpt
    expect 0 "$TG" train fmnist.tgraph --steps 300 --start 3 --state f3.ckpt $FMD --every 1
    first=$(losses out | head -20 | awk '{s += $4} END {print s / NR}')
    last=$(losses out | tail -20 | awk '{s += $4} END {print s / NR}')
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.8 * a) }' && good ||
        bad "Fashion-MNIST: the mean loss of steps 4-23 is $first, of steps 284-303 $last"
    expect 1 "$TG" train fmnist.tgraph --steps 1 --data x=$FM/train-images-idx3-ubyte.gz \
        --data labels=$FM/t10k-labels-idx1-ubyte.gz
    has err "t10k-labels-idx1-ubyte.gz has 10000 rows but $FM/train-images-idx3-ubyte.gz has 60000"
    expect 1 "$TG" train fmnist.tgraph --steps 1 --data x=$FM/train-images-idx3-ubyte.gz \
        --data labels=train_y.idx
    has err "train_y.idx: at byte 2: elements of type f32 do not load as i64"
fi

# ---- train: errors ----
expect 1 "$TG" train mlp.tgraph --steps 2 --data x=mlp_x.npy
has err "tracegraph train: mlp.tgraph: not a training step: no state; train runs graphs traced with trace_state"
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_x.npy
has err "input 'y' (f32[4,3]) has no data: give its dataset with --data y=FILE.npy"
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_xdim.npy --data y=train_y.npy
has err "train_xdim.npy is f32[10,4] but input 'x' is f32[4,5]: dim 1 of its rows is 4, the input's 5"
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_xint.npy --data y=train_y.npy
has err "train_xint.npy holds i32[10,5] but input 'x' is f32[4,5]"
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_x.npy --data y=train_y9.npy
has err "train_y9.npy has 9 rows but train_x.npy has 10: the inputs' datasets must have one row per example each"
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_x3.npy --data y=train_y.npy
has err "train_x3.npy is f32[3,5]: 3 rows, fewer than the batch of 4 that input 'x' takes"
expect 1 "$TG" train train.tgraph --steps 2 --data x=mlp_y.npy --data y=train_y.npy
has err "mlp_y.npy is f32[4,10] but input 'x' is f32[4,5]"
expect 1 "$TG" train train.tgraph --steps 2 --data x=train_x.npy --data y=pair_a.npy
has err "pair_a.npy is f32[2,3]: 2 rows, fewer than the batch of 4"
expect 1 "$TG" train train.tgraph --steps 2 --data x=mlp_x.npy.missing --data y=train_y.npy
has err "mlp_x.npy.missing"
expect 1 "$TG" train train.tgraph --steps 2 $D --data z=train_x.npy
has err "--data z=train_x.npy: the graph has no input named 'z' (its inputs: x, y)"
expect 1 "$TG" train train.tgraph --steps 2 $D --data x=train_x.npy
has err "input 'x' is given --data twice"
expect 1 "$TG" train train.tgraph --steps 2 $D --lr 0.1 --lr-state rate
has err "--lr: the step has no state named 'rate' (its states: fc1.weight, fc1.bias, fc2.weight, fc2.bias, lr); name the learning rate's state with --lr-state"
expect 1 "$TG" train train.tgraph --steps 2 $D --lr 0.1 --lr-state fc1.bias
has err "--lr: state 'fc1.bias' is f32[6], not an f32 scalar (a learning rate)"
expect 1 "$TG" train train.tgraph --steps 2 $D --batch 2
has err "input 'x' is f32[4,5]: its batch (dim 0) is fixed at 4, so --batch 2 needs a step traced with that dim dynamic (trace_dynamic)"
expect 1 "$TG" train train_empty.tgraph --steps 2 --data x=train_y.npy
has err "input 'x' is f32[0,3]: a batch of no rows (its dim 0); train feeds batches of one row or more"
expect 1 "$TG" train train_sum.tgraph --steps 2 --data x=sum_x.npy --data t=sum_x.npy
has err "sum_x.npy is f32[3,1] but input 't' is f32[]: a 0-d input takes a 0-d file (the same value every step)"
expect 1 "$TG" train train_sum.tgraph --steps 2 --data x=sum_t.npy --data t=sum_t.npy
has err "sum_t.npy is f32[] but input 'x' is f32[2,1]: the file holds the dataset, dim 0 its rows, each row one example of the input (2 dims)"
# checkpoints: of another file kind, damaged, missing; nothing is written
expect 1 "$TG" train train.tgraph --steps 2 $D --state train_x.npy --save no.ckpt
has err "--state: train_x.npy: "
[ -e no.ckpt ] && bad "a failed train wrote no.ckpt" || good
head -c 100 t5.ckpt >cut.ckpt
expect 1 "$TG" train train.tgraph --steps 2 $D --state cut.ckpt
has err "--state: cut.ckpt: "
expect 1 "$TG" train train.tgraph --steps 2 $D --state missing.ckpt
has err "--state: missing.ckpt: cannot open"
expect 1 "$TG" train train.tgraph --steps 1 $D --save no/such/dir.ckpt
has err "--save: "
expect 2 "$TG" train train.tgraph $D
has err "--steps N is required"
expect 2 "$TG" train train.tgraph --steps 0 $D
has err "--steps wants an integer from 1 to"
expect 2 "$TG" train train.tgraph --steps 2 --data x
has err "--data wants NAME=FILE.npy (the graph input NAME and its dataset), not 'x'"
expect 2 "$TG" train train.tgraph --steps 2 $D --lr-state lr
has err "--lr-state names the state that --lr sets: give --lr X too"
expect 2 "$TG" train train.tgraph --steps 2 $D --lr -1
has err "--lr wants a number >= 0"
expect 2 "$TG" train train.tgraph train.tgraph --steps 2 $D
has err "one FILE.tgraph only"
expect 2 "$TG" train --steps 2 $D
has err "no FILE.tgraph given"

# ---- info and dump: a training step's states ----
expect 0 "$TG" info train.tgraph
has out "trace main: 30 nodes"
has out ", 5 states (232 bytes): a training step"
has out "  state  fc1.weight: f32[6,5], updated by each step"
has out "  state  lr: f32[], not changed by the step"
has out "  states          "
has out "states: 5, 232 bytes (a training step: tracegraph train runs it)"
grep -qE "^    fc2.bias +f32\[3\] +12 bytes, updated by each step$" out && good ||
    bad "info lists fc2.bias's bytes and role"
expect 0 "$TG" info mlp.tgraph
lacks out "  state  "
lacks out "states:"
lacks out "a training step"
expect 0 "$TG" dump train.tgraph
has out "%fc1.bias: f32[6] = state ["
has out "%lr: f32[] = state [0.05]"
has out "next %fc1.weight = %"
has out "next %lr = %lr"

# ---- dump ----
expect 0 "$TG" dump mlp.tgraph
has out "graph main(%x: f32[B,32]) -> (y: f32[B,10]) {"
has out "sym B = 4"
has out "%fc1.weight: f32[16,32] = param elided"
has out "= linear(%x, %fc1.weight, %fc1.bias)"
has out "provenance {"
has out "# models.c:13 model_mlp"
expect 0 "$TG" dump mlp.tgraph --no-provenance
lacks out "provenance {"
lacks out "!p"
lacks out "# models.c"
has out "= linear(%x, %fc1.weight, %fc1.bias)"
expect 0 "$TG" dump mlp.tgraph --inline-all
lacks out "elided"
has out "%fc1.weight: f32[16,32] = param ["
expect 0 "$TG" dump branchy.tgraph
has out "guard decision %3[0] == 1 strict"

# ---- dot ----
expect 0 "$TG" dot pair.tgraph
has out 'digraph "main" {'
has out "input f32[2,3]"
expect 0 "$TG" dot pair.tgraph -o pair.dot
has pair.dot 'digraph "main" {'
expect 1 env PATH=/nonexistent "$TG" dot pair.tgraph -T svg -o pair.svg
has err "tracegraph dot: -T svg needs Graphviz, which is not installed"
has err "apt-get install graphviz"
expect 1 env PATH=/nonexistent "$TG" dot pair.tgraph -o pair.png
has err "-T png needs Graphviz"
# a stand-in for Graphviz's dot: checks -Tsvg, echoes the DOT it reads
mkdir fakebin
cat >fakebin/dot <<'SH'
#!/bin/sh
[ "$1" = "-Tsvg" ] || exit 9
if [ "$#" -eq 3 ] && [ "$2" = "-o" ]; then { echo "<svg>"; cat; } >"$3"; else echo "<svg>"; cat; fi
SH
chmod +x fakebin/dot
expect 0 env PATH="$tmp/fakebin:$PATH" "$TG" dot pair.tgraph -T svg -o fake.svg
has fake.svg "<svg>"
has fake.svg 'digraph "main" {'
expect 0 env PATH="$tmp/fakebin:$PATH" "$TG" dot pair.tgraph -o fake2.svg # -T from the name
has fake2.svg "<svg>"
expect 0 env PATH="$tmp/fakebin:$PATH" "$TG" dot pair.tgraph -T svg
has out "<svg>"
expect 1 env PATH="$tmp/fakebin:$PATH" "$TG" dot pair.tgraph -T png -o fake.png
has err "tracegraph dot: Graphviz ($tmp/fakebin/dot) failed (exit status 9)"
if command -v dot >/dev/null; then
    expect 0 "$TG" dot pair.tgraph -T svg -o pair.svg
    has pair.svg "<svg"
fi

# ---- run ----
expect 0 "$TG" run mlp.tgraph -i mlp_x.npy -o y.npy # by position
same y.npy mlp_y.npy
has out "y: f32[4,10] -> y.npy"
expect 0 "$TG" run mlp.tgraph -i x=mlp_x3.npy -o y=y3.npy # by name, another batch
same y3.npy mlp_y3.npy
expect 0 "$TG" run mlp.tgraph -i x=<(cat mlp_x.npy) -o ypipe.npy # from a pipe
same ypipe.npy mlp_y.npy
expect 0 "$TG" run mlp.tgraph --input=x=mlp_x.npy
has out "y: f32[4,10] = ["
has out "min "
expect 0 "$TG" run pair.tgraph -i b=pair_b.npy -i pair_a.npy -o prod=prod.npy -o sum.npy
same prod.npy pair_prod.npy
same sum.npy pair_sum.npy
expect 0 "$TG" run pair.tgraph -i pair_a.npy -i pair_b.npy -o sum2.npy
same sum2.npy pair_sum.npy
has out "prod: f32[2,3] = [" # not written: summarized
expect 0 "$TG" run mlp.tgraph -i mlp_x.npy -o y2.npy --threads 2
expect 2 "$TG" run mlp.tgraph -i mlp_x.npy --threads 1025
has err "tracegraph run: --threads wants an integer from 1 to 1024, not '1025'"
# --max-memory (replay_opts.max_memory): the traced shapes' arena plus the
# params must fit at compile; a larger batch that needs more fails at run
expect 1 "$TG" run mlp.tgraph -i mlp_x.npy --max-memory 1
has err "tracegraph run: replay: the traced shapes need "
has err "more than replay_opts.max_memory (1)"
need=$(sed -n 's/.*the traced shapes need \([0-9]*\) bytes (arena [0-9]* + params and constants [0-9]*).*/\1/p' err)
[ -n "$need" ] && [ "$need" -gt 1 ] && good || bad "--max-memory 1: no byte count in: $(cat err)"
expect 0 "$TG" run mlp.tgraph -i mlp_x.npy -o ymem.npy --max-memory "$need"
same ymem.npy mlp_y.npy
expect 1 "$TG" run mlp.tgraph -i mlp_x256.npy --max-memory "$need"
has err "tracegraph run: replay: these input shapes need "
has err "more than replay_opts.max_memory ($need)"
expect 0 "$TG" run mlp.tgraph -i mlp_x256.npy --max-memory 1G
expect 0 "$TG" run mlp.tgraph -i mlp_x.npy -o ymem2.npy --max-memory 4m
same ymem2.npy mlp_y.npy
expect 1 "$TG" run mlp.tgraph -i mlp_x.npy --max-memory 1k
has err "more than replay_opts.max_memory (1024)"
for size in 12X -5 1.5M "" 18446744073709551616 17179869184G 1MB; do
    expect 2 "$TG" run mlp.tgraph -i mlp_x.npy --max-memory "$size"
    has err "tracegraph run: --max-memory wants a size in bytes, with K, M or G for KiB, MiB or GiB (0: no limit), not '$size'"
done
expect 1 "$TG" bench mlp.tgraph --runs 2 --max-memory 1
has err "tracegraph bench: replay: the traced shapes need "
expect 0 "$TG" bench mlp.tgraph --runs 2 --warmup 0 --max-memory "$need"
expect 0 "$TG" run branchy.tgraph -i branchy_x.npy -o by.npy
same by.npy branchy_y.npy
# errors from replay, verbatim
expect 1 "$TG" run mlp.tgraph -i mlp_bad.npy
has err 'tracegraph run: replay: input "x" is f32[4,31], the plan takes f32[B,32]'
expect 1 "$TG" run mlp.tgraph -i x=mlp_int.npy
has err 'tracegraph run: replay: input "x" is i32[4,32], the plan takes f32[B,32]'
expect 3 "$TG" run branchy.tgraph -i branchy_other.npy
has err "tracegraph run: replay: guard failed: the decision at $site (guard 0: eager_bool of the gt result)"
# optimized, the guarded value is named as before in info and in the error
# (value ids are renumbered by every pass; the guard's number and site stay)
expect 0 "$TG" opt -O3 branchy.tgraph branchy3.tgraph
expect 0 "$TG" info branchy3.tgraph
has out "guard 0: strict decision of element 0 of the gt result == 1 at $site"
expect 3 "$TG" run branchy3.tgraph -i branchy_other.npy
has err "tracegraph run: replay: guard failed: the decision at $site (guard 0: eager_bool of the gt result)"
# a warn-policy guard that changed: exit 0, its message on stderr (once)
wsite=$(cat warnread_site.txt) # "make_model.c:LINE warnread"
expect 0 "$TG" run warnread.tgraph -i warnread_x.npy
lacks err "warn-policy"
expect 0 "$TG" run warnread.tgraph -i warnread_other.npy
has err "tracegraph: replay: warn-policy guard changed (the run went on; what the trace derived from the read may be wrong): the value read at $wsite (guard 0: eager_item / eager_get) took element 0 of the reduce_max result and recorded its exact value 2; replay read 5; "
has err "use eager_peek, which records nothing"
has err "(written once per session; replay_opts.guard_warn takes these messages instead)"
has out "y: f32[3] = ["
expect 0 "$TG" check warnread.tgraph -i warnread_other.npy
has err "warn-policy guard changed"
expect 0 "$TG" bench warnread.tgraph -i warnread_other.npy --runs 3 --warmup 1
[ "$(grep -c "warn-policy guard changed" err)" = 1 ] && good || bad "bench: the warning is not written exactly once"
expect 1 "$TG" run mlp.tgraph
has err "tracegraph run: missing input 'x' (f32[B,32]): give it with -i x=FILE.npy"
expect 1 "$TG" run pair.tgraph -i c=pair_a.npy
has err "tracegraph run: the graph has no input named 'c' (its inputs: a, b)"
expect 1 "$TG" run pair.tgraph -i a=pair_a.npy -i a=pair_b.npy
has err "input 'a' is given twice"
expect 1 "$TG" run mlp.tgraph -i mlp_x.npy -i mlp_x.npy
has err "too many inputs: the graph has 1 (x)"
expect 1 "$TG" run mlp.tgraph -i mlp_x.npy -o z=out.npy
has err "the graph has no output named 'z' (its outputs: y)"

# ---- many inputs and outputs (more than 64: no fixed cap in the tool) ----
# wide_I_O: I inputs x0.., O outputs y_k = x_(k mod I) + x_((k+1) mod I);
# make_model wrote x_i (wide_x<i>.npy) and the expected y_k (a plain loop).
wide_args() { # I O: -i for every input by position, -o for every output by name
    local i
    args=()
    for ((i = 0; i < $1; i++)); do args+=(-i "wide_x$i.npy"); done
    for ((i = $2 - 1; i >= 0; i--)); do args+=(-o "y$i=out_$1_$2_y$i.npy"); done
}
wide_outputs_match() { # I O: every written output equals the expected one
    local i ok=1
    for ((i = 0; i < $2; i++)); do
        cmp -s "out_$1_$2_y$i.npy" "wide_$1_$2_y$i.npy" || { ok=0; echo "  y$i differs"; }
    done
    [ $ok -eq 1 ] && good || bad "wide_$1_$2: outputs differ from the expected ones"
}
for io in "1 65" "2 200" "65 65" "65 1" "200 200"; do
    set -- $io
    w="wide_$1_$2.tgraph"
    expect 0 "$TG" info "$w"
    has out "input  x$(($1 - 1)): f32[2]"
    has out "output y$(($2 - 1)): f32[2]"
    [ "$(grep -c '^  output y' out)" -eq "$2" ] && good || bad "info $w lists $2 outputs"
    wide_args "$1" "$2"
    "$TG" run "$w" "${args[@]}" >out 2>err
    rc=$?
    grep -qE "Sanitizer|runtime error:" err && bad "sanitizer report from run $w"
    [ $rc -eq 0 ] && good || { bad "run $w: exit $rc"; sed 's/^/  | /' err | head; }
    [ "$(grep -c ' -> out_' out)" -eq "$2" ] && good || bad "run $w wrote $2 outputs"
    wide_outputs_match "$1" "$2"
    # outputs without -o are summarized, the others written
    "$TG" run "$w" "${args[@]:0:$((2 * $1))}" -o "y$(($2 - 1))=last.npy" >out 2>err
    [ $? -eq 0 ] && good || bad "run $w with one -o"
    same last.npy "wide_$1_$2_y$(($2 - 1)).npy"
    [ "$(grep -c ': f32\[2\] = \[' out)" -eq $(($2 - 1)) ] && good ||
        bad "run $w summarizes $(($2 - 1)) outputs"
    expect 0 "$TG" check "$w"
    has out "check: all $2 outputs within rtol"
    has out "  y$(($2 - 1)): f32[2]  max abs err 0"
    expect 0 "$TG" check "$w" "${args[@]:0:$((2 * $1))}" --rtol 0 --atol 0
    has out "check: all $2 outputs within rtol 0, atol 0"
    expect 0 "$TG" bench "$w" --runs 2 --warmup 1
    has out "2 runs after 1 warm-up"
    expect 0 "$TG" bench "$w" "${args[@]:0:$((2 * $1))}" --runs 2 --warmup 0
    has out "inputs from .npy"
done
expect 1 "$TG" run wide_2_200.tgraph -i wide_x0.npy -i wide_x1.npy -i wide_x2.npy
has err "too many inputs: the graph has 2 (x0, x1)"
wide_args 2 200
expect 1 "$TG" run wide_2_200.tgraph -i wide_x0.npy -i wide_x1.npy "${args[@]:4}" -o extra.npy
has err "too many outputs: the graph has 200 (y0, y1, y2,"
has err "...)" # the list is cut, not overflowed

# ---- NaN matches NaN, infinities match themselves (check) ----
expect 0 "$TG" check pair.tgraph -i pair_nan_a.npy -i pair_nan_b.npy --rtol 0 --atol 0
has out "sum: f32[2,3]  max abs err 0  max rel err 0  (atol 0)  ok"
has out "prod: f32[2,3]  max abs err 0  max rel err 0  (atol 0)  ok"
expect 0 "$TG" check pair.tgraph -i pair_nan_a.npy -i pair_nan_b.npy
has out "check: all 2 outputs within rtol 1e-05"
expect 0 "$TG" run pair.tgraph -i pair_nan_a.npy -i pair_nan_b.npy
has out "(2 NaN)"

# ---- names from the file are printed escaped, never raw ----
# esc.tgraph's names hold ESC sequences, BEL, a C1 CSI (c2 9b), a stray
# 0xff and a backslash; no raw control byte or invalid UTF-8 may come out.
raw_bytes() { # FILE: nonzero when FILE has ESC, BEL, 0x9b or 0xff
    LC_ALL=C grep -q "$(printf '[\033\007\233\377]')" "$1"
}
esc_ok() {
    raw_bytes out && bad "stdout of $* has raw control bytes" || good
    raw_bytes err && bad "stderr of $* has raw control bytes" || good
}
expect 0 "$TG" info esc.tgraph
esc_ok info
has out "trace g$(printf '\303\251')"'\xc0\xaf\xed\xa0\x80\x1b[2J: 1 nodes'
has out 'input  x\x1b[31mred\xff: f32[B\x1b[1m,3]'
has out 'output y\x1b]0;pwned\x07\x5c: f32[B\x1b[1m,3]'
has out 'dynamic dim B\x1b[1m (traced as 2)'
expect 0 "$TG" run esc.tgraph -i esc_x.npy
esc_ok run
has out 'y\x1b]0;pwned\x07\x5c: f32[2,3] = [2, 4, 6, 8, 10, 12]'
expect 0 "$TG" run esc.tgraph -i esc_x.npy -o esc_y.npy
esc_ok run -o
has out 'y\x1b]0;pwned\x07\x5c: f32[2,3] -> esc_y.npy'
expect 0 "$TG" check esc.tgraph
esc_ok check
has out '  y\x1b]0;pwned\x07\x5c: f32[2,3]  max abs err 0'
expect 0 "$TG" bench esc.tgraph --runs 2
esc_ok bench
expect 1 "$TG" run esc.tgraph
esc_ok run without inputs
has err "missing input 'x\\x1b[31mred\\xff' (f32[B\\x1b[1m,3])"
expect 1 "$TG" run esc.tgraph -i z=esc_x.npy
esc_ok run -i z=
has err 'the graph has no input named '"'z'"' (its inputs: x\x1b[31mred\xff)'
expect 1 "$TG" run esc.tgraph -i esc_x.npy -o z=esc_y.npy
has err 'the graph has no output named '"'z'"' (its outputs: y\x1b]0;pwned\x07\x5c)'
expect 1 "$TG" run esc.tgraph -i mlp_x.npy # the replay error quotes the input's name
esc_ok run with a wrong shape
has err 'replay: input "x\x1b[31mred\xff" is f32[4,32]'
expect 0 "$TG" dump esc.tgraph
esc_ok dump
expect 0 "$TG" dot esc.tgraph
esc_ok dot

# ---- OpenCL (PoCL in CI): devices, --backend opencl[:DEVICE], --device ----
if "$TG" devices 2> /dev/null | grep -q '^opencl:0  '; then
    expect 0 "$TG" devices
    has out "opencl:0  "
    has out "GEMM "
    TG_OPENCL_GEMM=own expect 0 "$TG" check mlp.tgraph --backend opencl --device 0 --rtol 1e-4 --atol 1e-5
    has out "replay (opencl, GEMM own, 1 thread)"
    TG_OPENCL_GEMM=own expect 0 "$TG" check mlp.tgraph --backend opencl:0 --rtol 1e-4 --atol 1e-5
    has out "replay (opencl, GEMM own, 1 thread)"
    # a device by a text of its description (the platform's name)
    plat=$("$TG" devices | sed -n 's/^opencl:0  \([A-Za-z]*\).*/\1/p')
    expect 0 "$TG" check mlp.tgraph --backend "opencl:$plat" --rtol 1e-4 --atol 1e-5
    expect 2 "$TG" check mlp.tgraph --backend opencl:0 --device 0
    has err "--backend 'opencl:0' names a device already; drop --device"
    # the CLBlast path on any device, and its name in devices
    TG_OPENCL_GEMM=clblast expect 0 "$TG" check mlp.tgraph --backend opencl --rtol 1e-4 --atol 1e-5
    has out "replay (opencl, GEMM clblast, 1 thread)"
    TG_OPENCL_GEMM=clblast expect 0 "$TG" devices
    has out "GEMM clblast (TG_OPENCL_GEMM)"
    TG_OPENCL_GEMM=cublas expect 0 "$TG" devices
    has err "TG_OPENCL_GEMM=cublas is not a GEMM path (auto, clblast, own); using "
    TG_OPENCL_GEMM=auto expect 0 "$TG" check mlp.tgraph --backend opencl --rtol 1e-4 --atol 1e-5
    has out "replay (opencl, GEMM auto, 1 thread)"
    # TG_OPENCL_PROFILE: device time per op, the costliest nodes with how each ran
    TG_OPENCL_GEMM=clblast TG_OPENCL_PROFILE=1 expect 0 "$TG" bench mlp.tgraph --backend opencl \
        --runs 2 --warmup 1
    has err "opencl profile ("
    has err "ms of device time per run"
    has err "(linear at "
    has err "[CLBlast]"
    has err "CLBlast calls, 0 copies/fills"
    TG_OPENCL_GEMM=own TG_OPENCL_TILE=gpu TG_OPENCL_PROFILE=1 expect 0 "$TG" bench mlp.tgraph \
        --backend opencl --runs 2 --warmup 1
    has err "[GPU tile]"
    has err "enqueued per run: "
    has err "kernel arguments per run: "
    has err " unchanged (skipped)"
    has err "host time enqueueing: "
    TG_OPENCL_GEMM=own TG_OPENCL_TILE=gpu TG_OPENCL_SPLITK=off TG_OPENCL_PROFILE=1 expect 0 \
        "$TG" bench mlp.tgraph --backend opencl --runs 2 --warmup 1
    has err "[GPU tile, K in one pass]"
    TG_OPENCL_SPLITK=maybe expect 1 "$TG" bench mlp.tgraph --backend opencl --runs 1
    has err 'TG_OPENCL_SPLITK="maybe": want auto, on, off or fixup'
    # default tolerance: at the output's scale (sums run in another order)
    expect 0 "$TG" check mlp.tgraph --backend opencl
    expect 0 "$TG" run mlp.tgraph -i mlp_x.npy --backend opencl -o ocl_y.npy
    expect 1 "$TG" run mlp.tgraph -i mlp_x.npy --backend opencl --device "no such device"
    has err 'replay: no device "opencl:no such device" (devices: opencl:0 = '
    expect 1 "$TG" run mlp.tgraph -i mlp_x.npy --backend opencl:99
    has err 'replay: no device "opencl:99" (devices: opencl:0 = '
    # bench: host-copy and device-resident runs, each with its times
    expect 0 "$TG" bench pair.tgraph -i pair_a.npy -i pair_b.npy --backend opencl --runs 3 --warmup 1
    has out "host-copy (inputs written to the device, outputs read back, each run):"
    has out "device-resident (inputs and outputs as buffers on the device, no host copies):"
    [ "$(grep -c "min .* ms  median .* ms  mean .* ms  max .* ms" out)" = 2 ] && good ||
        bad "bench --backend opencl: not two lines of times"
    expect 0 "$TG" bench mlp.tgraph --help
    has out "device-resident   inputs and outputs as buffers on the device"
else
    echo "SKIP (OpenCL part): tracegraph devices found no OpenCL platform"
    expect 0 "$TG" devices
    has out "opencl: no device (replay: opencl: "
fi
expect 2 "$TG" run mlp.tgraph -i mlp_x.npy --device 0
has err "--device picks a device of a backend: add --backend NAME (or give --backend NAME:DEVICE)"

# ---- bench ----
expect 0 "$TG" bench mlp.tgraph --runs 5 --warmup 1
for w in "min " "median " "mean " "max " "runs/s" "5 runs after 1 warm-up" "random inputs (seed 1)"; do
    has out "$w"
done
expect 0 "$TG" bench pair.tgraph -i pair_a.npy -i pair_b.npy --runs 3 --threads 2
has out "inputs from .npy"
has out "2 threads"
expect 3 "$TG" bench branchy.tgraph -i branchy_other.npy --runs 2
has err "guard failed: the decision at $site"

# ---- check ----
expect 0 "$TG" check mlp.tgraph
has out "y: f32[4,10]  max abs err 0  max rel err 0  (atol "
has out "check: all 1 outputs within rtol 1e-05, atol rtol x max |ref|"
expect 0 "$TG" check mlp.tgraph -i mlp_x3.npy --rtol 0 --atol 0 --seed 5
has out "y: f32[3,10]  max abs err 0  max rel err 0  (atol 0)  ok"
expect 0 "$TG" check pair.tgraph --seed 7
has out "sum: f32[2,3]  max abs err 0"
has out "prod: f32[2,3]  max abs err 0"
expect 0 "$TG" check branchy.tgraph -i branchy_x.npy
expect 3 "$TG" check branchy.tgraph -i branchy_other.npy
has err "guard failed: the decision at $site"

# ---- info on IDX data files (formats/idx.h), plain and gzip ----
printf '\0\0\10\1\0\0\0\6\3\1\3\0\3\11' >labels.idx # u8 [6]: 3 1 3 0 3 9
expect 0 "$TG" info labels.idx
has out "file labels.idx: IDX file, 14 bytes"
has out "  elements: u8[6], 6 of them"
has out "  values: min 0, max 9, mean 3.16667"
has out "  counts (4 distinct): 0=1 1=1 3=3 9=1"
if command -v gzip >/dev/null; then
    gzip -c labels.idx >train-labels-idx1-ubyte.gz
    expect 0 "$TG" info train-labels-idx1-ubyte.gz
    has out "IDX file, gzip-compressed: $(wc -c <train-labels-idx1-ubyte.gz) bytes, 14 decompressed"
    has out "  counts (4 distinct): 0=1 1=1 3=3 9=1"
    head -c 20 train-labels-idx1-ubyte.gz >cut.gz
    expect 1 "$TG" info cut.gz
    has err "tracegraph info: cut.gz: at file byte 20: the gzip stream is truncated"
fi
printf '\0\0\15\2\0\0\0\1\0\0\0\2\77\300\0\0\300\0\0\0' >f-ubyte # f32 [1,2]: 1.5 -2
expect 0 "$TG" info f-ubyte
has out "  elements: f32[1,2], 2 of them"
has out "  values: min -2, max 1.5, mean -0.25"
lacks out "counts"
head -c 12 labels.idx >cut.idx
expect 1 "$TG" info cut.idx
has err "tracegraph info: cut.idx: at byte 8: the data is truncated: [6] of u8 needs 6 bytes, the file has 4"
printf '\0\0\7\1' >type.idx
expect 1 "$TG" info type.idx
has err "tracegraph info: type.idx: at byte 2: unknown IDX element type 0x07"

# ---- missing and corrupt files ----
expect 1 "$TG" info nosuch.tgraph
has err "tracegraph info: nosuch.tgraph: cannot open: No such file or directory"
head -c 300 mlp.tgraph >cut.tgraph
expect 1 "$TG" info cut.tgraph
has err "tracegraph info: cut.tgraph:"
expect 1 "$TG" run cut.tgraph -i mlp_x.npy
has err "tracegraph run: cut.tgraph:"
cp mlp.tgraph flip.tgraph
byte=$(od -An -tu1 -j2000 -N1 flip.tgraph) # flip one bit of byte 2000
printf "\\$(printf %o $((byte ^ 4)))" | dd of=flip.tgraph bs=1 seek=2000 conv=notrunc 2>/dev/null
cmp -s flip.tgraph mlp.tgraph && bad "the bit flip changed nothing" || good
expect 1 "$TG" dump flip.tgraph
has err "tracegraph dump: flip.tgraph: "
expect 1 "$TG" check mlp_x.npy
has err "not a .tgraph file (bad magic)"
expect 1 "$TG" run mlp.tgraph -i nosuch.npy
has err "tracegraph run: nosuch.npy: cannot open: No such file or directory"
head -c 140 mlp_x.npy >cut.npy
expect 1 "$TG" run mlp.tgraph -i cut.npy
has err "tracegraph run: cut.npy: at byte 128: the data is truncated: shape (4, 32) of '<f4'"
expect 1 "$TG" run mlp.tgraph -i mlp.tgraph
has err "mlp.tgraph: not a .npy file (bad magic)"
expect 1 "$TG" run mlp.tgraph -i mlp_x.npy -o nodir/y.npy
has err "tracegraph run: nodir/y.npy: cannot write"

# ---- pipes, devices, directories (issue 29) ----
# A stream is read as a file is, only as far as its header declares, and
# judged by its first bytes: /dev/zero, or a FIFO that sends 8 bytes that
# are not the magic and stalls, fails at once.  `timeout`: a hang fails
# (exit 124) instead of blocking the test.  The stalled writers open their
# FIFO read-write (1<>), which never blocks, and are ended after.
expect 1 timeout 20 "$TG" run mlp.tgraph -i x=/dev/zero
has err "tracegraph run: /dev/zero: not a .npy file (bad magic)"
expect 1 timeout 20 "$TG" info /dev/zero
has err "tracegraph info: /dev/zero: not a .tgraph file (bad magic)"
expect 1 timeout 20 "$TG" run /dev/zero -i mlp_x.npy
has err "tracegraph run: /dev/zero: not a .tgraph file (bad magic)"
ln -s /dev/zero zero.onnx
expect 1 timeout 20 "$TG" info zero.onnx
has err "tracegraph info: zero.onnx: at byte 0: not an ONNX model (0x00 does not start a protobuf field)"
mkfifo stall.npy stall.tgraph stall.onnx
{ printf 'PK\003\004\024\000\000\000'; exec sleep 30; } 1<>stall.npy &
writer=$!
expect 1 timeout 20 "$TG" run mlp.tgraph -i x=stall.npy
has err "tracegraph run: stall.npy: not a .npy file (bad magic)"
kill $writer 2>/dev/null
{ printf 'PK\003\004\024\000\000\000'; exec sleep 30; } 1<>stall.tgraph &
writer=$!
expect 1 timeout 20 "$TG" info stall.tgraph
has err "tracegraph info: stall.tgraph: not a .tgraph file (bad magic)"
kill $writer 2>/dev/null
{ printf '\000\000\000\000\000\000\000\000'; exec sleep 30; } 1<>stall.onnx &
writer=$!
expect 1 timeout 20 "$TG" run stall.onnx
has err "tracegraph run: stall.onnx: at byte 0: not an ONNX model (0x00"
kill $writer 2>/dev/null
# a FIFO that sends a whole file works as the file (the writers are
# ended after, in case the command never opened their FIFO)
mkfifo fifo.tgraph fifo_x.npy
cat mlp.tgraph >fifo.tgraph &
w1=$!
cat mlp_x.npy >fifo_x.npy &
w2=$!
expect 0 timeout 20 "$TG" run fifo.tgraph -i x=fifo_x.npy -o yfifo.npy
same yfifo.npy mlp_y.npy
kill $w1 $w2 2>/dev/null
expect 0 timeout 20 "$TG" info <(cat mlp.tgraph)
has out "sections"
# a truncated file through a pipe, and a directory
expect 1 timeout 20 "$TG" run mlp.tgraph -i x=<(head -c 140 mlp_x.npy)
has err "at byte 128: the data is truncated: shape (4, 32) of '<f4' needs 512 bytes, the file has 12"
expect 1 timeout 20 "$TG" info <(head -c 1000 mlp.tgraph)
has err "bytes, the file has 1000 (truncated or extended)"
mkdir dir.npy dir.tgraph dir.onnx
expect 1 "$TG" run mlp.tgraph -i x=dir.npy
has err "tracegraph run: dir.npy: is a directory"
expect 1 "$TG" info dir.tgraph
has err "tracegraph info: dir.tgraph: is a directory"
expect 1 "$TG" info dir.onnx
has err "tracegraph info: dir.onnx: is a directory"

# ---- opt ----
expect 0 "$TG" opt --help
has out "--explain"
expect 0 "$TG" opt -O2 mlp.tgraph mlp.O2.tgraph --stats --explain --verify-each
has out "fold"
has out "memory: naive"
has out "verify-each: every pass kept the outputs"
has out "saved mlp.O2.tgraph"
expect 0 "$TG" check mlp.O2.tgraph -i mlp_x.npy --rtol 1e-4 --atol 1e-5
expect 0 "$TG" run mlp.O2.tgraph -i mlp_x.npy -o y_O2.npy
expect 0 "$TG" opt -O0 mlp.tgraph mlp.O0.tgraph
expect 0 "$TG" run mlp.O0.tgraph -i mlp_x.npy -o y_O0.npy
same y_O0.npy mlp_y.npy
expect 0 "$TG" opt -O1 --keep-params mlp.tgraph mlp.O1.tgraph
expect 0 "$TG" info mlp.O1.tgraph
has out "fc1.weight"
expect 2 "$TG" opt -O2 mlp.tgraph
expect 2 "$TG" opt -O7 mlp.tgraph out.tgraph
expect 1 "$TG" opt -O2 nosuch.tgraph out.tgraph

# ---- ONNX: convert, and every command on a .onnx ----
expect 0 "$TG" convert mlp.tgraph mlp.onnx
has out "mlp.tgraph -> mlp.onnx:"
expect 0 "$TG" info mlp.onnx
has out "file mlp.onnx: ONNX model, imported"
has out "constants: 4, 2792 bytes" # initializers: constants unless --params
expect 0 "$TG" dump mlp.onnx
has out "# models.c:" # call sites come back from the doc_strings
has out "model_mlp"
# MatMul + Add instead of linear: not byte for byte, within check's tolerance
expect 0 "$TG" run mlp.onnx -i mlp_x.npy -o y_onnx.npy
expect 0 "$TG" check mlp.onnx -i mlp_x3.npy
expect 0 "$TG" convert mlp.onnx mlp_back.tgraph --params --dim 5
has out "mlp.onnx -> mlp_back.tgraph:"
expect 0 "$TG" info mlp_back.tgraph
has out "fc1.weight"
expect 0 "$TG" opt -O3 mlp.onnx mlp.O3.tgraph
has out "saved mlp.O3.tgraph"
# opt imports as convert does: the traced size of a named dim, params kept
expect 0 "$TG" opt -O3 mlp.onnx mlp_d7.tgraph --dim 7 --params --keep-params
expect 0 "$TG" dump mlp_d7.tgraph
has out "sym B = 7"
expect 0 "$TG" info mlp_d7.tgraph
has out "param  fc1.weight"
expect 0 "$TG" check mlp_d7.tgraph -i mlp_x.npy --rtol 1e-4 --atol 1e-5
expect 2 "$TG" opt -O3 mlp.tgraph x.tgraph --dim 7
has err "--dim applies to an ONNX input"
expect 0 "$TG" check mlp.O3.tgraph -i mlp_x.npy --rtol 1e-4 --atol 1e-5
expect 0 "$TG" opt -O2 mlp.tgraph mlp.O2.onnx
expect 0 "$TG" check mlp.O2.onnx -i mlp_x.npy --rtol 1e-4 --atol 1e-5
# guards have no ONNX form: refused naming the read, or dropped on request
expect 1 "$TG" convert branchy.tgraph branchy.onnx
has err "$site"
[ -e branchy.onnx ] && bad "a refused export left branchy.onnx" || good
expect 0 "$TG" convert branchy.tgraph branchy.onnx --drop-guards
expect 2 "$TG" convert mlp.tgraph
has err "needs an input and an output file"
expect 2 "$TG" convert mlp.tgraph x.onnx --dim 0
expect 1 "$TG" info mlp_x.npy.onnx
printf 'not a protobuf' >bad.onnx
expect 1 "$TG" run bad.onnx
has err "bad.onnx"

checks_done
