#!/usr/bin/env python3
"""The web page of hviske-server (docs/SERVER.md "The web page"), in a real
browser: Debian's headless Chromium driven through chromium-driver by
Debian's python3-selenium, against servers on 127.0.0.1 with the demo model
(models/demo).

Covers:
  * the page's files: served at / with a Content-Security-Policy of its
    own origin only, their types, HEAD; --no-web: / and the files are 404
    and the API still answers;
  * an espeak-ng WAV chosen in the page: its name, duration and size
    shown before sending, the checkpoint's name at the top; the streamed
    transcript equals the CLI's text; every word carries a time and every
    segment shows its start time; clicking a word sets the player's
    currentTime to it and highlights it; the keyboard moves between words
    and seeks; one upload is one transcription (the access log): the
    TXT, SRT, VTT and JSON downloads are the CLI's bytes for the same file
    and options (JSON but for its timings), with no request of their own;
    copy to the clipboard;
  * a long file (several chunks): progress as the CLI shows it
    ("33% (12s of 36s), ETA 3s") while it runs, and at the end the
    transcript scrolled back to its start;
  * a file over --max-upload-mb: the option that raises it named, a
    16 kHz mono copy made in the browser offered, sent, transcribed, with
    a notice that the result may differ from the original's; a copy still
    over the limit said so;
  * a touch screen: "Tap", and no keyboard hint;
  * recording through Chromium's fake microphone (the WAV played as the
    capture device): the recording is converted to 16 kHz mono WAV and
    transcribed;
  * a server with --api-key: the page asks for the key, a wrong key is
    refused with a message, the right one works and stays in
    sessionStorage only; a key that goes bad before a transcription gives
    the key error;
  * HTML in a file name and in a transcript (a stand-in server on
    loopback that serves the real page and answers with HTML as text): shown
    as text, no element made, no script run;
  * errors a person understands: a file over --max-upload-mb refused
    before sending, audio over --max-audio-seconds (413), audio of 65
    channels (too many channels, not too long), a file that is
    not audio (400), a busy server's 503 with its Retry-After (the server's
    connections held by stalled clients, as test_server_hostile.py does);
  * a diarize model (a stand-in listing "diarize": true): "Tell speakers
    apart" offered (not for the demo model), diarize=true sent when
    ticked, each segment in its speaker's colour, labelled where the
    speaker changes;
  * the page behind a proxy that serves it under /hviske/;
  * a page of another origin calling the API: refused with 403;
  * the layout in a phone-sized window (no sideways scrolling), every
    control labelled, text contrast at least 4.5:1; screenshots of the
    page (wide and narrow) into the build folder.
Waits are for states of the page (hvtest.wait_until), never fixed sleeps.
Prints one line per case and ends with "N passed, M failed".
"""
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, WAIT, Run, finish, report, sentences_wav, wait_until  # noqa: E402
from hvserver import Server, request  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
BINARY_DIR = os.environ.get("HV_BINARY_DIR", ".")
SENTENCE = "I morgen bliver det gråt med minus tyve grader. Klokken er otte."
HOSTILE = '<img src=x onerror="window.__pwned=1">'


# ------------------------------------------------------------ the browser

class Browser:
    """Headless Chromium with a fresh profile; downloads go to
    self.downloads."""

    def __init__(self, tmp, name, args=(), size=(1280, 900)):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        o = webdriver.ChromeOptions()
        o.binary_location = CHROMIUM
        self.downloads = os.path.join(tmp, f"downloads-{name}")
        os.makedirs(self.downloads)
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu",
                  "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-extensions", "--disable-background-networking",
                  f"--user-data-dir={os.path.join(tmp, 'profile-' + name)}",
                  f"--window-size={size[0]},{size[1]}"] + list(args):
            o.add_argument(a)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)
        self.d.set_script_timeout(WAIT)
        self.d.execute_cdp_cmd("Browser.setDownloadBehavior",
                               {"behavior": "allow", "downloadPath": self.downloads})

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def wait(self, script, *args, timeout=WAIT):
        """Waits until the script returns something true; returns it."""
        return wait_until(lambda: self.js(script, *args), timeout=timeout, interval=0.05)

    def el(self, id_):
        from selenium.webdriver.common.by import By
        return self.d.find_element(By.ID, id_)

    def open(self, port):
        self.d.get(f"http://127.0.0.1:{port}/")

    def ready(self):
        return self.wait("return document.body.dataset.ready === '1'")

    def choose(self, path):
        self.el("file-input").send_keys(path)
        return self.wait("return document.getElementById('file-info').hidden === false && "
                         "document.getElementById('file-name').textContent")

    def text(self, id_):
        return self.js("return document.getElementById(arguments[0]).textContent", id_)

    def error(self):
        """(title, detail) of the page's error box once shown, else None."""
        return self.wait("const e = document.getElementById('error');"
                         "return e.hidden ? null : [document.getElementById('error-title')"
                         ".textContent, document.getElementById('error-detail').textContent]")

    def transcribe(self):
        """Presses Transcribe; waits for the end (words, an error or an
        empty result). Returns 'words', 'error' or 'done'."""
        self.js("document.getElementById('error').hidden = true;"
                "delete document.body.dataset.done; delete document.body.dataset.words;")
        self.wait("return !document.getElementById('transcribe').disabled")
        self.el("transcribe").click()
        return self.wait(
            "const b = document.body.dataset;"
            "if (b.state === 'running') return null;"
            "if (b.words) return 'words';"
            "if (!document.getElementById('error').hidden) return 'error';"
            "return b.done ? 'done' : null;")

    def download(self, fmt, name):
        """Clicks a download button; the file's bytes once complete."""
        path = os.path.join(self.downloads, name)
        if os.path.exists(path):
            os.remove(path)
        self.d.find_element("css selector", f"[data-format='{fmt}']").click()

        def complete():
            if not os.path.exists(path) or os.path.exists(path + ".crdownload"):
                return None
            with open(path, "rb") as f:
                return f.read() or None
        return wait_until(complete, interval=0.05)

    def screenshot(self, path):
        self.d.save_screenshot(path)
        return os.path.getsize(path) > 0

    def quit(self):
        self.d.quit()


