/* hviske's web page (docs/SERVER.md "The web page").
 *
 * Talks to its own server only, by paths relative to the page (so that
 * it also works behind a proxy under a prefix): GET v1/models for the
 * checkpoint, the languages, the defaults and the limits; one POST
 * v1/audio/transcriptions per upload, with stream=true for the segments
 * as they are final, progress=true for the audio done, and
 * downloads=txt,srt,vtt,json: the done event carries the CLI's bytes of
 * every download, and the words and segments of its JSON are the ones
 * the player follows. Text from the server and file names go into the
 * page as text (textContent), never as HTML. The API key, when the
 * server wants one, is kept in sessionStorage: this tab only. */
"use strict";

const KEY_STORE = "hviske-api-key";
const $ = (id) => document.getElementById(id);

const state = {
  model: null,    // the /v1/models entry
  file: null,     // {blob, name, size, duration}
  url: null,      // object URL of the file, for the player
  busy: false,    // a transcription is running
  run: 0,         // counts transcriptions: stale answers are dropped
  text: "",       // the transcript (done event)
  downloads: {},  // txt, srt, vtt, json bodies of the done event
  job: null,      // {file, options} of the transcript shown
  words: [],      // [{el, start, end}] in time order
  current: -1,    // index of the highlighted word
  recorder: null,
};

/* ------------------------------------------------------------ helpers */

function apiKey() {
  try {
    return sessionStorage.getItem(KEY_STORE) || "";
  } catch (e) {
    return "";
  }
}

function setKey(k) {
  try {
    if (k)
      sessionStorage.setItem(KEY_STORE, k);
    else
      sessionStorage.removeItem(KEY_STORE);
  } catch (e) { /* storage refused: the key lives as long as the page */
  }
  state.keyFallback = k;
}

function headers() {
  const k = apiKey() || state.keyFallback || "";
  return k ? {Authorization: "Bearer " + k} : {};
}

function formatBytes(n) {
  if (n < 1024) return n + " bytes";
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1024 / 1024).toFixed(1) + " MiB";
}

