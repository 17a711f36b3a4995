#!/usr/bin/env node
// difffuzz_ort.js - the ONNX Runtime side of the differential fuzzer
// (tests/difffuzz.sh): runs every model of a batch in onnxruntime-node,
// compares with what ours wrote, classifies each model and prints the
// summary.
//
//   node tests/difffuzz_ort.js ORT_MODULE_DIR DIR
//
// DIR holds models.txt (tools/difffuzz/model.h: one model a line with its
// inputs) and ours.txt (tools/difffuzz/difffuzz.c: per model and variant
// O0, O3, O0alt, O3alt "ok" with the outputs, "refuse <stage>: <message>",
// or, written by difffuzz.sh, "crash"/"hang").  Session as
// tests/onnx_ort_check.js: graphOptimizationLevel 'all', one intra-op
// thread; outputs compared with its compare(): dtype and dims equal,
// integers and bools exactly, floats by normalized error <= TOL.
//
// Each variant of ours against ORT at the same size (traced, or alt for
// the dynamic dim's other size):
//   both run and agree            agree
//   they differ, where ORT shows a NaN reaching one of its
//   NAN_UNDEFINED nodes           "differ only past NaN" (NAN_REASON)
//   both refuse                   both refuse
//   ours refuses, ORT runs        "us only" when the message is one of
//                                 INTENTIONAL (documented refusals, by
//                                 reason), else a finding
//   ours runs, ORT refuses        a finding (we accept what ORT refuses)
//                                 unless ORT's message is one of
//                                 ORT_LIMITS (ORT lacks the kernel)
//   they disagree, ours crashed or hung       a finding, unless the
//                                 values agree with ORT run again with its
//                                 graph optimizations off (an ORT fusion
//                                 that changes the answer: counted as agree,
//                                 and listed apart)
// A model counts once, as its worst variant (finding > us only > both
// refuse > NaN > agree).  Writes DIR/findings.txt ("<idx> <label> <why>") and
// prints the summary line:
//   difffuzz: N models, A agree, B both refuse, C refused by us only (...), D differ only past NaN in ORT's max/min, F findings
// Exits 1 if F > 0 (or nothing was compared), 2 on bad usage.
'use strict';

const fs = require('fs');
const path = require('path');
const { DTYPES, compare } = require('./onnx_ort_check.js');

// Looser than the export test's 1e-4: random attributes reach cubic
// resize, 3-D convolutions over a few hundred terms and LogSumExp, where
// f32 summation order alone moves the result by ~1e-5 of its scale.
const TOL = Number(process.env.DIFFFUZZ_TOL || 1e-3);
// The scale a difference is measured against is at least 1: the generated
// inputs are of order 1, and an output that cancels to about 0 (a layer
// norm over equal values: ours exactly 0, ORT 2e-5 off after its 1/sqrt(eps)
// of 31, seed 11003 model 1405; a product summing to 0 ulp-exactly, 7504/2565)
// is compared by its absolute error, where dividing by its own size made
// rounding a finding.  A wrong answer is off by the order of the data.
const FLOOR = Number(process.env.DIFFFUZZ_FLOOR || 1);

