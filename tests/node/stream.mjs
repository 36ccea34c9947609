// The official OpenAI Node SDK (openai, pinned in package.json) against
// hviske-server: streamed and plain transcriptions and errors, read by the
// SDK unchanged. Run by tests/programs/test_streaming.py:
//     node tests/node/stream.mjs BASE_URL AUDIO_FILE
// prints one JSON object with what the SDK saw; the Python test checks it.
import fs from "node:fs";
import OpenAI from "openai";

const [baseURL, audio] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const out = {};

// stream: true, as the SDK's types say: delta events, then one done event
const stream = await client.audio.transcriptions.create({
  file: fs.createReadStream(audio),
  model: "hviske",
  stream: true,
});
out.events = [];
for await (const event of stream) out.events.push(event);

// the same with response_format text, and the plain json answer
const text = await client.audio.transcriptions.create({
  file: fs.createReadStream(audio),
  model: "hviske",
  response_format: "text",
  stream: true,
});
out.text_events = [];
for await (const event of text) out.text_events.push(event);
const plain = await client.audio.transcriptions.create({
  file: fs.createReadStream(audio),
  model: "hviske",
});
out.plain = plain.text;

// an error before the stream begins: the SDK's APIError with our fields
try {
  const s = await client.audio.transcriptions.create({
    file: fs.createReadStream(audio),
    model: "hviske",
    response_format: "srt",
    stream: true,
  });
  for await (const event of s) void event;
  out.error = null;
} catch (e) {
  out.error = { name: e.constructor.name, status: e.status ?? null, param: e.param ?? null,
                message: e.message };
}
console.log(JSON.stringify(out));
