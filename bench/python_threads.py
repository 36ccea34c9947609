#!/usr/bin/python3
"""Python threads in parallel: the library's calls release the GIL, so two
threads, each with its own Model of one worker thread, finish a batch of
transcriptions sooner than one thread doing both halves in turn.

    HVISKE_LIBRARY=build/libhviske.so bench/python_threads.py [--model models/demo]
        [--audio examples/da-example.wav] [--n 20] [--repeats 3]

Prints the wall time of the same 2 x n transcriptions one after the other
and in two threads, and their ratio (the best of --repeats rounds, measured
in the same run; needs at least 2 free cores to show the gain)."""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import hviske  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="models/demo")
    ap.add_argument("--audio", default="examples/da-example.wav")
    ap.add_argument("--n", type=int, default=20, help="transcriptions per thread")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    models = [hviske.Model(a.model, threads=1) for _ in range(2)]
    with open(a.audio, "rb") as f:
        data = f.read()
    texts = set()

    def work(m):
        for _ in range(a.n):
            texts.add(m.transcribe(data, chunking="energy").text)

    work(models[0])  # warm-up
    seq, par = [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        work(models[0])
        work(models[1])
        seq.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        th = [threading.Thread(target=work, args=(m,)) for m in models]
        for t in th:
            t.start()
        for t in th:
            t.join()
        par.append(time.perf_counter() - t0)
    s, p = min(seq), min(par)
    print(f"{2 * a.n} transcriptions of {a.audio}: one thread {s:.2f} s, two threads "
          f"{p:.2f} s, {s / p:.2f}x (cores: {os.cpu_count()}, texts: {len(texts)})")
    return 0 if len(texts) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
