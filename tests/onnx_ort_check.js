#!/usr/bin/env node
// onnx_ort_check.js - runs the cases test_onnx_export --ort-cases wrote in
// ONNX Runtime (the independent side of the ONNX export test) and compares
// each output with the reference interpreter's.
//
//   node tests/onnx_ort_check.js ORT_MODULE_DIR CASE_DIR
//
// ORT_MODULE_DIR is an installed onnxruntime-node package (tests/
// test_onnx_ort.sh installs the version bench/peers/ort pins); CASE_DIR
// holds manifest.txt, one line per case:
//   <case> <model> <nin> {<file> <dtype> <dims>} <nout> {<file> <dtype> <dims>}
// with raw little-endian data files, dtype f32/i64/i32/bool, dims "2x3"
// or "-" (0-d).  Inputs are fed in the model's input order, outputs
// compared in its output order.
//
// Session: graphOptimizationLevel 'all' (ORT rewrites the exported graph
// with its own fusions, so what is checked is the model's meaning, not
// one node-by-node execution), one intra-op thread.
//
// Comparison: dtype and dims equal; integers and bools exactly; floats by
// normalized error max|ort - ref| / max(max|ref|, 1e-6) <= TOL, NaN only
// where the reference has NaN.  TOL = 1e-4: both sides compute in f32 and
// differ only in summation order and in the math library (exp, erf, tanh
// within a few ulp; GEMM/conv accumulation over at most a few hundred
// terms).  Measured with ORT 1.30 on AVX-512: at most 6.6e-7 (conv2d_blk,
// which may run as Winograd here), 1.5e-7 on the models; 1e-4 leaves room
// for Winograd and other CPUs' kernels, while an exporter bug (a wrong pad
// order, a missing transpose, an off-by-one slice) gives errors of order
// 1e-1 or more.  The run prints each case's error and the worst ones.
//
// Prints one line per case and a summary; exits 1 if any case fails or
// cannot be loaded, 2 on bad usage or a missing ONNX Runtime.
'use strict';

const fs = require('fs');
const path = require('path');

const TOL = 1e-4;

const DTYPES = {
  f32: { ort: 'float32', Array: Float32Array, size: 4 },
  i64: { ort: 'int64', Array: BigInt64Array, size: 8 },
  i32: { ort: 'int32', Array: Int32Array, size: 4 },
  bool: { ort: 'bool', Array: Uint8Array, size: 1 },
};

function fail(msg, code) {
  process.stderr.write('onnx_ort_check: ' + msg + '\n');
  process.exit(code);
}

// One tensor of a manifest line: file, dtype, dims.
function parseTensor(dir, tok, i) {
  const dt = DTYPES[tok[i + 1]];
  if (!dt)
    throw new Error(`unknown dtype '${tok[i + 1]}'`);
  const dims = tok[i + 2] === '-' ? [] : tok[i + 2].split('x').map((d) => parseInt(d, 10));
  return { file: path.join(dir, tok[i]), dtype: tok[i + 1], dims };
}

function parseLine(dir, line) {
  const tok = line.trim().split(/\s+/);
  const c = { name: tok[0], model: path.join(dir, tok[1]), inputs: [], outputs: [] };
  let i = 2;
  for (const list of [c.inputs, c.outputs]) {
    const n = parseInt(tok[i++], 10);
    for (let k = 0; k < n; k++, i += 3)
      list.push(parseTensor(dir, tok, i));
  }
  if (i !== tok.length)
    throw new Error(`manifest line for ${c.name} has ${tok.length} fields, expected ${i}`);
  return c;
}

// The raw little-endian file as a typed array (this host is little-endian,
// as every platform ONNX Runtime's npm package ships for).
function readTensor(t) {
  const dt = DTYPES[t.dtype];
  const b = fs.readFileSync(t.file);
  const n = t.dims.reduce((a, d) => a * d, 1);
  if (b.byteLength !== n * dt.size)
    throw new Error(`${t.file} holds ${b.byteLength} bytes, not ${n} ${t.dtype}`);
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new dt.Array(copy.buffer);
}

