"""hviske-server for OpenAI's and whisper-server's clients (issue #52,
docs/SERVER.md "Endpoints"), on the demo model (models/demo):

  * a prompt (ignored: the model takes none) is answered with a Warning
    header, as ignored include[] values are, streamed or not;
  * POST /v1/audio/translations: 400 in OpenAI's error shape saying the
    model transcribes and does not translate (the form is read first, so
    a client sending it gets the answer); GET: 405;
  * POST /inference as whisper-server serves it: its curl example
    (temperature, temperature_inc, response_format) answers as
    /v1/audio/transcriptions does, every response_format the same bytes,
    json by default; beam_size as num_beams; offset_t and duration (ms)
    cut the audio with times on its timeline; translate=true refused;
    whisper-server's settings hviske does not have are named in a
    Warning; fields neither knows are refused, and whisper-server's
    fields are refused on /v1/audio/transcriptions;
  * GET /v1/models names the checkpoint;
  * a stream with progress=true carries hviske.progress events (seconds
    done and in total, the last at the total); downloads=txt,srt,vtt,json
    puts the CLI's bytes for the same file and options in the done event;
    both need stream=true;
  * -m given a file: the server says which directory to give.
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, SOURCE_DIR, Run, finish, finish_in, report,  # noqa: E402
                    sentences_wav, skip_or_fail)
from hvserver import SERVER, TIMEOUT, Server, multipart, request  # noqa: E402

T = "/v1/audio/transcriptions"


def post(port, path, fields, audio, filename="audio.wav"):
    body, ctype = multipart(list(fields), audio, filename)
    return request(port, "POST", path, body, {"Content-Type": ctype})


def warnings(port, path, fields, audio):
    """(status, every Warning header, body) of a POST."""
    body, ctype = multipart(list(fields), audio)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": ctype})
        r = c.getresponse()
        return r.status, [v for k, v in r.getheaders() if k.lower() == "warning"], r.read()
    finally:
        c.close()


def events(body):
    out = []
    for block in body.decode("utf-8", "replace").split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
    return out


def without_timings(text):
    return re.sub(r'("(?:frontend|encoder|decoder|vad|align)_ms": )[0-9.e+-]+', r"\1X", text)


def main():
    tmp = tempfile.mkdtemp(prefix="hv-server-compat-")
    with open(EXAMPLE, "rb") as f:
        audio = f.read()
    two_path = sentences_wav(os.path.join(tmp, "two.wav"), 2, 1.0)
    with open(two_path, "rb") as f:
        two = f.read()
    with wave.open(EXAMPLE, "rb") as w:
        clip_ms = round(w.getnframes() * 1000 / w.getframerate())
    srv = Server(DEMO_MODEL, "-t", "1", tmp=tmp)
    if not srv.started("server starts"):
        return finish()
    port = srv.port
    try:
        plain = post(port, T, [("model", "hviske")], audio)
        text = (plain.json() or {}).get("text")
        st, warn, body = warnings(port, T, [("prompt", "Velkommen")], audio)
        report("prompt: 200, the same text, a Warning that it is ignored",
               st == 200 and json.loads(body).get("text") == text and text and
               any(w.startswith("299 hviske ") and "prompt ignored" in w for w in warn),
               f"{st} {warn} {body[:200]!r}")
        st, warn, body = warnings(port, T, [("prompt", "x"), ("stream", "true")], audio)
        report("prompt with stream=true: the Warning too",
               st == 200 and any("prompt ignored" in w for w in warn), f"{st} {warn}")
        st, warn, body = warnings(port, T, [("prompt", "x"), ("include[]", "nothing")], audio)
        report("prompt and an unknown include[]: a Warning for each",
               st == 200 and len(warn) == 2, f"{warn}")
        st, warn, _ = warnings(port, T, [], audio)
        report("no prompt: no Warning", st == 200 and warn == [], f"{warn}")

        r = post(port, "/v1/audio/translations", [("model", "whisper-1")], audio)
        e = (r.json() or {}).get("error", {})
        report("POST /v1/audio/translations: 400 in OpenAI's shape, 'transcribes ... does not "
               "translate'", r.status == 400 and set(e) == {"message", "type", "param", "code"}
               and e["type"] == "invalid_request_error" and e["param"] is None and
               e["code"] == "translation_not_supported" and "does not translate" in e["message"],
               str(r))
        r = request(port, "GET", "/v1/audio/translations")
        report("GET /v1/audio/translations: 405", r.status == 405, str(r))

        # whisper-server's /inference
        ex = [("temperature", "0.0"), ("temperature_inc", "0.2"), ("response_format", "json")]
        st, warn, body = warnings(port, "/inference", ex, audio)
        report("whisper-server's curl example on /inference: {\"text\"} as /v1's, "
               "temperature_inc taken (not named as ignored)",
               st == 200 and json.loads(body) == {"text": text} and
               not any("temperature_inc" in w for w in warn), f"{st} {warn} {body[:200]!r}")
        # temperature_inc: whisper-server's fallback, as the list it makes
        for ours, theirs in (([("temperature", "0"), ("temperature_inc", "0.5")],
                              [("temperature", "0,0.5,1")]),
                             ([("temperature_inc", "0.25")], [("temperature", "0,0.25,0.5,0.75,1")]),
                             ([("temperature", "0.3"), ("temperature_inc", "0")],
                              [("temperature", "0.3")])):
            a = post(port, "/inference", ours + [("response_format", "verbose_json"),
                                                 ("seed", "3")], audio)
            b = post(port, T, theirs + [("response_format", "verbose_json"), ("seed", "3")], audio)
            report(f"/inference {ours}: as {theirs}", a.status == 200 and a.body == b.body,
                   f"{a}\n{b}")
        for bad in ([("temperature_inc", "2")], [("temperature_inc", "x")],
                    [("temperature", "0,1"), ("temperature_inc", "0.2")],
                    [("temperature_inc", "0.01")]):
            r = post(port, "/inference", bad, audio)
            report(f"/inference {bad}: 400 naming temperature_inc", r.status == 400 and
                   ((r.json() or {}).get("error") or {}).get("param") == "temperature_inc", str(r))
        r = post(port, "/inference", [], audio)
        report("/inference without response_format: json", r.status == 200 and
               r.json() == {"text": text}, str(r))
        for fmt in ("text", "srt", "vtt", "verbose_json"):
            a = post(port, "/inference", [("response_format", fmt)], audio)
            b = post(port, T, [("response_format", fmt)], audio)
            report(f"/inference response_format={fmt}: /v1's bytes",
                   a.status == 200 and a.body == b.body and
                   a.headers.get("content-type") == b.headers.get("content-type"), f"{a}\n{b}")
        a = post(port, "/inference", [("beam_size", "2"), ("response_format", "verbose_json")], audio)
        b = post(port, T, [("num_beams", "2"), ("response_format", "verbose_json")], audio)
        report("/inference beam_size=2: as num_beams=2", a.status == 200 and a.body == b.body,
               f"{a}\n{b}")
        second = clip_ms + 1000
        a = post(port, "/inference", [("offset_t", str(second)), ("duration", str(clip_ms + 50)),
                                      ("response_format", "verbose_json")], two)
        v = a.json() or {}
        report("/inference offset_t, duration: the second copy, times on the file's timeline",
               a.status == 200 and v.get("text") == text and v.get("segments") and
               v["segments"][0]["start"] >= second / 1000, str(a))
        r = post(port, "/inference", [("translate", "true")], audio)
        e = (r.json() or {}).get("error", {})
        report("/inference translate=true: 400, param translate",
               r.status == 400 and e.get("param") == "translate" and
               "does not translate" in e.get("message", ""), str(r))
        r = post(port, "/inference", [("translate", "false"), ("best_of", "5"),
                                      ("split_on_word", "true")], audio)
        report("/inference translate=false, best_of, split_on_word: 200",
               r.status == 200 and r.json() == {"text": text}, str(r))
        st, warn, _ = warnings(port, "/inference", [("best_of", "5"), ("no_context", "true")],
                               audio)
        report("whisper-server's settings hviske lacks: named in a Warning",
               st == 200 and any("best_of" in w and "no_context" in w for w in warn), f"{warn}")
        r = post(port, "/inference", [("colour", "red")], audio)
        report("/inference with a field neither server knows: 400 unknown_parameter",
               r.status == 400 and (r.json() or {}).get("error", {}).get("param") == "colour",
               str(r))
        r = post(port, T, [("beam_size", "2")], audio)
        report("whisper-server's beam_size on /v1/audio/transcriptions: 400",
               r.status == 400 and (r.json() or {}).get("error", {}).get("param") == "beam_size",
               str(r))
        r = post(port, "/inference", [("response_format", "json")], None)
        report("/inference without a file: 400 missing_file",
               r.status == 400 and (r.json() or {}).get("error", {}).get("code") == "missing_file",
               str(r))

        m = (request(port, "GET", "/v1/models").json() or {}).get("data", [{}])[0]
        report("/v1/models names the checkpoint", m.get("checkpoint") == "demo" and
               m.get("id") == "hviske", str(m))

        # the page's fields
        r = post(port, T, [("stream", "true"), ("progress", "true")], two)
        ev = events(r.body)
        pr = [e for e in ev if e.get("type") == "hviske.progress"]
        dur = len(two) and (wave.open(two_path, "rb").getnframes() / 16000)
        report(f"progress=true: hviske.progress events ({len(pr)}), seconds done and in total",
               r.status == 200 and pr and all(0 < p["done_s"] <= p["total_s"] for p in pr) and
               abs(pr[-1]["done_s"] - pr[-1]["total_s"]) < 1e-6 and
               abs(pr[-1]["total_s"] - dur) < 0.01 and ev[-1]["type"] == "transcript.text.done",
               f"{pr} {ev[-1:]}")
        r = post(port, T, [("stream", "true")], two)
        report("without progress: no progress events",
               r.status == 200 and not [e for e in events(r.body) if "progress" in e["type"]], "")
        d = os.path.join(tmp, "cli")
        os.makedirs(d)
        shutil.copy(two_path, os.path.join(d, "talk.wav"))
        r = post(port, T, [("stream", "true"), ("downloads", "txt,srt,vtt,json")], two,
                 filename="talk.wav")
        done = [e for e in events(r.body) if e.get("type") == "transcript.text.done"]
        dl = done[0].get("downloads", {}) if done else {}
        for fmt, args in (("txt", []), ("srt", ["--format", "srt"]), ("vtt", ["--format", "vtt"]),
                          ("json", ["--format", "json", "--word-timestamps"])):
            ref = Run(["-m", DEMO_MODEL, "-t", "1", "-q"] + args + ["talk.wav"], cwd=d)
            got = dl.get(fmt, "")
            same = without_timings(got) == without_timings(ref.out) if fmt == "json" \
                else got == ref.out
            report(f"downloads: {fmt} is the CLI's output for the same file and options",
                   r.status == 200 and same and got, f"server {got[:300]!r}\nCLI {ref.out[:300]!r}")
        report("downloads: the done event's text as without them",
               done and done[0]["text"] == json.loads(dl.get("json", "{}")).get("text"), "")
        for fields, param in (([("downloads", "txt")], "downloads"),
                              ([("progress", "true")], "progress"),
                              ([("stream", "true"), ("downloads", "txt,pdf")], "downloads"),
                              ([("stream", "true"), ("downloads", "txt,txt")], "downloads"),
                              ([("stream", "true"), ("progress", "yes")], "progress")):
            r = post(port, T, fields, audio)
            report(f"{fields}: 400 on {param}", r.status == 400 and
                   (r.json() or {}).get("error", {}).get("param") == param, str(r))
    finally:
        srv.stop()
    report("server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())
    p = subprocess.run([SERVER, "-m", os.path.join(DEMO_MODEL, "model.safetensors"), "--port", "0"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    report("-m DIR/model.safetensors: exit 1, the directory to give",
           p.returncode == 1 and f"give the checkpoint's directory, {DEMO_MODEL}" in p.stderr,
           p.stderr)
    p = subprocess.run([SERVER, "-m", "models/nope", "--port", "0"], cwd=SOURCE_DIR,
                       capture_output=True, text=True, timeout=TIMEOUT)
    report("-m models/nope: exit 1, no such directory, no download hint",
           p.returncode == 1 and "models/nope: no such file or directory" in p.stderr and
           "huggingface" not in p.stderr and "models/demo" in p.stderr, p.stderr)
    ggml = os.path.join(tmp, "ggml-base.bin")
    with open(ggml, "wb") as f:
        f.write(b"lmgg" + bytes(60))
    p = subprocess.run([SERVER, "-m", ggml, "--port", "0"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    report("-m ggml-base.bin: exit 1, a whisper.cpp model file",
           p.returncode == 1 and "a whisper.cpp model file (ggml)" in p.stderr, p.stderr)
    # what phones and browsers record (issue #61): M4A/AAC and WebM/Opus,
    # made by ffmpeg, give the WAV's text
    if shutil.which("ffmpeg"):
        srv = Server(DEMO_MODEL, "-t", "1", tmp=tmp)
        if srv.started("M4A and WebM: the server starts"):
            try:
                want = (post(srv.port, T, [], audio).json() or {}).get("text")
                for name, codec in (("phone.m4a", "aac"), ("browser.webm", "libopus")):
                    path = os.path.join(tmp, name)
                    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", EXAMPLE,
                                    "-c:a", codec, path], check=True)
                    with open(path, "rb") as f:
                        r = post(srv.port, T, [], f.read(), filename=name)
                    report(f"{name}: 200, the WAV's text", r.status == 200 and want and
                           (r.json() or {}).get("text") == want, str(r))
            finally:
                srv.stop()
    else:
        skip_or_fail("M4A and WebM uploads", "the ffmpeg program is missing")
    # the default upload cap takes an hour of 16 kHz 16-bit mono WAV (issue #61):
    # the server answers Expect: 100-continue for its Content-Length with 100
    srv = Server(DEMO_MODEL, "-t", "1", tmp=tmp)
    if srv.started("defaults: the server starts"):
        try:
            hour = 44 + 3600 * 16000 * 2
            body_len = hour + 300  # the form's part headers and boundaries
            m = ((request(srv.port, "GET", "/v1/models", None, {}).json() or {}).get("data")
                 or [{}])[0]
            report("defaults: max_upload_mb holds an hour of 16 kHz WAV (110 MiB)",
                   m.get("max_upload_mb", 0) * (1 << 20) >= body_len, f"{m}")
            with socket.create_connection(("127.0.0.1", srv.port), timeout=TIMEOUT) as c:
                c.sendall((f"POST {T} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                           f"multipart/form-data; boundary=x\r\nExpect: 100-continue\r\n"
                           f"Content-Length: {body_len}\r\n\r\n").encode())
                first = c.recv(64)
            report("defaults: an upload of an hour of 16 kHz WAV is let in (100 Continue)",
                   first.startswith(b"HTTP/1.1 100"), f"{first!r}")
        finally:
            srv.stop()
    # whisper-server's -l: the language of requests that name none (issue #61)
    tiny = os.path.join(os.environ.get("HV_FIXTURES", ""), "models", "tiny-f32")
    srv = Server(tiny, "-l", "de", "-t", "1", tmp=tmp)
    if srv.started("-l de: the server starts"):
        try:
            fields = [("response_format", "verbose_json")]
            r = post(srv.port, T, fields, audio)
            e = post(srv.port, T, fields + [("language", "en")], audio)
            report("-l de: a request without language is German, one with language en English",
                   (r.json() or {}).get("language") == "de" and
                   (e.json() or {}).get("language") == "en", f"{r} {e}")
        finally:
            srv.stop()
    # whisper-server's startup flags (issue #61): those asking for what hviske
    # does anyway start it with a notice each; the others are refused
    same = ["-p", "1", "-mc", "0", "-nc", "-bo", "2", "-et", "2.40", "-ac", "0", "-sow", "-sns",
            "-ng", "--convert", "--inference-path", "/inference", "--vad", "-vm",
            "models/ggml-silero-v5.1.2.bin", "--prompt", "Hviske, Aarhus"]
    srv = Server(DEMO_MODEL, "-t", "1", *same, tmp=tmp)
    if srv.started("whisper-server's harmless flags: the server starts"):
        try:
            r = post(srv.port, "/inference", [], audio)
            notes = [x for x in srv.stderr().splitlines() if x.startswith("hviske-server: note: ")]
            report("whisper-server's harmless flags: a notice each, /inference answers",
                   r.status == 200 and len(notes) == 14 and
                   any("-vm models/ggml-silero-v5.1.2.bin" in x for x in notes) and
                   any("--prompt" in x and "no text prompt" in x for x in notes), f"{r} {notes}")
        finally:
            srv.stop()
    for args, what in ((["-tr"], "translate"), (["-bs", "5"], "beam_size"),
                       (["-mc", "5"], "-mc 5"), (["--public", "web"], "built in"),
                       (["-bo", "3"], "-bo 3"), (["-di"], "diarize field"),
                       (["-tdrz"], "diarize field")):
        p = subprocess.run([SERVER, "-m", DEMO_MODEL, "--port", "0"] + args, capture_output=True,
                           text=True, timeout=TIMEOUT)
        report(f"{' '.join(args)}: refused (exit 2), naming why", p.returncode == 2 and
               "(whisper-server's) is not supported" in p.stderr and what in p.stderr, p.stderr)
    # whisper-server's POST /load (issue #61): off by default; with
    # --allow-load, the API key's, another checkpoint in place of the first
    srv = Server(DEMO_MODEL, "-t", "1", tmp=tmp)
    if srv.started("/load: the server starts"):
        try:
            r = post(srv.port, "/load", [("model", tiny)], b"")
            report("POST /load without --allow-load: 403 naming the option", r.status == 403 and
                   b"--allow-load" in r.body, str(r))
        finally:
            srv.stop()
    srv = Server(DEMO_MODEL, "-t", "1", "--workers", "2", "--allow-load", "--api-key", "k",
                 tmp=tmp)
    if srv.started("--allow-load: the server starts"):
        key = {"Authorization": "Bearer k"}

        def load(dir_, headers):
            body, ctype = multipart([("model", dir_)], None)
            return request(srv.port, "POST", "/load", body, {"Content-Type": ctype, **headers})

        def langs():
            m = request(srv.port, "GET", "/v1/models", None, key).json() or {}
            return ((m.get("data") or [{}])[0]).get("languages")

        try:
            before = langs()
            r = load(tiny, {})
            report("POST /load without the API key: 401", r.status == 401 and langs() == before,
                   str(r))
            r = load(os.path.join(tmp, "nowhere"), key)
            report("POST /load of a missing directory: 400 naming it, the model kept",
                   r.status == 400 and b"nowhere" in r.body and langs() == before, str(r))
            r = load(tiny, key)
            after = langs()
            body, ctype = multipart([("response_format", "verbose_json"), ("language", "de")],
                                    audio)
            t = request(srv.port, "POST", T, body, {"Content-Type": ctype, **key})
            report("POST /load of the fixture checkpoint: 200, its languages, German served",
                   r.status == 200 and (r.json() or {}).get("loaded") == tiny and
                   before != after and "de" in (after or []) and t.status == 200 and
                   (t.json() or {}).get("language") == "de", f"{r} {before} {after} {t}")
        finally:
            srv.stop()
        report("--allow-load: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())
    for lang, why in (("auto", "no language detection"), ("xx", "not a language of this model")):
        p = subprocess.run([SERVER, "-m", tiny, "-l", lang, "--port", "0"], capture_output=True,
                           text=True, timeout=TIMEOUT)
        report(f"-l {lang}: exit 1, the model's languages", p.returncode == 1 and why in p.stderr
               and "en, da, de" in p.stderr, p.stderr)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
