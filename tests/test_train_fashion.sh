#!/usr/bin/env bash
# test_train_fashion.sh TRAIN_FASHION - examples/train_fashion.c end to end
# without the real data set: the test writes a small Fashion-MNIST-shaped
# data set (plain IDX files, 28x28 u8 images, u8 labels) where class c is a
# bright 7x7 block at its own place over noise, so that a model that trains
# at all tells the classes apart.  The MLP (3 eager steps, the 4th traced,
# the rest replayed at -O2) must reach 95% on the held-out images (it
# reaches 100%; chance is 10%, and the state after 4 steps gives far less),
# the checkpoint and the graph it writes must be there (the graph read back
# by tracegraph info), the CNN (batch norm, dropout) must train and
# evaluate through the same path, and a missing data set or a bad option
# must fail with its message and exit code.  Helpers: checks.sh.
set -u
BIN=${1:?usage: test_train_fashion.sh TRAIN_FASHION [TRACEGRAPH]}
TOOL=${2:-}
. "$(dirname "$0")/checks.sh"

# make_idx DIR SPLIT N SEED: DIR/SPLIT-images-idx3-ubyte, DIR/SPLIT-labels-idx1-ubyte.
make_idx() {
    perl -e '
        use integer;
        my ($dir, $split, $n, $s) = @ARGV;
        open(my $im, ">:raw", "$dir/$split-images-idx3-ubyte") or die "$dir: $!";
        open(my $lb, ">:raw", "$dir/$split-labels-idx1-ubyte") or die "$dir: $!";
        print $im pack("nCCNNN", 0, 8, 3, $n, 28, 28);
        print $lb pack("nCCN", 0, 8, 1, $n);
        for my $i (0 .. $n - 1) {
            my $c = ($i * 7 + $s) % 10;
            my @px;
            for (0 .. 783) {
                $s = ($s * 1103515245 + 12345) % 2147483648;
                push @px, ($s >> 16) % 96;
            }
            my ($r0, $c0) = (($c / 4) * 7 + 3, ($c % 4) * 7);
            for my $r ($r0 .. $r0 + 6) {
                $px[$r * 28 + $_] = 160 + $px[$r * 28 + $_] for $c0 .. $c0 + 6;
            }
            print $im pack("C*", @px);
            print $lb pack("C", $c);
        }' "$@"
}
mkdir data
make_idx data train 640 1
make_idx data t10k 200 2

# the MLP: 60 steps of 32, the last batch of the epoch wrapping around
expect 0 "$BIN" --data data --model mlp --batch 32 --epochs 3 --eager-steps 3 --lr 0.05 \
    --log-every 20 --save run.tgstate --save-graph step.tgraph
cp out mlp.out
has mlp.out "steps 1-3 eager, step 4 traced, then replayed at -O2"
has mlp.out "step    60/60  epoch 3"
has mlp.out "replay step: median"
has mlp.out "state after step 60 saved to run.tgstate"
acc=$(sed -n 's/^test accuracy: \([0-9.]*\) on 200 test images.*/\1/p' mlp.out)
if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a >= 0.95) }'; then good; else
    bad "the MLP's test accuracy is '$acc' (want >= 0.95)"
    sed 's/^/  | /' mlp.out
fi
[ -s run.tgstate ] && [ -s step.tgraph ] && good || bad "--save / --save-graph wrote nothing"
if [ -n "$TOOL" ]; then
    expect 0 "$TOOL" info step.tgraph
    has out "sgd_step=6"
fi

# the CNN: batch norm (training, then its running statistics) and dropout
expect 0 "$BIN" --data data --model cnn --batch 16 --steps 8 --eager-steps 2 --lr 0.05 \
    --log-every 4 --test-limit 50
has out "cnn (421738 parameters)"
has out "30 states"
has out "test accuracy: "

# errors: no data set (exit 1, saying what to install), bad options (exit 2)
expect 1 "$BIN" --data nowhere
has err "cannot load Fashion-MNIST's train split"
has err "apt-get install dataset-fashion-mnist"
expect 2 "$BIN" --data data --model rnn
has err "--model is mlp or cnn, not 'rnn'"
expect 2 "$BIN" --data data --steps 3 --save x.tgstate
has err "need a traced step"
expect 2 "$BIN" --data data --batch
has err "--batch takes a number"
checks_done
