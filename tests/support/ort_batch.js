// Runs many models with onnxruntime (CPU, graph as written) in one node process, for test
// sweeps where starting node per model would cost more than the runs.
//
//   NODE_PATH=build/ort/node_modules node tests/support/ort_batch.js JOBS
//
// JOBS holds one job per line: OUTDIR, MODEL, then the input files (serialized TensorProto, in
// the order of the model's inputs), separated by tabs. Each job writes OUTDIR/output_K.pb in
// the order of the model's outputs, or OUTDIR/error.txt with onnxruntime's message when the
// model does not load or run. Element types: float, float16, double, (u)int8/16/32/64, bool.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// onnx TensorProto.DataType -> [onnxruntime type name, typed array]
const KINDS = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  4: ['uint16', Uint16Array], 5: ['int16', Int16Array], 6: ['int32', Int32Array],
  7: ['int64', BigInt64Array], 9: ['bool', Uint8Array], 10: ['float16', Uint16Array],
  11: ['float64', Float64Array], 12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
};
const CODE_OF = {};
for (const [code, [name]] of Object.entries(KINDS)) CODE_OF[name] = Number(code);

class Reader {
  constructor(bytes) { this.b = bytes; this.at = 0; }
  done() { return this.at >= this.b.length; }
  varint() {
    let value = 0n, shift = 0n;
    for (;;) {
      const byte = this.b[this.at++];
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7n;
    }
  }
  bytes() {
    const n = Number(this.varint());
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

function copyOut(bytes, Array_) {
  const copy = new Uint8Array(bytes);  // aligned
  return new Array_(copy.buffer, 0, bytes.length / Array_.BYTES_PER_ELEMENT);
}

// A serialized TensorProto -> ort.Tensor.
function readTensor(file) {
  const r = new Reader(fs.readFileSync(file));
  const dims = [], ints = [], floats = [], doubles = [];
  let code = 0, raw = null;
  const packedVarints = (bytes, into) => {
    const inner = new Reader(bytes);
    while (!inner.done()) into.push(inner.varint());
  };
  while (!r.done()) {
    const key = Number(r.varint()), field = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = r.varint();
      if (field === 1) dims.push(v);
      else if (field === 2) code = Number(v);
      else if (field === 5 || field === 7 || field === 11) ints.push(v);
    } else if (wire === 2) {
      const bytes = r.bytes();
      if (field === 1) packedVarints(bytes, dims);
      else if (field === 9) raw = bytes;
      else if (field === 4) floats.push(...copyOut(bytes, Float32Array));
      else if (field === 10) doubles.push(...copyOut(bytes, Float64Array));
      else if (field === 5 || field === 7 || field === 11) packedVarints(bytes, ints);
    } else if (wire === 5) {
      floats.push(r.b.readFloatLE(r.at));
      r.at += 4;
    } else if (wire === 1) {
      doubles.push(r.b.readDoubleLE(r.at));
      r.at += 8;
    } else {
      throw new Error(`${file}: wire type ${wire}`);
    }
  }
  const kind = KINDS[code];
  if (kind === undefined) throw new Error(`${file}: element type ${code}`);
  const shape = dims.map((d) => Number(BigInt.asIntN(64, d)));
  const [name, Array_] = kind;
  let data;
  if (raw !== null) data = copyOut(raw, Array_);
  else if (code === 1) data = Float32Array.from(floats);
  else if (code === 11) data = Float64Array.from(doubles);
  else if (code === 7) data = BigInt64Array.from(ints, (v) => BigInt.asIntN(64, v));
  else if (code === 13) data = BigUint64Array.from(ints, (v) => BigInt.asUintN(64, v));
  else data = Array_.from(ints, (v) => Number(BigInt.asIntN(64, v)));
  if (name === 'bool') return new ort.Tensor('bool', Uint8Array.from(data, (v) => (v ? 1 : 0)), shape);
  return new ort.Tensor(name, data, shape);
}

function varint(out, value) {
  let v = BigInt.asUintN(64, BigInt(value));
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
}

// ort.Tensor -> a serialized TensorProto with raw_data.
function writeTensor(file, name, tensor) {
  const code = CODE_OF[tensor.type];
  if (code === undefined) throw new Error(`output '${name}': type ${tensor.type}`);
  const head = [];
  for (const d of tensor.dims) { head.push(0x08); varint(head, d); }
  head.push(0x10); varint(head, code);
  const nameBytes = Buffer.from(name);
  head.push(0x42); varint(head, nameBytes.length); head.push(...nameBytes);
  let data = tensor.data;
  if (tensor.type === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  head.push(0x4a); varint(head, raw.length);
  fs.writeFileSync(file, Buffer.concat([Buffer.from(head), raw]));
}

async function runJob(outdir, model, inputs) {
  fs.mkdirSync(outdir, { recursive: true });
  try {
    const session = await ort.InferenceSession.create(model, {
      graphOptimizationLevel: 'disabled', logSeverityLevel: 4, intraOpNumThreads: 1, interOpNumThreads: 1,
    });
    const feeds = {};
    session.inputNames.forEach((name, k) => { feeds[name] = readTensor(inputs[k]); });
    const results = await session.run(feeds);
    session.outputNames.forEach((name, k) => {
      writeTensor(path.join(outdir, `output_${k}.pb`), name, results[name]);
    });
  } catch (e) {
    fs.writeFileSync(path.join(outdir, 'error.txt'), String(e && e.message ? e.message : e));
  }
}

async function main() {
  const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter((l) => l.length > 0);
  for (const line of lines) {
    const [outdir, model, ...inputs] = line.split('\t');
    await runJob(outdir, model, inputs);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
