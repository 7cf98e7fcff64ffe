#!/usr/bin/env python3
"""Per-step decode time of the streaming decoder (examples/streaming_decoder) at several cache
sizes, in one run: PyTorch eager on the same model, inplace's eager interpreter, the copy-back
engine, the aliased engine, and the memory-bandwidth floor of the copy the aliased engine
removes. Prints a markdown table (docs/performance.md has the numbers).

    /usr/bin/python3 bench/decoder_bench.py [--s-max 256 1024 4096 16384] [--steps 32] [--reps 5]
        [--bin build/examples/streaming_decoder]

Needs torch (Debian's python3-torch for /usr/bin/python3) and a built streaming_decoder. For
each s_max the model is exported afresh (same seed, same weights) to a temporary folder; the C++
demo checks its decoding against PyTorch's before it times anything.
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXAMPLE = os.path.join(REPO, "examples", "streaming_decoder")
sys.path.insert(0, EXAMPLE)
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402

import make_model  # noqa: E402


def pytorch_step_us(s_max, steps, reps):
    """Median per-step time of PyTorch eager greedy decoding, caches updated in place."""
    model = make_model.build(s_max)
    times = []
    with torch.no_grad():
        for _ in range(reps):
            caches = model.new_caches()
            token = make_model.PROMPT_TOKEN
            for pos in range(steps):
                inputs = make_model.step_inputs(model, token, pos, caches)
                t0 = time.perf_counter()
                _, nxt = model(*inputs)
                times.append((time.perf_counter() - t0) * 1e6)
                token = int(nxt.item())
    return statistics.median(times)


def inplace_run(binary, s_max, steps, reps):
    with tempfile.TemporaryDirectory() as tmp:
        with contextlib.redirect_stdout(sys.stderr):
            make_model.main(["--s-max", str(s_max), "--steps", str(steps), "--out", tmp])
        out = os.path.join(tmp, "timings.json")
        proc = subprocess.run([binary, "--dir", tmp, "--reps", str(reps), "--json", out],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout)
            raise SystemExit("streaming_decoder failed for s_max %d" % s_max)
        with open(out) as f:
            return json.load(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--s-max", type=int, nargs="+", default=[256, 1024, 4096, 16384])
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "examples", "streaming_decoder"))
    args = ap.parse_args(argv)
    rows = []
    for s_max in args.s_max:
        sys.stderr.write("[decoder_bench] s_max %d ...\n" % s_max)
        r = inplace_run(args.bin, s_max, args.steps, args.reps)
        r["pytorch_us"] = pytorch_step_us(s_max, args.steps, args.reps)
        r["s_max"] = s_max
        rows.append(r)
    print("torch %s, %d intra-op threads; median per-step time over %d steps x %d runs (us)\n"
          % (torch.__version__, torch.get_num_threads(), args.steps, args.reps))
    print("| s_max | caches | PyTorch eager | inplace eager | copy-back engine | aliased engine "
          "| copy-back - aliased | copy floor (4 x caches) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %d | %.2f MiB | %.1f | %.1f | %.1f | **%.1f** | %.1f | %.1f |" % (
            r["s_max"], r["cache_bytes"] / 2**20, r["pytorch_us"], r["eager_us"],
            r["copy_back_us"], r["aliased_us"], r["copy_back_us"] - r["aliased_us"],
            r["copy_floor_us"]))
    print("\ncopy bandwidth measured in the same runs: %.1f GB/s"
          % statistics.median(r["copy_bandwidth_gbs"] for r in rows))


if __name__ == "__main__":
    main()
