# tracegraph - the two commands: `make demo` and `make test`.
# Both install missing Debian packages (scripts/deps.sh), configure and build.
#
#   make           build the library, tests, examples and benchmarks (build/)
#   make demo      the main job: eager example, trace + save model.tgraph,
#                  load + replay it in a fresh process, eager vs replay time
#   make test      plain build + ASan/UBSan build, each running the whole suite
#                  (the plain one three times: the CPU's kernels, then as on an
#                  AVX2 machine and as on one without AVX),
#                  an install check (installed headers compile alone, exported
#                  symbols = declared ones; find_package and pkg-config consumers),
#                  then every loader and the tool (fuzz_cli) fuzzed for a bounded time
#   make bench     run the benchmarks: micro-benchmarks, the workload suite
#                  and the same workloads in PyTorch (installs python3-torch)
#                  (bench/results/{latest,peers}.json, latest.{md,png}, the tables of
#                  docs/PERFORMANCE.md),
#                  then make bench-real
#   make bench-gemm  the GEMM roofline (issue 30): the MLP's and encoder's
#                  matrix products in GFLOP/s and % of the measured FMA peak
#                  at the ISA in use, 1 and 2 threads (bench/gemm_peak.c;
#                  bench/results/gemm.{json,md}); GEMM_FLAGS: its flags
#   make bench-real  real models (torchvision CNNs, ViT, a TransformerEncoder)
#                  imported -O0/-O3, checked against PyTorch, timed against
#                  ONNX Runtime (installs python3-torchvision and onnxruntime-node;
#                  bench/results/real.{json,md}, docs/PERFORMANCE.md table)
#   make bench-real-avx2  the same, both sides on their AVX2 code paths
#                  (bench/peers/as_avx2.sh masks CPUID; real-avx2.{json,md})
#   make bench-train  the training benchmark (issue 32): one training step of
#                  the MLP, the CNN and an encoder block, ours eager / replay
#                  -O0 / -O2 vs PyTorch eager, alternating rounds, 1 thread;
#                  arena vs naive; one Fashion-MNIST epoch's test accuracy vs
#                  PyTorch's (bench/train_compare.sh; bench/results/train.{json,md})
#   make bench-gpu the GPU benchmark (issue 20): the workloads on an OpenCL
#                  device (GPU_FLAGS=--device N), host-copy and device-resident,
#                  vs PyTorch CUDA eager and CUDA graphs where torch has CUDA
#                  (bench/results/gpu/gpu.{json,md}); make bench-gpu-bundle packs
#                  it for a machine without a build tree (bench/gpu/run.sh)
#   make fuzz      build the libFuzzer targets and run each FUZZ_SECONDS (scripts/fuzz.sh),
#                  then the differential fuzzer against ONNX Runtime: DIFFFUZZ_MODELS
#                  generated ONNX models (default 3000), seed DIFFFUZZ_SEED (default: the
#                  time, printed); findings kept in build/difffuzz-findings, each with the
#                  command that reproduces it (tests/difffuzz.sh, docs/ARCHITECTURE.md)
#   make install   cmake --install build (PREFIX=/usr/local)

BUILD    ?= build
ASAN     ?= build-asan
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 35
DIFFFUZZ_MODELS ?= 3000
DIFFFUZZ_SEED ?= $(shell date +%s)
CMAKE_FLAGS ?=
# The real data of the training demo and benchmark (issue 32): Fashion-MNIST
# as gzipped IDX files in /usr/share/datasets/fashion-mnist (formats/idx.h).
# `make test` does not need it: test_idx checks those files only where they are.
DATA_PKGS ?= dataset-fashion-mnist

.PHONY: all deps configure build asan demo test test-plain test-asan test-install test-fuzz bench bench-gemm bench-real bench-real-avx2 bench-train bench-gpu bench-gpu-bundle fuzz install clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

$(ASAN)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DTG_SANITIZE=ON $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

asan: deps $(ASAN)/CMakeCache.txt
	cmake --build $(ASAN) -j $(JOBS)

# The main job: eager example, then trace + save, then load + replay in a
# fresh process, printing eager vs replay time; then training on
# Fashion-MNIST (examples/train_fashion.c): the MLP for one epoch (938
# steps, about 4 s) and the CNN for 100 steps (about 11 s), each 5 steps
# eager, the 6th traced and the rest replayed at -O2, printing the loss,
# eager vs replay step time and the test accuracy.
demo: build
	@scripts/deps.sh $(DATA_PKGS)
	./$(BUILD)/example_eager_demo
	@echo
	cd $(BUILD) && ./example_trace_save model.tgraph
	@echo
	cd $(BUILD) && ./example_load_replay model.tgraph
	@echo
	./$(BUILD)/example_train_fashion --model mlp --epochs 1
	@echo
	./$(BUILD)/example_train_fashion --model cnn --steps 100 --log-every 25 --test-limit 2000