// Our documented refusals of what ONNX Runtime runs (formats/onnx.h,
// "Ops" and "dtypes"), by reason.  Anything else ours refuses is a finding.
const INTENTIONAL = [
  [/must be a constant known at load time/, 'operand must be a load-time constant (folded-only ops, attribute operands)'],
  [/specialized on the traced sizes/, 'node specialized on the traced sizes, run at another size'],
  [/dtype \w+ (is )?not supported|: \w+\[[^\]]*\]: dtype/, 'dtype not supported by the op'],
  [/subscript '.' twice in operand \d+ \(a diagonal\) is not supported/, 'Einsum diagonal'],
  [/Upsample mode 'linear' is not supported/, 'Upsample linear'],
  [/tf_crop_and_resize/, 'Resize tf_crop_and_resize'],
  [/needs a start pad of -?\d+: negative pads are not supported/, 'ConvTranspose negative start pad'],
  [/repeats\[\d+\] = 0 \(an empty result\) is not supported/, 'Tile repeats 0'],
  [/dilations other than 1 (in H and W )?are not supported/, 'pool H/W dilations'],
  [/before opset 13 \(2-D coercion\) is supported only as the last dim/, 'Softmax before opset 13 off the last axis'],
  [/Upsample-\d+ takes scales >= 1 only/, "Upsample scales < 1 (its spec's and ORT's kernel's limit; ORT passes only a Shape of it)"],
  [/output size -?\d+x-?\d+ <= 0: padded input \d+x\d+ is smaller than the effective kernel/, "pool window past the input at the run's size (the spec's size <= 0; ORT's truncated division gives 1)"],
  [/window is larger than the padded input by less than the stride/, "pool window past the input by less than a stride (the spec's 0 windows, ORT's truncated 1)"],
  [/has size 0: there is no element to resize it to/, "Resize of an axis of size 0 to more (ORT's kernel refuses it too, 'Input dim is zero'; only a Shape of it passes ORT)"],
  [/has size 0: \w+ over no element is not supported/, "ArgMax/ArgMin/ReduceMax/ReduceMin over an empty axis (ORT's answer has the wrong shape)"],
  // an index out of range is an error by the spec (Gather: 'It is an error
  // if any of the index values are out of bounds'); ORT runs one whose
  // result only a Shape reads (seed 14001 model 2356: Gather(y, [-4, 2])
  // of a [1,1] y under a Shape, optimized or not)
  [/index -?\d+ out of range for axis/, "an index out of range (an error by the spec; ORT passes one whose result only a Shape reads)"],
  [/ceil_mode 1 over a dynamic dim is not supported/, 'pool ceil_mode 1 over a dynamic dim (its window count varies with the size)'],
  // Concat's inputs must agree off the axis (the spec); ORT skips an empty
  // input before checking it (seed 12003 model 774: [7,3,3,1] and [6,3,0,1])
  [/concat: (?=[^:]*(?:\[0[,\]]|,0[,\]]))[^:]*: input \d+ differs from input \d+ in dim/, "Concat inputs that differ off the axis, one of them empty (invalid by the spec; ORT skips the empty one)"],
];

// ORT's own limits (it lacks a kernel for the type, or the op at that
// opset): ours running such a model is not a finding.
const ORT_LIMITS = [
  [/ONNX Runtime crashed/, 'ORT crashed or hung (signal 11 or 8 inside onnxruntime-node, or stopped after DIFFFUZZ_MODEL_SECONDS)'],
  [/Could not find an implementation for/, 'ORT has no kernel for the op and type'],
  [/NOT_IMPLEMENTED/, 'ORT: not implemented'],
  [/Dilation not supported for AutoPadType::SAME/, 'ORT: Conv dilations with SAME auto_pad'],
  [/'(Cubic|Linear)' mode only supports/, 'ORT: linear/cubic Resize only on the inner 2 (or 3) dims'],
  [/Invalid input shape\. Only N can be zero/, 'ORT: pools over a 0-size channel or spatial dim'],
  // ConvTranspose of an input with a spatial dim of 0: the output size
  // formula, stride * (0 - 1) + the dilated kernel + output_padding - the
  // pads, is positive and every output is the bias (a sum over no input);
  // ORT recomputes the input size from it and refuses (seed 11002 model 1932)
  [/Computed output shape is inconsistent with input spatial dimensions.*but got 0\./, 'ORT: ConvTranspose over a 0-size spatial dim'],
  // an internal check of ORT's own failing (seed 14003 model 898: a
  // ConvTranspose after a Slice, 'dims[d_i] < d_max was false')
  [/math_cpu\.cc:\d+ bool onnxruntime::math::NextPosition/, "ORT: an internal check of its im2col (math::NextPosition) fails"],
  [/padding values must be non-negative/, 'ORT: SAME auto_pad with a stride over the window (negative total pad)'],
  [/clip_internal::Clip_6Base/, 'ORT: Clip-6 min > max'],
  [/Size of X\.shape\[axis:\] must be at least 1/, 'ORT: LayerNormalization over 0 elements'],
  [/Unexpected mode of 3/, "ORT: Pad's wrap mode missing from the kernel it picked"],
  [/ReorderOutput.*invalid channel count/, "ORT: its NCHWc layout pass's shape inference"],
  [/Invalid num_outputs value of \d+\. Size of dimension being split is 0/, 'ORT: Split num_outputs of a 0-size dim'],
  // ONNX MatMul broadcasts as numpy.matmul, where a 0-size batch dim (or
  // M, when B is 1-D and ORT makes it a batch dim) meets 1 as 0: [0,1] @ [1]
  // is [0], [0,0,3,2] @ [1,0,2,6] is [0,0,3,6].  ORT's MatMulComputeHelper
  // takes max(0, 1) = 1 as the output dim, then finds 0 cannot broadcast
  // to it.  A true mismatch (2 vs 3) ours refuses too (graph/infer_linalg.c,
  // "batch dims ... do not broadcast"), so it is "both refuse", not this.
  [/matmul_helper\.h:\d+ Compute (left|right) operand cannot broadcast on dim/, 'ORT: MatMul broadcasts a 0-size batch dim against 1 as 1 (numpy.matmul gives 0)'],
  [/Name:'gemm_output_reshape'/, "ORT: the reshape of its MatMul+Add to Gemm fusion (a 0-size product)"],
];

