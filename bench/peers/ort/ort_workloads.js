#!/usr/bin/env node
// ort_workloads.js - times one ONNX model in ONNX Runtime on this machine,
// for the peer table of issue 6 (called by torch_workloads.py, which
// exports each PyTorch workload to ONNX and writes its input and its eager
// output as raw float32 files).
//
//   node bench/peers/ort/ort_workloads.js MODEL.onnx X.bin DIMS REF.bin THREADS RUNS BUDGET_MS
//
// DIMS: the input's shape, comma-separated (64,784).  ONNX Runtime comes
// from the npm package onnxruntime-node (pinned in package.json beside this
// file, installed into node_modules here by bench/peers/run.sh with
// `npm ci --ignore-scripts`: the CPU build is in the package; its install
// script would only fetch CUDA parts).
//
// Session: graph optimizations "all" (ORT_ENABLE_ALL: constant folding,
// conv/bn and GELU/LayerNorm/attention fusions, NCHWc layouts), THREADS
// intra-op threads, one inter-op thread, sequential execution: the issue's
// "ONNX Runtime, all optimizations".  A run is one call of the binding's
// synchronous run (what the public InferenceSession.run wraps in a
// setImmediate), inputs and outputs crossing N-API as a Python user's
// session.run would cross its binding.  Timing as bench/suite.c: warm-up
// (>= 5 runs and >= 20 ms), then runs until >= RUNS and BUDGET_MS spent,
// at most 5000; median, min, max.  The output is compared with REF
// (max |ort - ref| / max |ref|, as suite.c).
//
// Prints one JSON object on stdout:
//   {"ok", "error", "version", "prepare_ms" (session creation, optimization
//    included), "ort_ms": {"median", "min", "max", "runs"},
//    "max_abs_err", "max_rel_err"}
// and exits 0, or 1 with "ok": false and "error" saying why.
'use strict';

const fs = require('fs');

const MAX_RUNS = 5000;

function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

function sig(x) {
  return x === null || !Number.isFinite(x) ? null : Number(x.toPrecision(6));
}

function readF32(path) {
  const b = fs.readFileSync(path);
  const out = new Float32Array(b.byteLength / 4);
  new Uint8Array(out.buffer).set(b);
  return out;
}

function stats(times) {
  const t = times.slice().sort((a, b) => a - b);
  const n = t.length;
  const med = n % 2 ? t[(n - 1) / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  return { median: sig(med), min: sig(t[0]), max: sig(t[n - 1]), runs: n };
}

function main(argv) {
  const res = { ok: false, error: '', version: null, prepare_ms: null, ort_ms: null,
                max_abs_err: null, max_rel_err: null };
  if (argv.length !== 7) {
    res.error = 'usage: ort_workloads.js MODEL.onnx X.bin DIMS REF.bin THREADS RUNS BUDGET_MS';
    return res;
  }
  const [model, xPath, dimsText, refPath] = argv;
  const threads = parseInt(argv[4], 10), minRuns = parseInt(argv[5], 10);
  const budgetMs = parseFloat(argv[6]);
  const dims = dimsText.split(',').map((d) => parseInt(d, 10));
  if (!(threads >= 1) || !(minRuns >= 1) || !(budgetMs >= 0) || dims.some((d) => !(d >= 0))) {
    res.error = 'bad THREADS, RUNS, BUDGET_MS or DIMS: ' + argv.slice(2).join(' ');
    return res;
  }
  let ort, binding, initOrt;
  try {
    ort = require('onnxruntime-node');
    ({ binding, initOrt } = require('onnxruntime-node/dist/binding'));
  } catch (e) {
    res.error = 'onnxruntime-node is not installed (bench/peers/run.sh installs it): ' + e.message;
    return res;
  }
  res.version = ort.env.versions.node || ort.env.versions.common || null;
  const x = readF32(xPath), ref = readF32(refPath);
  if (x.length !== dims.reduce((a, b) => a * b, 1)) {
    res.error = `${xPath} holds ${x.length} floats, not ${dimsText}`;
    return res;
  }
  const opts = { graphOptimizationLevel: 'all', intraOpNumThreads: threads,
                 interOpNumThreads: 1, executionMode: 'sequential' };
  let t0 = nowMs();
  initOrt();
  const sess = new binding.InferenceSession();
  sess.loadModel(model, opts);
  res.prepare_ms = sig(nowMs() - t0);
  const inName = sess.inputMetadata[0].name, outName = sess.outputMetadata[0].name;
  const feeds = { [inName]: new ort.Tensor('float32', x, dims) };
  const fetches = { [outName]: null };
  const run = () => sess.run(feeds, fetches, {});

  for (let i = 0, w0 = nowMs(); i < 5 || nowMs() - w0 < 20; i++)
    run();
  const times = [];
  t0 = nowMs();
  while (times.length < MAX_RUNS && (times.length < minRuns || nowMs() - t0 < budgetMs)) {
    const s = nowMs();
    run();
    times.push(nowMs() - s);
  }
  res.ort_ms = stats(times);

  const y = run()[outName].data;
  if (y.length !== ref.length) {
    res.error = `output has ${y.length} elements, the reference ${ref.length}`;
    return res;
  }
  let diff = 0, scale = 0, nanMismatch = false;
  for (let i = 0; i < y.length; i++) {
    if (Number.isNaN(y[i]) !== Number.isNaN(ref[i])) nanMismatch = true;
    if (Number.isNaN(ref[i])) continue;
    diff = Math.max(diff, Math.abs(y[i] - ref[i]));
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  if (!nanMismatch) {
    res.max_abs_err = sig(diff);
    res.max_rel_err = sig(diff === 0 ? 0 : diff / (scale > 0 ? scale : 1e-30));
  }
  res.ok = !nanMismatch;
  if (nanMismatch)
    res.error = 'NaN where the PyTorch output has none (or the reverse)';
  return res;
}

let out;
try {
  out = main(process.argv.slice(2));
} catch (e) {
  out = { ok: false, error: String(e && e.message ? e.message : e).split('\n')[0] };
}
process.stdout.write(JSON.stringify(out) + '\n');
process.exitCode = out.ok ? 0 : 1;