function formatDuration(s) {
  if (!isFinite(s)) return "unknown";
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  const sec = s - h * 3600 - m * 60;
  const ss = sec.toFixed(1).padStart(4, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/* The CLI's progress durations: "1h02m03s", "2m03s", "45s". */
function clockDuration(s) {
  const t = isFinite(s) && s > 0 ? Math.round(s) : 0;
  const h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), sec = t % 60;
  const two = (x) => String(x).padStart(2, "0");
  if (h) return `${h}h${two(m)}m${two(sec)}s`;
  if (m) return `${m}m${two(sec)}s`;
  return `${sec}s`;
}

function languageName(code) {
  try {
    const n = new Intl.DisplayNames([navigator.language || "en"], {type: "language"}).of(code);
    return n && n !== code ? `${n} (${code})` : code;
  } catch (e) {
    return code;
  }
}

function baseName(name) {
  const b = name.replace(/\.[^./\\]*$/, "");
  return b || "transcript";
}

/* An error from an answer: the server's own message, and what a person
 * can do about it. */
async function answerError(res) {
  let body = null;
  try {
    body = await res.json();
  } catch (e) { /* not JSON */
  }
  const err = (body && body.error) || {};
  const msg = typeof err.message === "string" ? err.message : "";
  const e = new Error(msg || `the server answered ${res.status}`);
  e.status = res.status;
  e.code = err.code || "";
  e.param = err.param || "";
  e.detail = msg;
  e.retryAfter = res.headers.get("Retry-After");
  return e;
}

function explain(e) {
  const limits = state.model || {};
  switch (e.status) {
    case 401:
      return [
        "The server did not accept the API key.",
        "Enter the key the server was started with (--api-key)."
      ];
    case 413:
      if (e.code === "audio_too_long")
        return [
          "The audio is too long for this server.",
          `It takes at most ${formatDuration(limits.max_audio_seconds)} of audio ` +
              `(the server's --max-audio-seconds option raises that). ${e.detail}`
        ];
      return [
        "The file is too large for this server.",
        `It takes files of at most ${limits.max_upload_mb || "?"} MiB ` +
            `(the server's --max-upload-mb option raises that). ${e.detail}`
      ];
    case 400:
      if (e.code === "too_many_channels")
        return [
          "The audio has more channels than this server takes.",
          `Mix it down to fewer channels (to mono, for example). ${e.detail}`
        ];
      if (e.param === "file")
        return [
          "The file could not be read as audio.",
          `Choose a WAV, FLAC, OGG/Opus or MP3 file. ${e.detail}`
        ];
      return ["The server refused the request.", e.detail];
    case 503: {
      const s = parseInt(e.retryAfter || "", 10);
      const wait = s > 0 ? s : 1;
      const at = new Date(Date.now() + wait * 1000).toLocaleTimeString();
      const what =
          e.code === "shutting_down" ? "The server is shutting down." : "The server is busy.";
      return [`${what} Try again in ${wait} second${wait === 1 ? "" : "s"} (at ${at}).`, e.detail];
    }
    case 0:
      return ["The server could not be reached.", e.detail];
    case undefined:
      return ["Something went wrong while reading the server's answer.", e.message];
    default:
      return [`The server answered with an error (${e.status}).`, e.detail];
  }
}

function showError(title, detail) {
  $("error-title").textContent = title;
  detail = detail || "";
  $("error-detail").textContent = detail.charAt(0).toUpperCase() + detail.slice(1);
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

function fail(e) {
  if (e.status === 401) askKey(apiKey() ? "The key was not accepted. Enter it again." : null);
  const [t, d] = explain(e);
  showError(t, d);
}

async function call(path, init) {
  let res;
  try {
    res = await fetch(path, Object.assign({cache: "no-store"}, init));
  } catch (err) {
    const e = new Error(String(err && err.message ? err.message : err));
    e.status = 0;
    e.detail = "Check that hviske-server is running.";
    throw e;
  }
  if (!res.ok) throw await answerError(res);
  return res;
}

/* ------------------------------------------------------------ the key */

function askKey(message) {
  $("key-message").textContent = message || "This server requires an API key.";
  $("key-panel").hidden = false;
  $("key-change").hidden = false;
  $("key-input").value = "";
  $("key-input").focus();
}

$("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const k = $("key-input").value.trim();
  if (!k) return;
  setKey(k);
  $("key-panel").hidden = true;
  clearError();
  loadModel();
});

$("key-change").addEventListener("click", () => askKey("Enter the API key for this server."));

/* ---------------------------------------------------------- the model */

async function loadModel() {
  try {
    const res = await call("v1/models", {headers: headers()});
    const list = await res.json();
    const m = list && Array.isArray(list.data) && list.data[0];
    if (!m) throw Object.assign(new Error("no model listed"), {status: 500, detail: ""});
    state.model = m;
    const langs = Array.isArray(m.languages) ? m.languages : [];
    const sel = $("language");
    sel.textContent = "";
    for (const code of langs) {
      const o = document.createElement("option");
      o.value = code;
      o.textContent = languageName(code);
      sel.appendChild(o);
    }
    if (m.language) sel.value = m.language;
    $("options").disabled = false;
    sel.disabled = langs.length === 0;
    $("punctuation").checked = m.punctuation !== false;
    /* a diarize-and-timestamp model (docs/DIARIZE.md) */
    $("speakers-option").hidden = m.diarize !== true;
    $("speakers").checked = false;
    $("beams").value = String(m.num_beams || 1);
    $("beams").max = String(m.max_beams || 64); /* the server's --max-beams */
    $("server-info").textContent = `Model ${m.checkpoint || m.id} · ${langs.length} language${
                                       langs.length === 1 ? "" : "s"} · ` +
        `files up to ${m.max_upload_mb} MiB`;
    $("key-change").hidden = !apiKey();
    document.body.dataset.ready = "1";
    updateButtons();
  } catch (e) {
    $("server-info").textContent =
        e.status === 401 ? "This server requires an API key." : "The server did not answer.";
    if (e.status === 401)
      askKey(apiKey() ? "The key was not accepted. Enter it again." : null);
    else
      fail(e);
  }
}

/* ------------------------------------------------------ choosing audio */

function tooBig(size) {
  const max = state.model && state.model.max_upload_mb;
  return !!max && size > max * 1024 * 1024;
}

/* copy: the file is the page's 16 kHz mono copy of the one chosen. */
function setFile(blob, name, copy) {
  if (state.busy) return;
  clearError();
  resetResult();
  showEmpty();
  if (state.url) URL.revokeObjectURL(state.url);
  state.file = {blob, name, size: blob.size, duration: NaN, copy: !!copy};
  state.url = URL.createObjectURL(blob);
  $("file-name").textContent = name;
  $("file-size").textContent = formatBytes(blob.size);
  $("file-duration").textContent = "reading…";
  $("file-info").hidden = false;
  $("copy-notice").hidden = !copy;
  $("shrink").hidden = true;
  $("shrink-status").textContent = "";
  const p = $("player");
  p.src = state.url;
  p.hidden = false;
  if (tooBig(blob.size)) {
    const max = state.model.max_upload_mb;
    showError(
        "The file is too large for this server.",
        `It is ${formatBytes(blob.size)}; the server takes files of at most ${max} MiB ` +
            "(the server's --max-upload-mb option raises that).");
    $("shrink").hidden = !!copy;  // a copy over the limit: nothing smaller to offer
  }
  updateButtons();
}

/* The page's 16 kHz mono 16-bit WAV of the chosen file, decoded by the
 * browser: often well under the limit (a 48 kHz stereo WAV shrinks 6
 * times); the transcript may differ slightly from the original's. */
async function shrink() {
  const f = state.file;
  if (!f || state.busy) return;
  const st = $("shrink-status");
  $("shrink-button").disabled = true;
  st.textContent = "Making a 16 kHz mono copy…";
  try {
    const ac = new AudioContext();
    let decoded;
    try {
      decoded = await ac.decodeAudioData(await f.blob.arrayBuffer());
    } finally {
      ac.close();
    }
    const wav = await toWav16k(decoded);
    if (tooBig(wav.size)) {
      st.textContent = `Even a 16 kHz mono copy is ${formatBytes(wav.size)}: over the limit too.`;
      return;
    }
    setFile(wav, baseName(f.name) + " (16 kHz mono).wav", true);
  } catch (e) {
    st.textContent = "The browser could not decode this file: " + String(e.message || e);
  } finally {
    $("shrink-button").disabled = false;
  }
}

$("shrink-button").addEventListener("click", shrink);

$("player").addEventListener("loadedmetadata", () => {
  const d = $("player").duration;
  if (state.file && isFinite(d)) {
    state.file.duration = d;
    $("file-duration").textContent = formatDuration(d);
  }
});
$("player").addEventListener("error", () => {
  if (state.file && !isFinite(state.file.duration))
    $("file-duration").textContent = "unknown (the browser cannot play this format)";
});

$("file-input").addEventListener("change", () => {
  const f = $("file-input").files[0];
  if (f) setFile(f, f.name);
  $("file-input").value = "";
});

const drop = $("drop");
for (const t of ["dragenter", "dragover"])
  drop.addEventListener(t, (ev) => {
    ev.preventDefault();
    drop.classList.add("over");
  });
for (const t of ["dragleave", "drop"])
  drop.addEventListener(t, () => drop.classList.remove("over"));
drop.addEventListener("drop", (ev) => {
  ev.preventDefault();
  if (state.busy) return;
  const f = ev.dataTransfer && ev.dataTransfer.files[0];
  if (f) setFile(f, f.name);
});
/* a file dropped beside the box should not replace the page */
window.addEventListener("dragover", (ev) => ev.preventDefault());
window.addEventListener("drop", (ev) => ev.preventDefault());

/* --------------------------------------------------------- recording */

/* 16 kHz mono 16-bit WAV of an AudioBuffer (Web Audio resamples). */
async function toWav16k(buf) {
  const rate = 16000;
  const n = Math.max(1, Math.ceil(buf.duration * rate));
  const ctx = new OfflineAudioContext(1, n, rate);
  const src = ctx.createBufferSource();
  src.buffer = buf;
  src.connect(ctx.destination);  // channels are mixed down to mono
  src.start();
  const out = await ctx.startRendering();
  const x = out.getChannelData(0);
  const data = new DataView(new ArrayBuffer(44 + 2 * x.length));
  const str = (o, s) => {
    for (let i = 0; i < s.length; i++) data.setUint8(o + i, s.charCodeAt(i));
  };
  str(0, "RIFF");
  data.setUint32(4, 36 + 2 * x.length, true);
  str(8, "WAVE");
  str(12, "fmt ");
  data.setUint32(16, 16, true);
  data.setUint16(20, 1, true);
  data.setUint16(22, 1, true);
  data.setUint32(24, rate, true);
  data.setUint32(28, 2 * rate, true);
  data.setUint16(32, 2, true);
  data.setUint16(34, 16, true);
  str(36, "data");
  data.setUint32(40, 2 * x.length, true);
  for (let i = 0; i < x.length; i++) {
    const v = Math.max(-1, Math.min(1, x[i]));
    data.setInt16(44 + 2 * i, v < 0 ? v * 0x8000 : v * 0x7fff, true);
  }
  return new Blob([data.buffer], {type: "audio/wav"});
}

async function startRecording() {
  clearError();
  if (!navigator.mediaDevices || !window.MediaRecorder) {
    showError(
        "This browser cannot record here.",
        "Recording needs a secure page (https, or http://127.0.0.1 / localhost).");
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({audio: true});
  } catch (e) {
    showError("The microphone could not be opened.", String(e.message || e));
    return;
  }
  const rec = new MediaRecorder(stream);
  const chunks = [];
  const t0 = performance.now();
  rec.addEventListener("dataavailable", (ev) => {
    if (ev.data.size) chunks.push(ev.data);
  });
  rec.addEventListener("stop", async () => {
    clearInterval(state.recTimer);
    stream.getTracks().forEach((t) => t.stop());
    $("record-status").textContent = "Converting the recording…";
    try {
      const raw = new Blob(chunks, {type: rec.mimeType});
      const ac = new AudioContext();
      const decoded = await ac.decodeAudioData(await raw.arrayBuffer());
      ac.close();
      const wav = await toWav16k(decoded);
      const stamp = new Date().toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-");
      setFile(wav, `recording-${stamp}.wav`);
      $("record-status").textContent = `Recorded ${decoded.duration.toFixed(1)} s`;
    } catch (e) {
      $("record-status").textContent = "";
      showError("The recording could not be decoded.", String(e.message || e));
    }
    state.recorder = null;
    $("record").setAttribute("aria-pressed", "false");
    $("record-label").textContent = "Record";
    updateButtons();
  });
  rec.start(250);
  state.recorder = rec;
  $("record").setAttribute("aria-pressed", "true");
  $("record-label").textContent = "Stop";
  const tick = () => {
    const s = (performance.now() - t0) / 1000;
    $("record-status").textContent = `Recording… ${s.toFixed(1)} s`;
    $("record-status").dataset.seconds = s.toFixed(1);
  };
  tick();
  state.recTimer = setInterval(tick, 100);
  updateButtons();
}

$("record").addEventListener("click", () => {
  if (state.recorder)
    state.recorder.stop();
  else
    startRecording();
});

/* ------------------------------------------------------ transcription */

function updateButtons() {
  $("file-input").disabled = state.busy;
  const big = state.file && tooBig(state.file.size);
  $("transcribe").disabled = !state.file || !state.model || state.busy || !!state.recorder || !!big;
  $("record").disabled = state.busy;
  $("shrink-button").disabled = state.busy;
}

function currentOptions() {
  const beams = parseInt($("beams").value, 10);
  const most = (state.model && state.model.max_beams) || 64;
  return {
    language: $("language").value,
    punctuation: $("punctuation").checked ? "true" : "false",
    num_beams: String(beams >= 1 ? Math.min(beams, most) : 1),
    diarize: state.model && state.model.diarize === true && $("speakers").checked,
  };
}

function form(job, extra) {
  const f = new FormData();
  const opts = job.options;
  f.append("file", job.file.blob, job.file.name);
  f.append("model", state.model.id);
  if (opts.language) f.append("language", opts.language);
  f.append("punctuation", opts.punctuation);
  f.append("num_beams", opts.num_beams);
  if (opts.diarize) f.append("diarize", "true");
  for (const [k, v] of extra) f.append(k, v);
  return f;
}

/* fraction: of the audio done (0..1), or null while unknown. */
function setProgress(text, fraction) {
  $("progress").hidden = text === null;
  if (text === null) return;
  $("progress-text").textContent = text;
  const bar = $("progress-bar");
  if (typeof fraction === "number") {
    bar.max = 1;
    bar.value = fraction;
  } else {
    bar.removeAttribute("value");  // indeterminate
  }
}

function resetResult() {
  const t = $("transcript");
  t.textContent = "";
  state.text = "";
  state.downloads = {};
  state.words = [];
  state.current = -1;
  $("stats").hidden = true;
  $("actions").hidden = true;
  $("hint").hidden = true;
  $("action-status").textContent = "";
  delete document.body.dataset.done;
  delete document.body.dataset.words;
}

const EMPTY = $("empty").cloneNode(true);

/* The transcript's empty state: the first hint, or a message. */
function showEmpty(message) {
  const t = $("transcript");
  t.textContent = "";
  const p = EMPTY.cloneNode(true);
  if (message) p.textContent = message;
  t.appendChild(p);
}

/* Reads an event stream: calls on(event object) for each data line. */
async function readEvents(res, on) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of block.split("\n"))
        if (line.startsWith("data:")) on(JSON.parse(line.slice(5).trim()));
    }
  }
}