test: test-plain test-asan test-install test-fuzz
	@echo "make test: all suites passed"

# Every loader, the tool and the OpenCL backend fuzzed under ASan+UBSan for a bounded
# time (8 targets x TEST_FUZZ_SECONDS, 200 s in all, plus the build); any crash, leak
# or hang fails.
TEST_FUZZ_SECONDS ?= 25
test-fuzz: build
	scripts/fuzz.sh $(TEST_FUZZ_SECONDS) $(BUILD)

# The suite runs three times: with the kernels the CPU picks (AVX-512 or
# AVX2 where it has them, eager/isa.h), then as on an AVX2 machine and as on
# an x86-64 without AVX: our kernels at that level (TG_CPU) and oneDNN's
# capped there too (ONEDNN_MAX_CPU_ISA; tests/cpu_caps.h says what changes).
test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cd $(BUILD) && TG_CPU=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ctest --output-on-failure -j $(JOBS)
	cd $(BUILD) && TG_CPU=baseline ONEDNN_MAX_CPU_ISA=SSE41 ctest --output-on-failure -j $(JOBS)

# ASAN_OPTIONS: oneDNN's JIT and OpenMP runtime are fine under ASan; leaks
# are checked (detect_leaks=1) so every test must free what it makes.
test-asan: asan
	cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

test-install: build
	scripts/test_install.sh $(BUILD)

# The micro-benchmarks (dispatch, tracing, replay overhead, .tgraph
# loading, bench/scale up to SCALE_MAX nodes: docs/PERFORMANCE.md), then
# the workload suite (bench/suite.c, issue 6):
# bench/results/latest.json, then the same workloads in PyTorch on this
# machine (bench/peers/run.sh: installs python3-torch here only, never for
# `make test`; without it the peer columns say why they are missing):
# bench/results/peers.json.  Then the Markdown tables (latest.md, embedded
# in docs/PERFORMANCE.md between the bench markers) and chart (latest.png,
# gnuplot).
# The tables and chart are written even when the suite fails (replay
# differing from eager is a bug); make then fails.  SUITE_FLAGS: e.g.
# --quick, --workloads mlp,tiny, --threads 1.  PEER_FLAGS: flags of
# bench/peers/torch_workloads.py (--quick follows SUITE_FLAGS).
SUITE_FLAGS ?=
SCALE_MAX ?= 100000
PEER_FLAGS ?= --threads 1,2 $(filter --quick,$(SUITE_FLAGS))
bench: build
	@scripts/deps.sh gnuplot-nox $(DATA_PKGS)
	./$(BUILD)/eager_overhead
	./$(BUILD)/trace_overhead
	./$(BUILD)/replay_overhead
	./$(BUILD)/load
	./$(BUILD)/scale --max $(SCALE_MAX)
	@mkdir -p bench/results
	@st=0; mkdir -p $(BUILD)/bench-tgraph; \
	  rev=$$(git rev-parse --short HEAD 2>/dev/null) && \
	    { git diff --quiet HEAD -- . ':!bench/results' ':!docs/PERFORMANCE.md' || rev="$$rev+changes"; }; \
	  ./$(BUILD)/suite --out bench/results/latest.json --save-dir $(BUILD)/bench-tgraph \
	    $${rev:+--commit $$rev} $(SUITE_FLAGS) || st=$$?; \
	  bench/peers/run.sh bench/results/peers.json $(PEER_FLAGS) --tgraph-dir $(BUILD)/bench-tgraph \
	    --suite-json bench/results/latest.json --tracegraph $(BUILD)/tracegraph; \
	  bench/table.sh bench/results/latest.json bench/results/latest.md docs/PERFORMANCE.md && \
	  bench/plot.sh bench/results/latest.json bench/results/latest.png && exit $$st
	@$(MAKE) --no-print-directory bench-real || \
	  echo "bench: make bench-real failed (above); the other results stand" >&2
	@$(MAKE) --no-print-directory bench-train || \
	  echo "bench: make bench-train failed (above); the other results stand" >&2

# The real models of issue 17 (bench/real/run.sh): torchvision's CNNs and
# vit_b_16 at random weights (BatchNorm statistics set from the model's own
# batches) and a TransformerEncoder, exported by PyTorch at bench time into
# REAL_DIR (default /tmp/tracegraph-real), imported with tracegraph opt -O0
# and -O3, checked against PyTorch's output and timed against ONNX Runtime
# on the same .onnx, alternating rounds, 1 and 2 threads (about 15 minutes
# on 2 cores).  The table: bench/results/real.md, and docs/PERFORMANCE.md
# between the real-models markers.  REAL_FLAGS: flags and models of
# bench/real/run.py, e.g. --threads 1 --rounds 2 resnet18 mobilenet_v2.
# Like the peers, it does not fail `make bench` (PyTorch or npm may be out
# of reach); run alone, a failed install fails it.
REAL_FLAGS ?=
bench-real: build
	bench/real/run.sh $(BUILD)/tracegraph $(REAL_FLAGS)