function fail(msg, code) {
  process.stderr.write('difffuzz_ort: ' + msg + '\n');
  process.exit(code);
}

function dimsOf(s) {
  return s === '-' ? [] : s.split('x').map((d) => parseInt(d, 10));
}

function readData(file, dtype, dims) {
  const dt = DTYPES[dtype];
  const b = fs.readFileSync(file);
  const n = dims.reduce((a, d) => a * d, 1);
  if (b.byteLength !== n * dt.size)
    throw new Error(`${file} holds ${b.byteLength} bytes, not ${n} ${dtype}`);
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new dt.Array(copy.buffer);
}

function parseModels(dir) {
  const models = [];
  for (const line of fs.readFileSync(path.join(dir, 'models.txt'), 'utf8').split('\n')) {
    const t = line.trim().split(/\s+/);
    if (t.length < 4)
      continue;
    const m = { idx: +t[0], label: t[1], altN: +t[2], inputs: [] };
    for (let k = 0, i = 4; k < +t[3]; k++, i += 3)
      m.inputs.push({ dtype: t[i], dims: dimsOf(t[i + 1]), dyn: t[i + 2] === '1' });
    models.push(m);
  }
  return models;
}

// ours.txt as idx -> variant -> { ok, outputs | why }.
function parseOurs(dir) {
  const ours = new Map();
  const file = path.join(dir, 'ours.txt');
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  for (const line of text.split('\n')) {
    const t = line.split(' ');
    if (t.length < 3)
      continue;
    const idx = +t[0];
    if (!ours.has(idx))
      ours.set(idx, {});
    const r = ours.get(idx);
    if (t[2] === 'ok') {
      const outs = [];
      for (let k = 0, i = 4; k < +t[3]; k++, i += 3)
        outs.push({ name: t[i], dtype: t[i + 1], dims: dimsOf(t[i + 2]) });
      r[t[1]] = { ok: true, outputs: outs };
    } else {
      r[t[1]] = { ok: false, kind: t[2], why: t.slice(3).join(' ') };
    }
  }
  return ours;
}

// ort_crashed.txt (difffuzz.sh): the models ONNX Runtime itself crashed
// on, which are not run again; ORT's crash counts as its refusal.
function parseOrtCrashes(dir) {
  const file = path.join(dir, 'ort_crashed.txt');
  const m = new Map();
  if (fs.existsSync(file))
    for (const line of fs.readFileSync(file, 'utf8').split('\n'))
      if (line.trim())
        m.set(parseInt(line, 10), { ok: false, why: 'ONNX Runtime crashed or hung (model ' + line.trim() + ')', crashed: true });
  return m;
}

