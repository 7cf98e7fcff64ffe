"""Hugging Face decoders exported by torch.export (graph JSON fixtures without weights, random
weights made here) on the cpu, one thread: each graph compiled once by inplace.compile_graph and
timed at decode positions P, P+1, ..., next to the built-in model of the same size (`inplace bench
--size`, its aliased engine) and the memory-bandwidth floor (the bytes a step reads: every weight,
and the filled cache prefix, over the read bandwidth measured here), in one run.

  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/hf_graphs_cpu.py            # tiny fixtures
  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/hf_graphs_cpu.py --builtin small \\
      bench/graphs/small/*.json                # graphs exported by scripts/hf_export_graphs.py

The baseline is the copy-back engine of the same graph (`alias=False`: the caches written into
the engine's own buffers and copied back into the caller's every call), timed in the same run.
`--check N`: greedy tokens of both engines for N steps from fresh caches, equal. (That the
compiled graphs equal the eager interpreter on fresh draws at every position is what
tests/compiler/hf_export_test.cpp and prefix_attention_test.cpp prove.) Prints a table and, with
--out, writes JSON.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import inplace  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


def placeholders(graph):
    return {n["name"]: n for n in graph["nodes"] if n.get("op") == "placeholder"}


def random_state(graph, seed=0):
    """Every parameter, buffer and constant of the graph's signature, by its target: parameters
    drawn from N(0, 0.02) in their dtype, float buffers of rotary frequencies as a model makes
    them, caches and counters zero."""
    gen = torch.Generator().manual_seed(seed)
    nodes = placeholders(graph)
    state = {}
    for e in (graph.get("signature") or {}).get("inputs") or []:
        if e.get("kind") == "user_input":
            continue
        meta = nodes[e["node"]]["meta"]
        shape, dtype = meta["shape"], DTYPES[meta["dtype"]]
        if e.get("kind") == "parameter":
            t = torch.randn(shape, generator=gen).mul_(0.02).to(dtype)
        elif "inv_freq" in e["target"]:
            d = 2 * shape[-1]
            t = (1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))).reshape(shape).to(dtype)
        else:
            t = torch.zeros(shape, dtype=dtype)
        state[e["target"]] = t
    return state


def read_bandwidth_gbs():
    """One thread's read bandwidth: the best of five sums over 256 MB."""
    x = torch.ones(64 << 20, dtype=torch.float32)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - t0)
    return x.numel() * 4 / best / 1e9


def step_bytes(graph, state, position):
    """Every parameter's bytes, and of each cache (a 4-D buffer) the filled prefix."""
    total = 0
    for e in (graph.get("signature") or {}).get("inputs") or []:
        t = state.get(e.get("target"))
        if t is None:
            continue
        if e.get("kind") == "parameter":
            total += t.numel() * t.element_size()
        elif t.dim() == 4:
            total += t[:, :, :position + 1].numel() * t.element_size()
    return total


def compiled_engine(graph, alias):
    return inplace.compile_graph(graph, (torch.tensor([[1]]), torch.tensor([0])),
                                 random_state(graph), alias=alias)


def time_engine(compiled, position, steps, reps):
    """The best of `reps` means of `steps` decode steps at positions position, position + 1..."""
    token = torch.tensor([[1]])
    for t in range(8):
        compiled(token, torch.tensor([position + t]))
    means = []
    for _ in range(reps):
        times = []
        for t in range(steps):
            pos = torch.tensor([position + t])
            t0 = time.perf_counter()
            compiled(token, pos)
            times.append(time.perf_counter() - t0)
        means.append(sum(times) / len(times))
    return round(1e3 * min(means), 3)


def run_graph(path, position, steps, reps, check):
    with open(path) as f:
        graph = json.load(f)
    t0 = time.perf_counter()
    aliased = compiled_engine(graph, True)
    compile_s = time.perf_counter() - t0
    copy_back = compiled_engine(graph, False)
    nodes = placeholders(graph)
    cache = [n for n in nodes.values() if len(n["meta"]["shape"]) == 4]
    out = {"graph": os.path.relpath(path, ROOT), "compile_s": round(compile_s, 2),
           "bytes": step_bytes(graph, random_state(graph), position),
           "s_max": cache[0]["meta"]["shape"][2] if cache else None,
           "dtype": next((n["meta"]["dtype"] for n in nodes.values()
                          if n["meta"]["dtype"] != "int64"), None)}
    # Interleaved: aliased, copy-back, aliased, ... so that both see the same machine.
    a, c = [], []
    for _ in range(reps):
        a.append(time_engine(aliased, position, steps, 1))
        c.append(time_engine(copy_back, position, steps, 1))
    out["ms"], out["copy_back_ms"] = min(a), min(c)
    if check:
        out["tokens_equal"] = tokens(compiled_engine(graph, True), check) == tokens(
            compiled_engine(graph, False), check)
    return out


