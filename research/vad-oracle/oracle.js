// The parity oracle: Silero VAD v5 in ONNX Runtime, driven the way Silero's
// OnnxWrapper.audio_forward drives it at 16 kHz.
//
//   node oracle.js IN.f32 OUT.f32 [MODEL.onnx]
//
// IN.f32: float32 little-endian 16 kHz mono samples. They are cut into
// 512-sample windows (the last one zero-padded); each run gets the last 64
// samples of the previous input (zeros before the first) followed by the
// window, and the state [2, 1, 128] the previous run returned (zeros at the
// start). OUT.f32: one float32 speech probability per window.
"use strict";
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

const WINDOW = 512, CONTEXT = 64, SR = 16000n;
const DEFAULT_MODEL = path.join(__dirname, "node_modules", "@ricky0123",
  "vad-web", "dist", "silero_vad_v5.onnx");

async function main() {
  const [inPath, outPath, modelPath = DEFAULT_MODEL] = process.argv.slice(2);
  if (!inPath || !outPath) {
    console.error("usage: node oracle.js IN.f32 OUT.f32 [MODEL.onnx]");
    process.exit(2);
  }
  const buf = fs.readFileSync(inPath);
  if (buf.length % 4) throw new Error(`${inPath}: not whole float32 samples`);
  const x = new Float32Array(buf.buffer.slice(buf.byteOffset,
    buf.byteOffset + buf.length));
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: 1, interOpNumThreads: 1,
  });
  const nWin = Math.ceil(x.length / WINDOW);
  const probs = new Float32Array(nWin);
  const input = new Float32Array(CONTEXT + WINDOW);
  let state = new ort.Tensor("float32", new Float32Array(2 * 128), [2, 1, 128]);
  const sr = new ort.Tensor("int64", BigInt64Array.from([SR]), []);
  for (let w = 0; w < nWin; w++) {
    input.copyWithin(0, WINDOW, WINDOW + CONTEXT); // previous input's tail
    if (w === 0) input.fill(0, 0, CONTEXT);
    const chunk = x.subarray(w * WINDOW, (w + 1) * WINDOW);
    input.set(chunk, CONTEXT);
    input.fill(0, CONTEXT + chunk.length);
    const out = await session.run({
      input: new ort.Tensor("float32", input.slice(), [1, CONTEXT + WINDOW]),
      state, sr,
    });
    probs[w] = out.output.data[0];
    state = out.stateN;
  }
  fs.writeFileSync(outPath, Buffer.from(probs.buffer));
  console.log(`${nWin} windows, ORT ${ort.env.versions.node}`);
}

main().catch((e) => { console.error(`oracle: ${e.message}`); process.exit(1); });