async function transcribe() {
  if (!state.file || !state.model || state.busy) return;
  clearError();
  resetResult();
  state.busy = true;
  const run = ++state.run;
  const job = {file: state.file, options: currentOptions()};
  state.job = job;
  updateButtons();
  const t0 = performance.now();
  let segments = 0, done = null;
  /* as the CLI shows it: "15% (26s of 2m55s), ETA 6s" */
  const status = () => {
    const secs = (performance.now() - t0) / 1000;
    if (!done || !(done.total_s > 0)) {
      setProgress(`Transcribing… ${secs.toFixed(1)} s`, null);
      return;
    }
    const f = Math.min(1, done.done_s / done.total_s);
    const speed = done.done_s / Math.max(1e-3, done.at - t0) * 1000;
    const eta = speed > 0 ? (done.total_s - done.done_s) / speed : 0;
    setProgress(
        `Transcribing… ${Math.floor(f * 100)}% (${clockDuration(done.done_s)} of ` +
            `${clockDuration(done.total_s)}), ETA ${clockDuration(eta)}`,
        f);
  };
  status();
  const timer = setInterval(status, 200);
  document.body.dataset.state = "running";
  /* one column (a phone): the results are below the options */
  if (window.matchMedia("(max-width: 48rem)").matches)
    $("result-panel").scrollIntoView({block: "start", behavior: "smooth"});
  try {
    const res = await call("v1/audio/transcriptions", {
      method: "POST",
      headers: headers(),
      body: form(
          job,
          [
            ["response_format", "json"], ["stream", "true"], ["progress", "true"],
            ["downloads", "txt,srt,vtt,json"]
          ]),
    });
    let text = null;
    await readEvents(res, (ev) => {
      if (run !== state.run) return;
      if (ev.type === "transcript.text.delta") {
        const p = document.createElement("p");
        p.className = "segment new";
        p.textContent = ev.delta.replace(/^ /, "");
        $("transcript").appendChild(p);
        p.scrollIntoView({block: "nearest"});
        segments++;
      } else if (ev.type === "hviske.progress") {
        done = {done_s: ev.done_s, total_s: ev.total_s, at: performance.now()};
        status();
      } else if (ev.type === "transcript.text.done") {
        text = ev.text;
        state.downloads = ev.downloads || {};
      } else if (ev.type === "error") {
        const e = new Error((ev.error && ev.error.message) || "the transcription failed");
        e.status = 500;
        e.detail = e.message;
        throw e;
      }
    });
    if (text === null)
      throw Object.assign(
          new Error("the answer ended early"),
          {status: 500, detail: "The stream ended before the transcript was done."});
    const secs = (performance.now() - t0) / 1000;
    state.text = text;
    if (!text) showEmpty("No speech was found in this audio.");
    let result = null;
    try {
      result = JSON.parse(state.downloads.json || "null");
    } catch (e) { /* none */
    }
    const dur = isFinite(job.file.duration) ? job.file.duration : result && result.duration;
    if (isFinite(dur) && !isFinite(job.file.duration)) job.file.duration = dur;
    $("stats").textContent = isFinite(dur) && secs > 0 ?
        `Transcribed ${formatDuration(dur)} of audio in ${secs.toFixed(1)} s: ` +
            `${(dur / secs).toFixed(1)}× real time.` :
        `Transcribed in ${secs.toFixed(1)} s.`;
    $("stats").hidden = false;
    $("actions").hidden = false;
    if (text && result) renderWords(result);
    /* after a long transcription the view is at its end: back to the start */
    $("transcript").scrollTop = 0;
    document.body.dataset.done = "1";
  } catch (e) {
    if (run === state.run) {
      if (!segments) showEmpty();
      fail(e);
    }
  } finally {
    clearInterval(timer);
    if (run === state.run) {
      setProgress(null);
      state.busy = false;
      document.body.dataset.state = "idle";
      updateButtons();
    }
  }
}