# The same, as on an AVX2-only CPU (issue 30), on any x86-64 machine with
# CPUID faulting (Intel, or a KVM guest): bench/peers/as_avx2.sh hides
# AVX-512, AMX and AVX-VNNI from every process, ONNX Runtime's MLAS
# included, so both sides run their AVX2 code paths on this core
# (bench/results/real-avx2.{json,md}, the real-models-avx2 section of
# docs/PERFORMANCE.md).
bench-real-avx2: build
	bench/peers/as_avx2.sh env REAL_OUT=$(CURDIR)/bench/results/real-avx2 REAL_MARK=real-models-avx2 \
	  bench/real/run.sh $(BUILD)/tracegraph $(REAL_FLAGS)

# The training benchmark of issue 32 (bench/train_compare.sh): bench/train.c
# (eager, replay -O0 and -O2 of the traced step) and
# bench/peers/train_torch.py (PyTorch eager, same initial weights) in
# alternating rounds, then one Fashion-MNIST epoch of the MLP on each side;
# the table goes to bench/results/train.md (docs/PERFORMANCE.md, "Training",
# quotes it).  Fails when replay's loss differs from eager's (a bug) or a
# side fails; like the peers, it does not fail `make bench`.  TRAIN_FLAGS:
# e.g. --rounds 3 --steps 5 --models mlp,cnn --no-epoch.
TRAIN_FLAGS ?=
bench-train: build
	bench/train_compare.sh $(BUILD) $(TRAIN_FLAGS)

# The GEMM roofline of issue 30 (bench/gemm_peak.c): the MLP's and the
# encoder's GEMM shapes through eager, replay and (when installed: the
# deps.sh line below tries, and a failure only drops its column) OpenBLAS's
# cblas_sgemm, GFLOP/s and % of this core's FMA peak measured at the ISA in
# use (TG_CPU=avx2 ONEDNN_MAX_CPU_ISA=AVX2 make bench-gemm: the AVX2 path).
# GEMM_FLAGS: e.g. --threads 1 --shapes mlp --runs 51; --blas libblis.so.4
# puts BLIS in the blas column (OpenBLAS is taken first when both are there).
GEMM_FLAGS ?=
bench-gemm: build
	@-scripts/deps.sh libopenblas0-openmp libblis4-openmp >/dev/null 2>&1
	@mkdir -p bench/results
	./$(BUILD)/gemm_peak --json bench/results/gemm.json --md bench/results/gemm.md $(GEMM_FLAGS)

# The GPU benchmark of issue 20 (bench/gpu/run.sh): the workloads on one
# OpenCL device, CPU eager vs OpenCL replay -O0..-O3, host-copy and
# device-resident, checked against the CPU replay, next to PyTorch CUDA
# eager and CUDA graphs where torch has CUDA (rounds alternating);
# bench/results/gpu/gpu.{json,md}, the table printed last.  GPU_FLAGS: e.g.
# --device 1, --quick, --workloads mlp,tiny, --rounds 5.
# bench-gpu-bundle: the same as a bundle for a machine without a build tree
# (GPU_BUNDLE, default .gpu; ../shared/gpu/bundle.sh packs the programs and
# their libraries; the scripts are copied beside them), then run there:
#   GPU_BUNDLE/bench/gpu/run.sh --quick --device 0
GPU_FLAGS ?=
GPU_BUNDLE ?= .gpu
GPU_BUNDLE_SH ?= ../shared/gpu/bundle.sh
bench-gpu: build
	bench/gpu/run.sh $(GPU_FLAGS)

bench-gpu-bundle: build
	$(GPU_BUNDLE_SH) $(GPU_BUNDLE) $(BUILD)/gpu_bench $(BUILD)/tracegraph
	mkdir -p $(GPU_BUNDLE)/bench/gpu $(GPU_BUNDLE)/bench/peers
	cp bench/gpu/run.sh bench/gpu/merge.py bench/gpu/ab.sh bench/gpu/ab.py $(GPU_BUNDLE)/bench/gpu/
	cp bench/peers/torch_cuda.py bench/peers/torch_workloads.py $(GPU_BUNDLE)/bench/peers/

fuzz: build
	scripts/fuzz.sh $(FUZZ_SECONDS) $(BUILD)
	DIFFFUZZ_FINDINGS=$(BUILD)/difffuzz-findings OMP_NUM_THREADS=1 TG_COST_RATES=builtin \
	  tests/difffuzz.sh $(BUILD)/difffuzz --seed $(DIFFFUZZ_SEED) --models $(DIFFFUZZ_MODELS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN) build-fuzz
