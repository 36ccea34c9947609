#!/usr/bin/python3
"""Python threads in parallel: the library's calls release the GIL, so two
threads finish a batch of transcriptions sooner than one thread doing both
halves in turn, whether they share one Model or have one each.

    HVISKE_LIBRARY=build/libhviske.so bench/python_threads.py [--model models/demo]
        [--audio examples/da-example.wav] [--n 20] [--repeats 3]

Prints the wall time of the same 2 x n transcriptions (each with one worker
thread) one after the other, in two threads sharing one Model (the first
thread uses the Model's context, the other one a context of its own per
call), and in two threads with a Model each, and the ratios (the best of
--repeats rounds, measured in the same run; needs at least 2 free cores to
show the gain)."""
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
    shared = hviske.Model(a.model, threads=1)
    own = [shared, hviske.Model(a.model, threads=1)]
    with open(a.audio, "rb") as f:
        data = f.read()
    texts = set()

    def work(m):
        for _ in range(a.n):
            texts.add(m.transcribe(data, chunking="energy").text)

    def threads(models):
        t0 = time.perf_counter()
        th = [threading.Thread(target=work, args=(m,)) for m in models]
        for t in th:
            t.start()
        for t in th:
            t.join()
        return time.perf_counter() - t0

    work(shared)  # warm-up
    seq, one, two = [], [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        work(shared)
        work(shared)
        seq.append(time.perf_counter() - t0)
        one.append(threads([shared, shared]))
        two.append(threads(own))
    s, p1, p2 = min(seq), min(one), min(two)
    print(f"{2 * a.n} transcriptions of {a.audio}: one thread {s:.2f} s; two threads "
          f"sharing one Model {p1:.2f} s, {s / p1:.2f}x; two threads with a Model each "
          f"{p2:.2f} s, {s / p2:.2f}x (cores: {os.cpu_count()}, texts: {len(texts)})")
    return 0 if len(texts) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