def tokens(compiled, steps):
    """Greedy tokens from fresh caches."""
    tok, seq = torch.tensor([[1]]), []
    for t in range(steps):
        tok = compiled(tok, torch.tensor([t]))[0][:, -1].argmax(-1, keepdim=True)
        seq.append(int(tok))
    return seq


def builtin_step(size, s_max, position):
    """The built-in model's aliased step at this size (`inplace bench`), in ms."""
    exe = os.path.join(os.environ.get("INPLACE_BUILD_DIR", os.path.join(ROOT, "build")), "inplace")
    out = "/tmp/hf_graphs_cpu_builtin.json"
    subprocess.run([exe, "bench", "--no-torch", "--size", size, "--s-max", str(s_max),
                    "--position", str(position), "--steps", "16", "--reps", "3", "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graphs", nargs="*", help="graph JSON files (default: the tiny fixtures, "
                    "tests/frontend/fixtures/hf/*.json)")
    ap.add_argument("--position", type=int, default=None,
                    help="first warm-up position (default 200, lower where the cache is shorter)")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--check", type=int, default=0, metavar="STEPS",
                    help="greedy tokens of both engines for STEPS steps, compared")
    ap.add_argument("--builtin", default=None, help="the built-in model's size to time too")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    paths = args.graphs or sorted(glob.glob(os.path.join(ROOT, "tests/frontend/fixtures/hf/*.json")))
    gbs = read_bandwidth_gbs()
    rows = []
    print("read bandwidth %.1f GB/s (one thread)" % gbs, flush=True)
    print("| graph | dtype | s_max | aliased step | copy-back step | floor | aliased / floor |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    for p in paths:
        with open(p) as f:
            s_max = max([n["meta"]["shape"][2] for n in placeholders(json.load(f)).values()
                         if len(n["meta"]["shape"]) == 4] or [256])
        # The warm-up's 8 steps and the timed ones stay inside the cache.
        last = s_max - 8 - args.steps
        position = args.position if args.position is not None else max(0, min(200, last))
        if position > last:
            sys.exit("hf_graphs_cpu: %s: positions %d..%d leave its cache of s_max %d; give a "
                     "lower --position or fewer --steps" % (p, position, position + 8 + args.steps
                                                             - 1, s_max))
        r = run_graph(p, position, args.steps, args.reps, args.check)
        r["position"] = position
        r["floor_ms"] = round(r["bytes"] / gbs / 1e6, 3)
        rows.append(r)
        print("| %s | %s | %s | %.3f ms | %.3f ms | %.3f ms | %.2fx |%s" % (
            os.path.basename(p), r["dtype"], r["s_max"], r["ms"], r["copy_back_ms"], r["floor_ms"],
            r["ms"] / r["floor_ms"] if r["floor_ms"] else float("nan"),
            "" if "tokens_equal" not in r else " tokens equal: %s |" % r["tokens_equal"]),
            flush=True)
    result = {"read_gbs": round(gbs, 1), "graphs": rows}
    if args.builtin:
        s_maxes = sorted({r["s_max"] for r in rows if r["s_max"]})
        result["builtin"] = {}
        for s in s_maxes:
            b = builtin_step(args.builtin, s, rows[0]["position"])
            result["builtin"][str(s)] = b
            row = b["rows"][0]
            floor = row["bytes_read"] / gbs / 1e6
            print("| built-in model (`--size %s`, C++ loop) | %s | %s | %.3f ms | %.3f ms | %.3f ms "
                  "| %.2fx |" % (args.builtin, b["dtype"], s, row["aliased_ms"],
                                 row["copy_back_ms"], floor, row["aliased_ms"] / floor))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