def cli(args):
    return Run(["-m", DEMO_MODEL, "-t", "1"] + list(args))


def wav_seconds(path):
    with wave.open(path, "rb") as w:
        return w.getnframes() / w.getframerate()


def clock(s):
    """The CLI's progress durations: "1h02m03s", "2m03s", "45s"."""
    t = round(s)
    h, m, sec = t // 3600, t // 60 % 60, t % 60
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s" if m else f"{sec}s"


def write_wav(path, seconds, rate=16000, channels=1):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\0\0" * channels * int(seconds * rate))


# ------------------------------------------------------------------ cases

def test_files(port):
    """The page's files and their headers, without a browser."""
    r = request(port, "GET", "/")
    csp = r.headers.get("content-security-policy", "")
    report("GET /: the page, text/html", r.status == 200 and
           r.headers.get("content-type", "").startswith("text/html") and
           b"<title>" in r.body, str(r))
    report("GET /: Content-Security-Policy of its own origin, no inline script",
           "default-src 'none'" in csp and "script-src 'self'" in csp and
           "unsafe" not in csp and "connect-src 'self'" in csp and
           "frame-ancestors 'none'" in csp and
           r.headers.get("x-content-type-options") == "nosniff", csp)
    report("the page has no inline script or style and nothing from elsewhere",
           not re.search(rb"<script>|<script [^>]*>[^<]|<style|style=|https?://|\son[a-z]+=",
                         r.body), r.body[:400])
    for path, ctype in (("/index.html", "text/html"), ("/app.js", "text/javascript"),
                        ("/style.css", "text/css"), ("/icon.svg", "image/svg+xml")):
        r = request(port, "GET", path)
        report(f"GET {path}: {ctype}, the same policy", r.status == 200 and
               r.headers.get("content-type", "").startswith(ctype) and
               r.headers.get("content-security-policy") == csp and r.body, str(r))
    r = request(port, "HEAD", "/app.js")
    report("HEAD /app.js: no body", r.status == 200 and r.body == b"", str(r))
    r = request(port, "GET", "/app.js?v=2")
    report("GET /app.js?v=2: the query is ignored", r.status == 200 and r.body and
           r.headers.get("content-type", "").startswith("text/javascript"), str(r))
    for path in ("/nothing.js", "/web/app.js", "/../app.js", "/index.html/", "//app.js"):
        r = request(port, "GET", path)
        report(f"GET {path}: 404", r.status == 404, str(r))
    r = request(port, "POST", "/", b"x", {"Content-Type": "text/plain"})
    report("POST /: 405", r.status == 405, str(r))


def test_no_web(tmp):
    srv = Server(DEMO_MODEL, "-t", "1", "--no-web", tmp=tmp)
    if not srv.started("--no-web server starts"):
        return
    ok = all(request(srv.port, "GET", p).status == 404
             for p in ("/", "/index.html", "/app.js", "/style.css"))
    report("--no-web: / and the page's files are 404", ok, "")
    r = request(srv.port, "GET", "/v1/models")
    report("--no-web: the API answers", r.status == 200, str(r))
    srv.stop()
    report("--no-web server: SIGTERM, exit 0", *srv.clean_exit())


def test_models(port):
    r = request(port, "GET", "/v1/models")
    m = (r.json() or {}).get("data", [{}])[0]
    report("/v1/models: languages, defaults and limits for the page",
           m.get("languages") == ["da"] and m.get("language") == "da" and
           m.get("punctuation") is True and m.get("num_beams") == 1 and
           m.get("max_upload_mb") == 128 and m.get("max_audio_seconds") == 3600 and
           m.get("max_beams") == 16 and m.get("diarize") is False, str(r))


def transcriptions(srv):
    """The transcription requests of srv's access log."""
    return [a for a in srv.access_lines() if a.get("path") == "/v1/audio/transcriptions"]