function firstLine(e) {
  return String((e && e.message) || e).split('\n')[0];
}

// ORT's CPU kernels of these ops give no defined answer for NaN (measured
// on 1.30): MaxPool keeps the window's largest non-NaN (-FLT_MAX for an
// all-NaN window in 1-D, NaN in 2-D), GlobalMaxPool too, ReduceMax and
// ReduceMin start from the first element and skip every later NaN, and
// TopK puts NaN where its heap happens to leave it; ArgMax and ArgMin
// take a NaN only in the first place (a row [0.71, NaN, 1.09, NaN] gives
// ArgMin 0 where numpy.argmin gives 1: seed 9003 model 1498), and Hardmax
// with them (a [NaN] row is all zeros, no 1 at all: 9003/1273, 9004/1890).
// Ours propagates NaN as NumPy (the ONNX reference) and PyTorch do
// (docs/OPS.md), as ORT's own Max, Min, Relu, Clip and Softmax do.  A model whose
// outputs differ is judged "NaN in ORT's max/min" only when ORT itself
// shows a NaN reaching the data input of one of these nodes: the model is
// run again with those inputs as extra outputs (probeModel).
const NAN_UNDEFINED = new Set(['MaxPool', 'GlobalMaxPool', 'ReduceMax', 'ReduceMin', 'TopK',
                               'ArgMax', 'ArgMin', 'Hardmax']);
const NAN_REASON = "ORT's MaxPool/GlobalMaxPool/ReduceMax/ReduceMin/TopK/ArgMax/ArgMin/Hardmax drop NaN by position (ours propagates it)";

function readVarint(b, p) {
  let v = 0, m = 1, x;
  do {
    x = b[p++];
    v += (x & 0x7f) * m;
    m *= 128;
  } while (x & 0x80);
  return [v, p];
}

// The fields of one protobuf message in b[s, e): { f, s, e } for the
// length-delimited ones (the only ones read here).
function* pbFields(b, s, e) {
  for (let p = s; p < e;) {
    let k, n;
    [k, p] = readVarint(b, p);
    const w = k & 7;
    if (w === 0)
      [, p] = readVarint(b, p);
    else if (w === 1)
      p += 8;
    else if (w === 5)
      p += 4;
    else if (w === 2) {
      [n, p] = readVarint(b, p);
      yield { f: Math.floor(k / 8), s: p, e: p + n };
      p += n;
    } else
      throw new Error(`protobuf wire type ${w}`);
  }
}

function pbLen(field, bytes) {
  const v = [];
  for (let n = field * 8 + 2, k = 0; k < 2; n = bytes.length, k++)
    do {
      let x = n % 128;
      n = Math.floor(n / 128);
      v.push(n ? x | 0x80 : x);
    } while (n);
  return Buffer.concat([Buffer.from(v), bytes]);
}

// The model with the data input (input 0) of every NAN_UNDEFINED node
// added as a graph output (ModelProto.graph 7, GraphProto node 1 and
// output 12, NodeProto input 1, op_type 4, domain 7; a second graph field
// merges into the first, as protobuf parsers do), and those names; null
// when there is none.  Graph inputs are not added: the feeds show them.
function probeModel(buf, inputNames) {
  const str = (x) => buf.toString('utf8', x.s, x.e), names = [];
  for (const m of pbFields(buf, 0, buf.length))
    if (m.f === 7)
      for (const g of pbFields(buf, m.s, m.e)) {
        if (g.f !== 1)
          continue;
        let op = '', domain = '', input = '';
        for (const n of pbFields(buf, g.s, g.e))
          if (n.f === 1 && !input)
            input = str(n);
          else if (n.f === 4)
            op = str(n);
          else if (n.f === 7)
            domain = str(n);
        if (!domain && NAN_UNDEFINED.has(op) && input && !names.includes(input))
          names.push(input);
      }
  if (!names.length)
    return null;
  const extra = names.filter((n) => !inputNames.includes(n))
    .map((n) => pbLen(12, pbLen(1, Buffer.from(n))));
  return { names, buf: Buffer.concat([buf, pbLen(7, Buffer.concat(extra))]) };
}