$("transcribe").addEventListener("click", transcribe);

/* Colours for speakers, taken in turn (style.css .speaker-0 ..). */
const SPEAKER_COLOURS = 8;

/* The transcript rebuilt from the CLI's JSON (the done event's
 * downloads.json, --word-timestamps): a paragraph per segment, its start
 * time first, a span per word. A segment with a speaker (diarize) has its
 * speaker's colour, and its label where the speaker changes. */
function renderWords(r) {
  const segs = Array.isArray(r.segments) ? r.segments : [];
  if (!segs.some((g) => Array.isArray(g.words) && g.words.length)) return;
  const t = $("transcript");
  t.textContent = "";
  state.words = [];
  let last = null;
  for (const g of segs) {
    const words = Array.isArray(g.words) ? g.words : [];
    if (!words.length) continue;
    const p = document.createElement("p");
    p.className = "segment";
    if (Number.isInteger(g.speaker) && g.speaker >= 0) {
      p.classList.add("speaker", `speaker-${g.speaker % SPEAKER_COLOURS}`);
      p.dataset.speaker = String(g.speaker);
      if (g.speaker !== last) {
        const who = document.createElement("span");
        who.className = "speaker-label";
        who.textContent = `Speaker ${g.speaker + 1}`;
        p.appendChild(who);
      }
      last = g.speaker;
    }
    const at = document.createElement("span");
    at.className = "seg-time";
    at.textContent = formatDuration(g.start);
    at.dataset.start = String(g.start);
    at.title = "Play from here";
    p.appendChild(at);
    words.forEach((w) => {
      p.appendChild(document.createTextNode(" "));
      const i = state.words.length;
      const s = document.createElement("span");
      s.className = "w";
      s.textContent = w.word;
      s.tabIndex = i === 0 ? 0 : -1;
      s.dataset.start = String(w.start);
      s.dataset.end = String(w.end);
      s.dataset.i = String(i);
      s.title = `${formatDuration(w.start)} – ${formatDuration(w.end)}`;
      p.appendChild(s);
      state.words.push({el: s, start: w.start, end: w.end});
    });
    t.appendChild(p);
  }
  $("hint").hidden = false;
  document.body.dataset.words = String(state.words.length);
  highlight();
}