def test_upload(b, srv, wav, tmp):
    """Choose a file, transcribe, follow along, take it away."""
    port = srv.port
    b.open(port)
    report("the page loads the model's languages and defaults, and names the checkpoint",
           b.ready() and b.js("return document.getElementById('language').value") == "da"
           and b.text("server-info").startswith("Model demo ·")
           and b.js("return document.getElementById('punctuation').checked") is True
           and b.js("return document.getElementById('beams').value") == "1"
           and b.js("return document.getElementById('beams').max") == "16",
           b.text("server-info"))
    report("empty state: a hint to choose, drop or record",
           "No transcript yet" in b.text("transcript") and
           b.js("return document.getElementById('transcribe').disabled") is True, "")
    name = b.choose(wav)
    dur = wav_seconds(wav)
    shown = b.wait("const d = document.getElementById('file-duration').textContent;"
                   "return /^\\d+:\\d+\\.\\d$/.test(d) ? d : null")
    m = re.fullmatch(r"(\d+):(\d+\.\d)", shown or "")
    report(f"file chosen: name, duration ({shown}), size shown before sending",
           name == os.path.basename(wav) and m and
           abs(int(m.group(1)) * 60 + float(m.group(2)) - dur) <= 0.06 and
           b.text("file-size") == f"{os.path.getsize(wav) / 1024:.1f} KiB",
           f"{name!r} {shown!r} {b.text('file-size')!r} (want {dur:.2f} s)")

    want = cli([wav])
    text = want.out.rstrip("\n")
    # the segments as the page shows them while the stream runs
    b.js("window.__seen = []; new MutationObserver(ms => { for (const m of ms)"
         " for (const n of m.addedNodes) if (n.classList && n.classList.contains('segment')"
         " && !n.querySelector('.w')) window.__seen.push(n.textContent); })"
         ".observe(document.getElementById('transcript'), {childList: true});")
    posts = len(transcriptions(srv))
    end = b.transcribe()
    streamed = b.js("return window.__seen")
    report("transcribed through the page", end == "words",
           f"{end} {b.js('return document.body.innerText')[:600]!r}")
    words = b.js("return [...document.querySelectorAll('#transcript .w')].map("
                 "w => [w.textContent, w.dataset.start, w.dataset.end])") or []
    shown = b.js("const t = document.getElementById('transcript').cloneNode(true);"
                 "t.querySelectorAll('.seg-time').forEach(e => e.remove());"
                 "document.body.appendChild(t); const s = t.innerText; t.remove();"
                 "return s.replace(/\\s+/g, ' ').trim()")
    report("the transcript equals the CLI's", " ".join(w[0] for w in words) == text and
           shown == text, f"page {words!r} {shown!r} CLI {text!r}")
    report("the streamed segments were shown as they came",
           streamed and " ".join(streamed) == text, f"{streamed!r}")
    times = [(float(s), float(e)) for _, s, e in words]
    report(f"every word carries a time ({len(times)} words)",
           times and all(0 <= s <= e <= dur + 0.01 for s, e in times) and
           all(a[0] <= c[0] for a, c in zip(times, times[1:])), f"{words!r}")
    wdir = os.path.dirname(wav)
    ref_json = json.loads(Run(["-m", DEMO_MODEL, "-t", "1", "--format", "json",
                               "--word-timestamps", os.path.basename(wav)], cwd=wdir).out)
    starts = b.js("return [...document.querySelectorAll('#transcript .seg-time')].map("
                  "e => [e.textContent, parseFloat(e.dataset.start)])") or []
    report("each segment shows its start time (the CLI's segments)",
           [x[1] for x in starts] == [g["start"] for g in ref_json["segments"]] and
           all(re.fullmatch(r"\d+:\d\d\.\d", x[0]) for x in starts), f"{starts!r}")
    stats = b.text("stats")
    report("elapsed time and real-time speed shown", re.search(
        r"in \d+\.\d s: \d+\.\d× real time", stats or ""), stats)

    b.wait("return document.getElementById('player').readyState >= 1")
    k = len(words) // 2
    spans = b.d.find_elements("css selector", "#transcript .w")
    spans[k].click()
    t = b.wait("const p = document.getElementById('player');"
               "return Math.abs(p.currentTime - arguments[0]) < 0.002 ? String(p.currentTime) : null",
               times[k][0])
    report(f"clicking word {k} ({words[k][0]!r}) moves the player to its start {times[k][0]}",
           t is not None, b.js("return document.getElementById('player').currentTime"))
    report("the word being played is highlighted",
           b.wait("return document.querySelector('.w.current') === arguments[0]", spans[k]), "")
    from selenium.webdriver.common.keys import Keys
    spans[k].send_keys(Keys.ARROW_RIGHT)
    focused = b.wait("return document.activeElement.dataset.i")
    spans[k + 1].send_keys(Keys.ENTER)
    t = b.wait("const p = document.getElementById('player');"
               "return Math.abs(p.currentTime - arguments[0]) < 0.002", times[k + 1][0])
    report("keyboard: the arrow moves to the next word, Enter seeks to it",
           focused == str(k + 1) and t, f"focused {focused}")

    base = os.path.splitext(os.path.basename(wav))[0]
    for fmt, args in (("txt", []), ("srt", ["--format", "srt"]), ("vtt", ["--format", "vtt"])):
        got = b.download(fmt, f"{base}.{fmt}")
        ref = cli(args + [wav]).raw
        report(f"the downloaded {fmt.upper()} is the CLI's, byte for byte",
               got == ref and got, f"page {got!r} CLI {ref!r}")
    got = b.download("json", f"{base}.json")
    ref = Run(["-m", DEMO_MODEL, "-t", "1", "--format", "json", "--word-timestamps",
               os.path.basename(wav)], cwd=wdir).raw

    def untimed(x):
        return re.sub(rb'("(?:frontend|encoder|decoder|vad|align)_ms": )[0-9.e+-]+', rb"\1X",
                      x or b"")
    report("the downloaded JSON is the CLI's --format json --word-timestamps, but for timings",
           got and untimed(got) == untimed(ref), f"page {got[:300]!r}\nCLI {ref[:300]!r}")
    report("one upload, one transcription: the stream alone (the downloads asked nothing more)",
           len(transcriptions(srv)) - posts == 1, f"{transcriptions(srv)[posts:]}")

    b.d.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": f"http://127.0.0.1:{port}",
        "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    b.el("copy").click()
    copied = b.wait("return document.getElementById('action-status').textContent"
                    ".startsWith('Copied')")
    clip = b.d.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], e => arguments[0](String(e)))")
    report("Copy text puts the transcript on the clipboard", copied and clip == text,
           f"{clip!r}")
    bad = [e["message"] for e in b.d.get_log("browser") if e.get("level") == "SEVERE"]
    report("no script error, failed load or Content-Security-Policy violation in the console",
           bad == [], f"{bad!r}")
    return text