// Compares one output (got: an ORT tensor; want: dtype and dims; ref: the
// data) within tol (default TOL); returns { ok, err, why }.  Also used by
// tests/difffuzz_ort.js.
// floor: the least scale the largest difference is divided by (1e-6 here:
// the export test's outputs are the interpreter's own; difffuzz_ort.js
// passes 1, see there).
function compare(got, want, ref, tol = TOL, floor = 1e-6) {
  const dt = DTYPES[want.dtype];
  if (got.type !== dt.ort)
    return { ok: false, why: `dtype ${got.type}, want ${dt.ort}` };
  const gd = Array.from(got.dims, Number);
  if (gd.length !== want.dims.length || gd.some((d, i) => d !== want.dims[i]))
    return { ok: false, why: `dims [${gd}], want [${want.dims}]` };
  const y = got.data;
  if (y.length !== ref.length)
    return { ok: false, why: `${y.length} elements, want ${ref.length}` };
  if (want.dtype !== 'f32') {
    for (let i = 0; i < ref.length; i++)
      if (y[i] !== ref[i])
        return { ok: false, why: `element ${i} is ${y[i]}, want ${ref[i]}` };
    return { ok: true, err: 0 };
  }
  let diff = 0, scale = floor;
  for (let i = 0; i < ref.length; i++) {
    if (Number.isNaN(ref[i]) || Number.isNaN(y[i])) {
      if (Number.isNaN(ref[i]) !== Number.isNaN(y[i]))
        return { ok: false, why: `element ${i} is ${y[i]}, want ${ref[i]}` };
      continue;
    }
    if (!Number.isFinite(ref[i]) || !Number.isFinite(y[i])) {
      if (y[i] !== ref[i])
        return { ok: false, why: `element ${i} is ${y[i]}, want ${ref[i]}` };
      continue;
    }
    diff = Math.max(diff, Math.abs(y[i] - ref[i]));
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  const err = diff / scale;
  return err <= tol ? { ok: true, err } : { ok: false, err, why: `normalized error ${err.toExponential(3)} > ${tol}` };
}

async function runCase(ort, c) {
  let sess;
  try {
    sess = await ort.InferenceSession.create(c.model, {
      graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
      executionMode: 'sequential',
    });
  } catch (e) {
    return { ok: false, why: 'ONNX Runtime cannot load it: ' + String(e.message || e).split('\n')[0] };
  }
  if (sess.inputNames.length !== c.inputs.length || sess.outputNames.length !== c.outputs.length)
    return { ok: false, why: `model has ${sess.inputNames.length} inputs / ${sess.outputNames.length} outputs, ` +
                             `the case ${c.inputs.length} / ${c.outputs.length}` };
  const feeds = {};
  c.inputs.forEach((t, k) => {
    feeds[sess.inputNames[k]] = new ort.Tensor(DTYPES[t.dtype].ort, readTensor(t), t.dims);
  });
  let res;
  try {
    res = await sess.run(feeds);
  } catch (e) {
    return { ok: false, why: 'run failed: ' + String(e.message || e).split('\n')[0] };
  }
  let worst = 0;
  for (let k = 0; k < c.outputs.length; k++) {
    const r = compare(res[sess.outputNames[k]], c.outputs[k], readTensor(c.outputs[k]));
    if (!r.ok)
      return { ok: false, why: `output ${k} (${sess.outputNames[k]}): ${r.why}` };
    worst = Math.max(worst, r.err);
  }
  if (sess.release)
    await sess.release();
  return { ok: true, err: worst };
}

async function main(argv) {
  if (argv.length !== 2)
    fail('usage: onnx_ort_check.js ORT_MODULE_DIR CASE_DIR', 2);
  let ort;
  try {
    ort = require(path.resolve(argv[0]));
  } catch (e) {
    fail(`cannot load onnxruntime-node from ${argv[0]}: ${e.message}`, 2);
  }
  const dir = argv[1];
  const lines = fs.readFileSync(path.join(dir, 'manifest.txt'), 'utf8').split('\n').filter((l) => l.trim());
  if (lines.length === 0)
    fail('the manifest lists no case', 1);
  const version = (ort.env && ort.env.versions && (ort.env.versions.node || ort.env.versions.common)) || '?';
  console.log(`ONNX Runtime ${version} (onnxruntime-node), ${lines.length} cases, tolerance ${TOL}`);
  let failed = 0;
  const worst = { op: { err: 0, name: '-' }, model: { err: 0, name: '-' } };
  for (const line of lines) {
    let c, r;
    try {
      c = parseLine(dir, line);
      r = await runCase(ort, c);
    } catch (e) {
      r = { ok: false, why: String(e.message || e) };
      c = c || { name: line.split(/\s+/)[0] };
    }
    if (!r.ok) {
      failed++;
      console.log(`FAIL ${c.name}: ${r.why}`);
      continue;
    }
    const kind = c.name.startsWith('model_') ? 'model' : 'op';
    if (r.err >= worst[kind].err)
      worst[kind] = { err: r.err, name: c.name };
    console.log(`ok   ${c.name}  err ${r.err.toExponential(2)}`);
  }
  console.log(`${lines.length - failed} of ${lines.length} cases match ONNX Runtime; worst normalized ` +
              `error: op cases ${worst.op.err.toExponential(2)} (${worst.op.name}), models ` +
              `${worst.model.err.toExponential(2)} (${worst.model.name})`);
  process.exitCode = failed ? 1 : 0;
}

module.exports = { DTYPES, TOL, compare };

if (require.main === module)
  main(process.argv.slice(2)).catch((e) => fail(String(e && e.stack ? e.stack : e), 1));