function hasNaN(t) {
  return t && (t.type === 'float32' || t.type === 'float64') && t.data.some(Number.isNaN);
}

// ORT on one model: { load error } or per size { ok, res | why, nanIn }
// (nanIn: a NaN reached a NAN_UNDEFINED node; see probeModel); level: its
// graph optimizations ('all', or 'disabled' to see whether they change the
// answer).
async function runOrt(ort, dir, m, level = 'all') {
  let sess;
  try {
    sess = await ort.InferenceSession.create(path.join(dir, `m${m.idx}.onnx`), {
      graphOptimizationLevel: level, intraOpNumThreads: 1, interOpNumThreads: 1,
      executionMode: 'sequential', logSeverityLevel: 4, /* its refusals are judged, not logged */
    });
  } catch (e) {
    const r = { ok: false, why: 'load: ' + firstLine(e) };
    return { traced: r, alt: r };
  }
  let probe = null, probeSess = null;
  try {
    probe = probeModel(fs.readFileSync(path.join(dir, `m${m.idx}.onnx`)), sess.inputNames);
    if (probe)
      probeSess = await ort.InferenceSession.create(probe.buf, {
        graphOptimizationLevel: level, intraOpNumThreads: 1, interOpNumThreads: 1,
        executionMode: 'sequential', logSeverityLevel: 4,
      });
  } catch (e) {
    probeSess = null; /* no probe: a difference stays a finding */
  }
  const out = {};
  for (const size of m.altN ? ['traced', 'alt'] : ['traced']) {
    const feeds = {};
    m.inputs.forEach((t, k) => {
      const dims = t.dyn && size === 'alt' ? [m.altN, ...t.dims.slice(1)] : t.dims;
      const file = path.join(dir, `m${m.idx}.${size === 'alt' && t.dyn ? 'alt' : 'in'}${k}.bin`);
      feeds[sess.inputNames[k]] = new ort.Tensor(DTYPES[t.dtype].ort, readData(file, t.dtype, dims), dims);
    });
    try {
      out[size] = { ok: true, res: await sess.run(feeds), names: sess.outputNames };
      if (probeSess) {
        const pr = await probeSess.run(feeds);
        out[size].nanIn = probe.names.some((n) => hasNaN(pr[n] || feeds[n]));
      }
    } catch (e) {
      out[size] = { ok: false, why: 'run: ' + firstLine(e) };
    }
  }
  if (sess.release)
    await sess.release();
  return out;
}

// One variant of ours against ORT: { cls: agree|both|us|finding, why }.
// Ours at -O3 against ours at -O0 (same size), output k: null when they
// agree (NaN where NaN, the rest within TOL), else what differs.  Where
// ORT is no reference (NAN_UNDEFINED), -O3's blocked and fused kernels
// must still treat NaN as -O0's do.
function oursAgree(dir, m, variant, k, want, ref, ours0) {
  const v0 = variant.replace('O3', 'O0');
  if (v0 === variant || !ours0 || !ours0.ok || !ours0.outputs[k])
    return null;
  const w0 = ours0.outputs[k];
  let d0;
  try {
    d0 = readData(path.join(dir, `m${m.idx}.${v0}.out${k}.bin`), w0.dtype, w0.dims);
  } catch (e) {
    return firstLine(e);
  }
  const c = compare({ type: DTYPES[w0.dtype].ort, dims: w0.dims, data: d0 }, want, ref, TOL, FLOOR);
  return c.ok ? null : `ours ${v0} against ${variant}: ${c.why}`;
}