def test_long(b, port, tmp):
    """Several chunks: progress with a percentage and the time left, and
    the transcript scrolled back to its start at the end."""
    long_wav = sentences_wav(os.path.join(tmp, "long.wav"), 14, 4.0)  # pauses end chunks
    b.d.set_window_size(1280, 600)  # a transcript taller than its box
    b.open(port)
    b.ready()
    b.choose(long_wav)
    b.js("window.__progress = []; window.__scrolled = 0;"
         "const t = document.getElementById('progress-text');"
         "new MutationObserver(() => window.__progress.push(t.textContent))"
         ".observe(t, {childList: true, characterData: true, subtree: true});"
         "const box = document.getElementById('transcript');"
         "box.addEventListener('scroll', () => { window.__scrolled = Math.max("
         "window.__scrolled, box.scrollTop); });")
    end = b.transcribe()
    seen = b.js("return window.__progress") or []
    pct = [m for m in (re.fullmatch(r"Transcribing… (\d+)% \((\d+s|\d+m\d\ds) of "
                                    r"(\d+s|\d+m\d\ds)\), ETA (\d+s|\d+m\d\ds)", x)
                       for x in seen) if m]
    report("progress as the CLI shows it: 'N% (D of T), ETA E', rising",
           end == "words" and pct and any(int(m.group(1)) < 100 for m in pct) and
           [int(m.group(1)) for m in pct] == sorted(int(m.group(1)) for m in pct) and
           pct[0].group(3) == clock(wav_seconds(long_wav)), f"{end} {seen[:8]!r}")
    box = b.js("const t = document.getElementById('transcript');"
               "return [t.scrollTop, t.scrollHeight, t.clientHeight]")
    report("after a long transcription the transcript is back at its start",
           box[1] > box[0] + box[2] and b.js("return window.__scrolled") > 0 and box[0] == 0,
           f"scrollTop, scrollHeight, clientHeight {box}, scrolled to {b.js('return window.__scrolled')}")
    b.d.set_window_size(1280, 900)


def test_shrink(b, tmp, wav):
    """A file over --max-upload-mb: a 16 kHz mono copy made in the page."""
    srv = Server(DEMO_MODEL, "-t", "1", "--max-upload-mb", "1", tmp=tmp)
    if not srv.started("1 MiB server starts"):
        return
    try:
        big = os.path.join(tmp, "stereo48k.wav")
        subprocess.run(["sox", wav, wav, wav, "-r", "48000", "-c", "2", "-b", "16", big],
                       check=True, capture_output=True, timeout=120)
        b.open(srv.port)
        b.ready()
        b.choose(big)
        err = b.error()
        report(f"a file over the limit ({os.path.getsize(big)} bytes): the option that raises "
               "it named, a 16 kHz mono copy offered, Transcribe off",
               err and "too large" in err[0] and "--max-upload-mb" in err[1] and
               b.js("return !document.getElementById('shrink').hidden") and
               b.js("return document.getElementById('transcribe').disabled"), f"{err}")
        b.el("shrink-button").click()
        name = b.wait("const n = document.getElementById('file-name').textContent;"
                      "return n.includes('16 kHz mono') ? n : null")
        size = b.text("file-size")
        report(f"the copy replaces the file ({name}, {size}), with a notice",
               name == "stereo48k (16 kHz mono).wav" and size.endswith("KiB") and
               b.js("return !document.getElementById('copy-notice').hidden") and
               "may differ slightly" in b.text("copy-notice") and
               b.js("return document.getElementById('error').hidden"), f"{size}")
        end = b.transcribe()
        said = b.js("return [...document.querySelectorAll('#transcript .w')]"
                    ".map(w => w.textContent).join(' ')") or ""
        report(f"the copy is transcribed: {said[:80]!r}", end == "words" and said, f"{end}")
        silent = os.path.join(tmp, "silent.wav")
        write_wav(silent, 40)  # 16 kHz mono already: the copy is as large
        b.choose(silent)
        b.el("shrink-button").click()
        st = b.wait("const s = document.getElementById('shrink-status').textContent;"
                    "return s.startsWith('Even') ? s : null")
        report("a copy still over the limit: said so", st and "over the limit" in st, f"{st}")
    finally:
        srv.stop()
    report("1 MiB server: SIGTERM, exit 0", *srv.clean_exit())