/* ---------------------------------------------------- following along */

/* The word being spoken at time t: the last one begun, while it lasts or
 * until the next begins. -1 before the first. */
function wordAt(t) {
  const w = state.words;
  let lo = 0, hi = w.length - 1, k = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (w[mid].start <= t) {
      k = mid;
      lo = mid + 1;
    } else
      hi = mid - 1;
  }
  return k;
}

function highlight() {
  const k = wordAt($("player").currentTime);
  if (k === state.current) return;
  if (state.current >= 0 && state.words[state.current])
    state.words[state.current].el.classList.remove("current");
  state.current = k;
  if (k >= 0) {
    const el = state.words[k].el;
    el.classList.add("current");
    if (!$("player").paused) el.scrollIntoView({block: "nearest"});
  }
}

function follow() {
  highlight();
  if (!$("player").paused) requestAnimationFrame(follow);
}
$("player").addEventListener("play", () => requestAnimationFrame(follow));
$("player").addEventListener("seeked", highlight);
$("player").addEventListener("timeupdate", highlight);

function seekTo(i) {
  const w = state.words[i];
  if (!w) return;
  $("player").currentTime = w.start;
  highlight();
}

function focusWord(i) {
  const w = state.words[Math.max(0, Math.min(state.words.length - 1, i))];
  if (!w) return;
  for (const x of state.words) x.el.tabIndex = -1;
  w.el.tabIndex = 0;
  w.el.focus();
}