function judge(dir, m, variant, o, r, ours0) {
  if (!o)
    return { cls: 'finding', why: `${variant}: no result from ours (crashed before it?)` };
  if (!o.ok && (o.kind === 'crash' || o.kind === 'hang'))
    return { cls: 'finding', why: `${variant}: ours ${o.kind}: ${o.why}` };
  if (!o.ok && !r.ok)
    return { cls: 'both' };
  if (!o.ok) {
    for (const [re, reason] of INTENTIONAL)
      if (re.test(o.why))
        return { cls: 'us', reason };
    return { cls: 'finding', why: `${variant}: ours refuses what ORT runs: ${o.why}` };
  }
  if (!r.ok) {
    for (const [re, reason] of ORT_LIMITS)
      if (re.test(r.why))
        return { cls: 'both', limit: reason };
    return { cls: 'finding', why: `${variant}: ours runs what ORT refuses (${r.why})` };
  }
  if (o.outputs.length !== r.names.length)
    return { cls: 'finding', why: `${variant}: ${o.outputs.length} outputs, ORT ${r.names.length}` };
  for (let k = 0; k < o.outputs.length; k++) {
    const want = o.outputs[k];
    const got = r.res[want.name] || r.res[r.names[k]];
    let ref;
    try {
      ref = readData(path.join(dir, `m${m.idx}.${variant}.out${k}.bin`), want.dtype, want.dims);
    } catch (e) {
      return { cls: 'finding', why: `${variant}: ${firstLine(e)}` };
    }
    const c = compare(got, want, ref, TOL, FLOOR);
    if (!c.ok && r.nanIn) {
      const d = oursAgree(dir, m, variant, k, want, ref, ours0);
      if (d)
        return { cls: 'finding', why: `${variant}: output ${want.name}: ${d}` };
      return { cls: 'nan', limit: NAN_REASON };
    }
    if (!c.ok)
      return { cls: 'finding', why: `${variant}: output ${want.name}: ours ${want.dtype}[${want.dims}] vs ORT: ${c.why}` };
  }
  return { cls: 'agree' };
}

const RANK = { agree: 0, nan: 1, both: 2, us: 3, finding: 4 };
const ORT_OPT_REASON = "ORT's graph optimizations change its answer (ORT unoptimized agrees)";