def test_touch(tmp, port, wav):
    """A touch screen: the hint says tap, without keys."""
    b = Browser(tmp, "touch", size=(390, 844))
    try:
        b.d.execute_cdp_cmd("Emulation.setTouchEmulationEnabled",
                            {"enabled": True, "maxTouchPoints": 5})
        b.open(port)
        b.ready()
        b.choose(wav)
        end = b.transcribe()
        report("touch screen: 'Tap a word', the keyboard hint hidden",
               end == "words" and b.js("return !document.getElementById('hint').hidden") and
               b.text("hint-action") == "Tap" and
               b.js("return document.querySelector('#hint .keys').offsetParent === null"),
               b.text("hint"))
    finally:
        b.quit()


def test_layout(b, port, wav):
    """Screenshots, labels and contrast, wide and phone-sized."""
    b.d.set_window_size(1280, 900)
    b.js("document.getElementById('player').pause()")
    shot = os.path.join(BINARY_DIR, "web-page.png")
    report(f"screenshot: {shot}", b.screenshot(shot), "")
    unlabelled = b.js(
        "return [...document.querySelectorAll('input, select, button, textarea')]"
        ".filter(e => e.offsetParent !== null || e.id === 'file-input')"
        ".filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')"
        " && !e.textContent.trim()).map(e => e.outerHTML)")
    report("every control has a label", unlabelled == [], f"{unlabelled!r}")
    contrast = """
        function rgb(c) { const m = c.match(/[\\d.]+/g).map(Number); return m; }
        function lum(c) {
          const v = c.slice(0, 3).map(x => { x /= 255;
            return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
          return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
        }
        function bg(e) {
          for (; e; e = e.parentElement) {
            const c = rgb(getComputedStyle(e).backgroundColor);
            if (c.length < 4 || c[3] > 0) return c;
          }
          return [255, 255, 255];
        }
        const bad = [];
        for (const e of document.querySelectorAll('body *')) {
          if (!e.offsetParent || e.closest('button:disabled')) continue;
          const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
          if (!own) continue;
          const a = lum(rgb(getComputedStyle(e).color)), z = lum(bg(e));
          const r = (Math.max(a, z) + 0.05) / (Math.min(a, z) + 0.05);
          if (r < 4.5) bad.push(e.tagName + '.' + e.className + ': ' + r.toFixed(2));
        }
        return bad;"""
    for scheme in ("light", "dark"):
        b.d.execute_cdp_cmd("Emulation.setEmulatedMedia", {
            "features": [{"name": "prefers-color-scheme", "value": scheme}]})
        low = b.js(contrast)
        report(f"text contrast at least 4.5:1 ({scheme} colours)", low == [], f"{low!r}")
    b.d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    b.d.set_window_size(390, 844)
    fits = b.wait("return document.documentElement.scrollWidth <= "
                  "document.documentElement.clientWidth")
    shot = os.path.join(BINARY_DIR, "web-page-narrow.png")
    report("phone-sized window (390 px): no sideways scrolling, screenshot " + shot,
           fits and b.screenshot(shot), b.js("return document.documentElement.scrollWidth"))
    b.d.set_window_size(1280, 900)


def test_record(tmp, port, wav, text):
    """Chromium's fake microphone plays the WAV once, then silence."""
    b = Browser(tmp, "mic", ["--use-fake-ui-for-media-stream",
                             "--use-fake-device-for-media-stream",
                             f"--use-file-for-fake-audio-capture={wav}%noloop"])
    try:
        b.open(port)
        b.ready()
        b.el("record").click()
        recording = b.wait("return document.getElementById('record')"
                           ".getAttribute('aria-pressed') === 'true'")
        report("Record: the microphone opens", recording, b.text("record-status"))
        if not recording:
            return
        # the whole clip, and a little silence after it
        dur = wav_seconds(wav) + 1.0
        b.wait("return parseFloat(document.getElementById('record-status').dataset.seconds)"
               " >= arguments[0]", dur)
        b.el("record").click()
        name = b.wait("const n = document.getElementById('file-name').textContent;"
                      "return n.startsWith('recording-') ? n : null")
        got = b.wait("const d = document.getElementById('file-duration').textContent;"
                     "return /^\\d+:\\d+\\.\\d$/.test(d) ? d : null")
        m = re.fullmatch(r"(\d+):(\d+\.\d)", got or "")
        kib = re.fullmatch(r"([\d.]+) KiB", b.text("file-size") or "")
        # 16 kHz, mono, 16 bits: 32000 bytes a second and the 44-byte header
        report(f"the recording becomes a 16 kHz mono WAV ({name}, {got}, "
               f"{b.text('file-size')})",
               name and name.endswith(".wav") and m and kib and
               abs((float(kib.group(1)) * 1024 - 44) / 32000 -
                   (int(m.group(1)) * 60 + float(m.group(2)))) < 0.06,
               b.text("record-status"))
        end = b.transcribe()
        said = b.js("return [...document.querySelectorAll('#transcript .w')]"
                    ".map(w => w.textContent).join(' ')") or ""
        want = set(re.findall(r"\w+", text.lower()))
        heard = set(re.findall(r"\w+", said.lower()))
        report(f"the recording is transcribed: {said!r}",
               end == "words" and len(want & heard) >= 0.7 * len(want),
               f"{end} want {text!r}")
    finally:
        b.quit()