$("transcript").addEventListener("click", (ev) => {
  const at = ev.target.closest && ev.target.closest(".seg-time");
  if (at) {
    $("player").currentTime = parseFloat(at.dataset.start);
    highlight();
    return;
  }
  const s = ev.target.closest && ev.target.closest(".w");
  if (!s) return;
  const i = parseInt(s.dataset.i, 10);
  focusWord(i);
  seekTo(i);
});

$("transcript").addEventListener("keydown", (ev) => {
  const s = ev.target.closest && ev.target.closest(".w");
  if (!s) return;
  const i = parseInt(s.dataset.i, 10);
  const p = $("player");
  let handled = true;
  switch (ev.key) {
    case "ArrowRight":
    case "ArrowDown":
      focusWord(i + 1);
      break;
    case "ArrowLeft":
    case "ArrowUp":
      focusWord(i - 1);
      break;
    case "Home":
      focusWord(0);
      break;
    case "End":
      focusWord(state.words.length - 1);
      break;
    case "Enter":
      seekTo(i);
      break;
    case " ":
      if (p.paused)
        p.play().catch(() => {});
      else
        p.pause();
      break;
    default:
      handled = false;
  }
  if (handled) ev.preventDefault();
});

/* -------------------------------------------------------- taking away */

function save(body, name, type) {
  const a = document.createElement("a");
  const url = URL.createObjectURL(new Blob([body], {type}));
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

const TYPES = {
  txt: "text/plain;charset=utf-8",
  srt: "text/plain;charset=utf-8",
  vtt: "text/vtt;charset=utf-8",
  json: "application/json"
};

/* Every download is the done event's: the CLI's bytes for this file and
 * these options, from the one transcription. */
function download(fmt) {
  const job = state.job;
  const body = state.downloads[fmt];
  if (!job || typeof body !== "string") {
    $("action-status").textContent = `No ${fmt.toUpperCase()} for this transcript.`;
    return;
  }
  save(body, baseName(job.file.name) + "." + fmt, TYPES[fmt]);
  $("action-status").textContent = `${fmt.toUpperCase()} saved.`;
}

for (const b of document.querySelectorAll("[data-format]"))
  b.addEventListener("click", () => download(b.dataset.format));

$("copy").addEventListener("click", async () => {
  const st = $("action-status");
  try {
    await navigator.clipboard.writeText(state.text);
    st.textContent = "Copied to the clipboard.";
  } catch (e) {
    st.textContent = "The browser did not allow copying; select the text instead.";
  }
});

/* On a touch screen the keys of the hint mean nothing: "tap", no keys
 * (also found by the first touch, where the media query cannot tell). */
function touchHint() {
  document.body.dataset.touch = "1";
  $("hint-action").textContent = "Tap";
}
if (window.matchMedia("(pointer: coarse)").matches) touchHint();
window.addEventListener("pointerdown", (ev) => {
  if (ev.pointerType === "touch") touchHint();
}, {passive: true});

loadModel();