async function main(argv) {
  if (argv.length !== 2 && argv.length !== 3)
    fail('usage: difffuzz_ort.js ORT_MODULE_DIR DIR [FROM]', 2);
  let ort;
  try {
    ort = require(path.resolve(argv[0]));
  } catch (e) {
    fail(`cannot load onnxruntime-node from ${argv[0]}: ${e.message}`, 2);
  }
  const dir = argv[1], from = argv.length > 2 ? +argv[2] : -Infinity;
  const models = parseModels(dir);
  if (models.length === 0)
    fail('models.txt lists no model: nothing was compared', 1);
  const ours = parseOurs(dir);
  const ortCrashed = parseOrtCrashes(dir);
  // one line per model as it is judged, so that a run started again after
  // ORT crashed (difffuzz.sh) goes on from there: "<idx> <cls> <detail>"
  const judged = path.join(dir, 'judged.txt');
  for (const m of models) {
    if (m.idx < from)
      continue;
    // a crash of ORT itself names its model here
    fs.writeFileSync(path.join(dir, 'ort_current'), `${m.idx}\n`);
    const r = ortCrashed.has(m.idx) ? { traced: ortCrashed.get(m.idx), alt: ortCrashed.get(m.idx) }
                                    : await runOrt(ort, dir, m);
    const o = ours.get(m.idx) || {};
    let worst = { cls: 'agree' };
    const variants = m.altN ? ['O0', 'O3', 'O0alt', 'O3alt'] : ['O0', 'O3'];
    for (const v of variants) {
      const j = judge(dir, m, v, o[v], v.endsWith('alt') ? r.alt : r.traced, o[v.replace('O3', 'O0')]);
      if (RANK[j.cls] > RANK[worst.cls] || (j.limit && worst.cls === 'agree'))
        worst = j;
    }
    // Values that differ from optimized ORT's but agree with its
    // unoptimized run: ORT's graph optimizations changed its answer (seed
    // 9101 model 166: its Transpose+MatMul fusion drops the transpose when
    // B is 1-D); not a finding of ours, counted apart.
    // The same when ours refuses what optimized ORT runs and unoptimized
    // ORT refuses it too: its optimizer dropped the failing node.
    if (worst.cls === 'finding' && / vs ORT: |ours refuses what ORT runs/.test(worst.why) &&
        !ortCrashed.has(m.idx)) {
      const r0 = await runOrt(ort, dir, m, 'disabled');
      let w0 = { cls: 'agree' };
      for (const v of variants) {
        const j = judge(dir, m, v, o[v], v.endsWith('alt') ? r0.alt : r0.traced);
        if (RANK[j.cls] > RANK[w0.cls])
          w0 = j;
      }
      /* no finding against unoptimized ORT: its verdict stands (agree, or
       * both refuse at the other size: seed 11005 model 4091, whose N = 1
       * run both refuse), noted as ORT's optimizations */
      if (w0.cls !== 'finding')
        worst = w0.cls === 'agree' ? { cls: 'agree', unopt: ORT_OPT_REASON }
                                   : Object.assign({}, w0, { limit: ORT_OPT_REASON });
    }
    const detail = worst.cls === 'us' ? worst.reason : worst.cls === 'finding' ? `${m.label} ${worst.why}`
                   : worst.limit || worst.unopt || '';
    fs.appendFileSync(judged, `${m.idx} ${worst.cls} ${detail}\n`);
  }
  fs.rmSync(path.join(dir, 'ort_current'), { force: true });
  summarize(dir, models.length);
}

// The summary of judged.txt; findings.txt for difffuzz.sh.
function summarize(dir, n) {
  const count = { agree: 0, nan: 0, both: 0, us: 0, finding: 0 };
  const reasons = new Map(), limits = new Map(), unopt = new Map();
  const findings = [];
  for (const line of fs.readFileSync(path.join(dir, 'judged.txt'), 'utf8').split('\n')) {
    const sp = line.indexOf(' '), sp2 = line.indexOf(' ', sp + 1);
    if (sp < 0)
      continue;
    const cls = line.slice(sp + 1, sp2), detail = line.slice(sp2 + 1);
    count[cls]++;
    if (cls === 'us')
      reasons.set(detail, (reasons.get(detail) || 0) + 1);
    else if (cls === 'both' && detail)
      limits.set(detail, (limits.get(detail) || 0) + 1);
    else if (cls === 'agree' && detail)
      unopt.set(detail, (unopt.get(detail) || 0) + 1);
    else if (cls === 'finding')
      findings.push(line.slice(0, sp) + ' ' + detail);
  }
  const total = count.agree + count.nan + count.both + count.us + count.finding;
  fs.writeFileSync(path.join(dir, 'findings.txt'), findings.map((f) => f + '\n').join(''));
  const list = (m) => [...m].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${c} ${k}`).join('; ') || 'none';
  console.log(`difffuzz: ${total} models, ${count.agree} agree, ${count.both} both refuse, ` +
              `${count.us} refused by us only (${list(reasons)}), ` +
              `${count.nan} differ only past NaN in ORT's max/min, ${count.finding} findings`);
  if (limits.size)
    console.log(`difffuzz: of those both refuse, ours ran but ORT could not: ${list(limits)}`);
  if (unopt.size)
    console.log(`difffuzz: of those agree, only with ORT unoptimized: ${list(unopt)}`);
  if (total !== n)
    fail(`${total} models judged, ${n} generated`, 1);
  process.exitCode = count.finding ? 1 : 0;
}

main(process.argv.slice(2)).catch((e) => fail(String(e && e.stack ? e.stack : e), 1));