def test_key(b, tmp, wav):
    srv = Server(DEMO_MODEL, "-t", "1", "--api-key", "sesame-7", tmp=tmp)
    if not srv.started("--api-key server starts"):
        return
    try:
        r = request(srv.port, "GET", "/")
        report("--api-key: the page itself needs no key", r.status == 200, str(r))
        # count the page's global pointer listeners and model requests
        b.d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
            window.hvCount = {pointerdown: 0, models: 0};
            const add = window.addEventListener;
            window.addEventListener = function (type, ...rest) {
              if (type === "pointerdown") window.hvCount.pointerdown++;
              return add.call(this, type, ...rest);
            };
            const f = window.fetch;
            window.fetch = function (url, ...rest) {
              if (String(url).includes("v1/models")) window.hvCount.models++;
              return f.call(this, url, ...rest);
            };"""})
        b.open(srv.port)
        asked = b.wait("return !document.getElementById('key-panel').hidden")
        b.screenshot(os.path.join(BINARY_DIR, "web-page-key.png"))
        report("--api-key: the page asks for the key",
               asked and "requires an API key" in b.text("key-message") and
               b.js("return document.activeElement.id") == "key-input", b.text("key-message"))
        b.el("key-input").send_keys("open-sesame")
        b.el("key-form").submit()
        again = b.wait("return !document.getElementById('key-panel').hidden && "
                       "document.getElementById('key-message').textContent"
                       ".includes('not accepted')")
        report("a wrong key: refused with a message, asked again", again,
               b.text("key-message"))
        b.el("key-input").send_keys("sesame-7")
        b.el("key-form").submit()
        report("the right key: the page is ready",
               b.ready() and b.js("return document.getElementById('key-panel').hidden"), "")
        counts = b.js("return window.hvCount")
        report("two key entries: one global pointer listener, one model request per load and "
               "per key", counts == {"pointerdown": 1, "models": 3}, f"{counts}")
        report("the key is kept in sessionStorage only",
               b.js("return sessionStorage.getItem('hviske-api-key')") == "sesame-7" and
               b.js("return localStorage.length") == 0 and
               "sesame" not in b.js("return document.cookie"), "")
        b.choose(wav)
        end = b.transcribe()
        report("with the key: transcribed", end == "words", f"{end}")
        b.js("sessionStorage.setItem('hviske-api-key', 'stale')")
        end = b.transcribe()
        err = b.error()
        report("a wrong key at transcription: the key error, and the key asked for",
               end == "error" and err and "API key" in err[0] and
               b.wait("return !document.getElementById('key-panel').hidden"), f"{end} {err}")
    finally:
        srv.stop()
    report("--api-key server: SIGTERM, exit 0", *srv.clean_exit())


def test_limits(b, tmp, wav):
    srv = Server(DEMO_MODEL, "-t", "1", "--max-upload-mb", "1", "--max-audio-seconds", "2",
                 tmp=tmp)
    if not srv.started("limits server starts"):
        return
    try:
        b.open(srv.port)
        b.ready()
        big = os.path.join(tmp, "big.wav")
        write_wav(big, 40)  # 1.28 MB
        b.choose(big)
        err = b.error()
        report("a file over --max-upload-mb: 'too large' before sending, Transcribe off",
               err and "too large" in err[0] and "1 MiB" in err[1] and "--max-upload-mb" in err[1] and
               b.js("return document.getElementById('transcribe').disabled"), f"{err}")
        b.choose(wav)
        end = b.transcribe()
        err = b.error()
        report("audio over --max-audio-seconds: the 413 explained",
               end == "error" and err and "too long" in err[0] and "0:02.0" in err[1], f"{err}")
        wide = os.path.join(tmp, "wide.wav")
        write_wav(wide, 0.5, channels=65)
        b.choose(wide)
        end = b.transcribe()
        err = b.error()
        report("audio of 65 channels: too many channels, not too long (issue #51)",
               end == "error" and err and "more channels" in err[0] and "65 channels" in err[1]
               and "too long" not in " ".join(err), f"{err}")
        b.js("const t = new DataTransfer();"
             "t.items.add(new File(['not audio'], 'dropped.wav', {type: 'audio/wav'}));"
             "const z = document.getElementById('drop');"
             "z.dispatchEvent(new DragEvent('dragover', {dataTransfer: t, bubbles: true}));"
             "z.dispatchEvent(new DragEvent('drop', {dataTransfer: t, bubbles: true}));")
        report("a file dropped on the page is chosen",
               b.wait("return document.getElementById('file-name').textContent === "
                      "'dropped.wav' && document.getElementById('file-size').textContent"
                      " === '9 bytes'"), b.text("file-name"))
        junk = os.path.join(tmp, "notes.wav")
        with open(junk, "w") as f:
            f.write("these are not the samples you are looking for\n" * 20)
        b.choose(junk)
        end = b.transcribe()
        err = b.error()
        report("a file that is not audio: the 400 explained",
               end == "error" and err and "could not be read as audio" in err[0], f"{err}")
    finally:
        srv.stop()
    report("limits server: SIGTERM, exit 0", *srv.clean_exit())


def test_busy(b, tmp):
    """Connections held by stalled clients: the page's request gets the
    server's 503 too_many_connections, Retry-After: 1."""
    srv = Server(DEMO_MODEL, "-t", "1", "--max-connections", "8", "--timeout", "600", tmp=tmp)
    if not srv.started("busy server starts"):
        return
    stalled = []
    try:
        b.open(srv.port)
        b.ready()
        short = os.path.join(tmp, "short.wav")
        write_wav(short, 0.25, 8000)
        b.choose(short)
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Stall: ")
            stalled.append(s)
        crowded = wait_until(lambda: request(srv.port, "GET", "/v1/models").status == 503,
                             interval=0.05)
        report("busy server: its connections taken by stalled clients", crowded, "")
        end = b.transcribe()
        err = b.error()
        b.screenshot(os.path.join(BINARY_DIR, "web-page-busy.png"))
        report("the busy server's 503: when to try again",
               end == "error" and err and "busy" in err[0] and
               re.search(r"Try again in 1 second \(at \d", err[0]), f"{end} {err}")
        for s in stalled:
            s.close()
        stalled = []
        wait_until(lambda: request(srv.port, "GET", "/v1/models").status == 200, interval=0.05)
        end = b.transcribe()
        report("the busy server free again: the same file is transcribed",
               end in ("words", "done") and b.js("return document.getElementById('error').hidden"),
               f"{end} {b.error() if end == 'error' else ''}")
    finally:
        for s in stalled:
            s.close()
        srv.stop()
    report("busy server: SIGTERM, exit 0", *srv.clean_exit())


