// onnxruntime kept loaded for the CPU benchmarks (bench/ort_peer.h, OrtServer): loads a model
// once, makes one untimed run, prints {"ready":true}, then for each line N read from stdin
// makes N timed runs and prints {"ms":[...]}, one line, in the order they ran. Ends at EOF.
// The benchmark alternates short windows of ovfix's runs with these without reloading
// either side, so both see the same machine load.
//
//   NODE_PATH=build/ort/node_modules node bench/ort_serve.js MODEL.onnx THREADS \
//       NAME=TYPE:D0,D1,..:FILE ...
// Each input is given as its name, its onnx TensorProto data type number, its dimensions
// (empty for a scalar) and a file of its elements' raw little-endian bytes.
const fs = require('fs');
const readline = require('readline');
const ort = require('onnxruntime-node');

// onnx data type -> onnxruntime-node tensor type and typed array
const ARRAYS = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  6: ['int32', Int32Array], 7: ['int64', BigInt64Array], 9: ['bool', Uint8Array],
  10: ['float16', Uint16Array], 11: ['float64', Float64Array],
};

function inputTensor(spec) {
  const m = /^([^=]+)=(\d+):([\d,]*):(.+)$/.exec(spec);
  if (!m) throw new Error(`bad input spec '${spec}'`);
  const [, name, type, dimText, file] = m;
  const kind = ARRAYS[+type];
  if (!kind) throw new Error(`${name}: unsupported data type ${type}`);
  const dims = dimText === '' ? [] : dimText.split(',').map(Number);
  const bytes = fs.readFileSync(file);
  const data = new kind[1](bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  if (kind[0] === 'bool') return [name, new ort.Tensor('bool', Array.from(data, v => !!v), dims)];
  return [name, new ort.Tensor(kind[0], data, dims)];
}

(async () => {
  const [model, threads, ...specs] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: +threads, interOpNumThreads: 1,
  });
  const feeds = Object.fromEntries(specs.map(inputTensor));
  await session.run(feeds);
  console.log(JSON.stringify({ ready: true }));
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const ms = [];
    for (let i = 0; i < +line; i++) {
      const start = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    console.log(JSON.stringify({ ms }));
  }
})().catch(e => { console.error(`ort_serve.js: ${e.message || e}`); process.exit(2); });