class Hostile(http.server.BaseHTTPRequestHandler):
    """A stand-in server: the real page and model listing from the real
    server, and a streamed transcription whose text and downloads are
    HTML."""
    real = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.real}{self.path}") as r:
            body = r.read()
            self.send_response(r.status)
            for k in ("Content-Type", "Content-Security-Policy", "X-Content-Type-Options"):
                if r.headers.get(k):
                    self.send_header(k, r.headers[k])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        words = ["<b>Hej</b>", "<img", "src=x", 'onerror="window.__pwned=1">']
        text = " ".join(words)
        timed = [{"word": w, "start": i * 0.2, "end": i * 0.2 + 0.2, "probability": 1}
                 for i, w in enumerate(words)]
        result = {"file": "x.wav", "text": text, "language": "da", "duration": 1.0,
                  "words": timed, "segments": [{"start": 0, "end": 1, "text": text,
                                                "words": timed}]}
        downloads = {"txt": text + "\n", "json": json.dumps(result),
                     "srt": f"1\n00:00:00,000 --> 00:00:01,000\n{text}\n\n",
                     "vtt": f"WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n{text}\n\n"}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for ev in ({"type": "transcript.text.delta", "delta": text},
                   {"type": "transcript.text.done", "text": text, "downloads": downloads}):
            self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
        self.wfile.flush()
        self.close_connection = True


class Speakers(Hostile):
    """A stand-in server for a diarize model: the real page, the real
    model listing with "diarize": true, and a transcription of four
    segments by speakers 0, 1, 0 and 0 (the CLI's JSON); the forms it got in
    `forms`."""
    forms = []

    def do_GET(self):
        if not self.path.endswith("/v1/models"):
            return Hostile.do_GET(self)
        with urllib.request.urlopen(f"http://127.0.0.1:{self.real}{self.path}") as r:
            listing = json.loads(r.read())
        listing["data"][0]["diarize"] = True
        body = json.dumps(listing).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        Speakers.forms.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        turns = [(0, "Hej med dig"), (1, "Hej selv"), (0, "Hvordan går det"), (0, "Godt")]
        segs, t = [], 0.0
        for k, text in turns:
            words = [{"word": w, "start": t + i * 0.3, "end": t + i * 0.3 + 0.3,
                      "probability": 1} for i, w in enumerate(text.split())]
            segs.append({"start": t, "end": words[-1]["end"], "speaker": k, "text": text,
                         "words": words})
            t = words[-1]["end"] + 0.5
        text = " ".join(x for _, x in turns)
        result = {"file": "x.wav", "text": text, "language": "da", "duration": t,
                  "segments": segs}
        downloads = {"txt": text + "\n", "json": json.dumps(result), "srt": "", "vtt": ""}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for ev in [{"type": "transcript.text.delta", "delta": x} for _, x in turns] + [
                {"type": "transcript.text.done", "text": text, "downloads": downloads}]:
            self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
        self.wfile.flush()
        self.close_connection = True


def test_speakers(b, port, wav):
    """A diarize model: the page offers "Tell speakers apart" (hidden for
    the demo model), sends diarize=true when it is ticked, and shows each
    segment with its speaker's colour and, where the speaker changes, its
    label."""
    b.open(port)
    b.ready()
    report("plain model: no speakers option",
           b.js("return document.getElementById('speakers-option').hidden") is True, "")
    Speakers.real = port
    Speakers.forms = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Speakers)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        b.open(httpd.server_address[1])
        b.ready()
        shown = b.js("return document.getElementById('speakers-option').hidden") is False
        b.choose(wav)
        b.transcribe()
        plain = Speakers.forms[-1] if Speakers.forms else b""
        b.el("speakers").click()
        end = b.transcribe()
        form = Speakers.forms[-1] if len(Speakers.forms) > 1 else b""
        report("diarize model: the speakers option shown, diarize=true sent only when ticked",
               shown and b'name="diarize"' not in plain and
               re.search(rb'name="diarize"\r\n\r\ntrue\r\n', form) is not None,
               f"{shown} {form[-400:]!r}")
        got = b.js("""return [...document.querySelectorAll('#transcript .segment')].map(p => [
            p.dataset.speaker, getComputedStyle(p).borderLeftColor,
            (p.querySelector('.speaker-label') || {}).textContent || null])""")
        ok = end == "words" and [g[0] for g in got] == ["0", "1", "0", "0"]
        ok = ok and [g[2] for g in got] == ["Speaker 1", "Speaker 2", "Speaker 1", None]
        ok = ok and got[0][1] == got[2][1] == got[3][1] != got[1][1]
        report("segments coloured by speaker (one colour a speaker), labelled where it changes",
               ok, f"{end} {got}")
    finally:
        httpd.shutdown()
        httpd.server_close()


class Prefixed(http.server.BaseHTTPRequestHandler):
    """A reverse proxy that serves the real server under /hviske/."""
    real = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        if not self.path.startswith("/hviske/"):
            self.send_error(404)
            return
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection("127.0.0.1", self.real, timeout=WAIT)
        try:
            c.request(self.command, self.path[len("/hviske"):], body,
                      {k: v for k, v in self.headers.items()
                       if k.lower() in ("content-type", "authorization")})
            r = c.getresponse()
            out = r.read()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        finally:
            c.close()

    do_GET = do_POST = forward


def test_prefix(b, port, wav):
    """The page behind a proxy under a path prefix: it asks the API by
    paths relative to itself."""
    Prefixed.real = port
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Prefixed)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        b.d.get(f"http://127.0.0.1:{httpd.server_address[1]}/hviske/")
        b.ready()
        b.choose(wav)
        end = b.transcribe()
        report("behind a proxy under /hviske/: the page works", end == "words", f"{end}")
    finally:
        httpd.shutdown()
        httpd.server_close()


class Elsewhere(http.server.BaseHTTPRequestHandler):
    """A page of another origin whose script calls the real server's API
    (issue #51, finding 10): a transcription posted as a form in no-cors
    mode (the browser sends it, the page cannot read the answer) and a
    read of /v1/models in cors mode."""
    real = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        api = f"http://127.0.0.1:{self.real}"
        page = f"""<!doctype html><title>elsewhere</title><script>
window.__done = (async () => {{
  const f = new FormData();
  f.append("file", new Blob([new Uint8Array(44)], {{type: "audio/wav"}}), "a.wav");
  await fetch("{api}/v1/audio/transcriptions", {{method: "POST", body: f, mode: "no-cors"}});
  try {{ await fetch("{api}/v1/models"); return "read"; }}
  catch (e) {{ return "refused"; }}
}})().then(r => window.__result = r);
</script>""".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)


def test_elsewhere(b, srv):
    """A page of another origin cannot make the server transcribe: its
    requests are refused with 403 origin_not_allowed."""
    Elsewhere.real = srv.port
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        n0 = len(srv.access_lines())
        b.d.get(f"http://127.0.0.1:{httpd.server_address[1]}/")
        result = b.wait("return window.__result")
        lines = srv.access_lines()[n0:]
        mine = [(a["route"], a["status"]) for a in lines
                if a["route"] in ("/v1/audio/transcriptions", "/v1/models")]
        report("a page of another origin: its transcription and its read of /v1/models "
               "refused with 403, and the page reads nothing",
               result == "refused" and ("/v1/audio/transcriptions", 403) in mine
               and ("/v1/models", 403) in mine and
               all(st == 403 for _, st in mine), f"{result} {mine}")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_hostile_text(b, port, wav, tmp):
    Hostile.real = port
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        b.open(httpd.server_address[1])
        b.ready()
        odd = os.path.join(tmp, HOSTILE.replace("1", "2") + ".wav")
        shutil.copy(wav, odd)
        name = b.choose(odd)
        end = b.transcribe()
        got = b.js("return document.getElementById('transcript').textContent")
        report("HTML in a file name and a transcript: shown as text",
               name == os.path.basename(odd) and end == "words" and
               '<img src=x onerror="window.__pwned=1">' in got and "<b>Hej</b>" in got,
               f"{name!r} {got!r}")
        report("... no element made from it, no script run",
               b.js("return document.querySelectorAll('main img, main b').length") == 0 and
               b.js("return window.__pwned === undefined"), "")
    finally:
        httpd.shutdown()
        httpd.server_close()


def main():
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("python3-selenium")
    if missing or not shutil.which("espeak-ng"):
        report("browser and espeak-ng installed", False,
               f"missing {missing or ['espeak-ng']}: run scripts/install-deps.sh")
        return finish()
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="hv-test-web-") as tmp:
        wav = os.path.join(tmp, "morgen.wav")
        subprocess.run(["espeak-ng", "-v", "da", "-w", wav, SENTENCE], check=True,
                       capture_output=True, timeout=120)
        test_no_web(tmp)
        srv = Server(DEMO_MODEL, "-t", "1", tmp=tmp)
        report("server starts", srv.port is not None, srv.stderr())
        if not srv.port:
            return finish()
        b = None
        try:
            test_files(srv.port)
            test_models(srv.port)
            b = Browser(tmp, "main")
            text = test_upload(b, srv, wav, tmp)
            test_layout(b, srv.port, wav)
            test_long(b, srv.port, tmp)
            test_shrink(b, tmp, wav)
            test_prefix(b, srv.port, wav)
            test_elsewhere(b, srv)
            test_hostile_text(b, srv.port, wav, tmp)
            test_speakers(b, srv.port, wav)
            test_key(b, tmp, wav)
            test_limits(b, tmp, wav)
            test_busy(b, tmp)
            b.quit()
            b = None
            test_record(tmp, srv.port, wav, text)
            test_touch(tmp, srv.port, wav)
        finally:
            if b:
                b.quit()
            srv.stop()
        report("main server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())
    print(f"# {time.time() - t0:.1f} s")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
