#!/usr/bin/env python3
"""A/B of builds and switches on Hugging Face decoders' steps, in processes alternated: each arm
(a build folder and the environment it runs under) times each model in its own
`bench/hf_variants.py` process, the arms in turn, `--processes` times over, so that a drift of
the machine reads in every arm alike and a switch read once a process (INPLACE_CUDA_GEMV, a
probe's) takes its arm's value. One table of every process's rounds and each arm's mean against
the first arm's.

    python3 bench/hf_ab.py --arm main=build-main --arm new=build-new \\
        --arm cols=build-main:INPLACE_CUDA_GEMV=columns \\
        --models llama:medium,gpt2:medium,llama:llama1b [--processes 2] [--json OUT.json]

An arm is NAME=BUILD[:VAR=VALUE,...] (BUILD holds python/inplace/_C*.so, as INPLACE_BUILD_DIR).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hf_variants  # noqa: E402


def parse_arm(text):
    name, eq, rest = text.partition("=")
    build, _, settings = rest.partition(":")
    if not name or not eq or not build:
        raise argparse.ArgumentTypeError("expected NAME=BUILD[:VAR=VALUE,...], got %r" % text)
    # The settings as a variant's (hf_variants.py reads the same VAR=VALUE list).
    return name, build, hf_variants.parse_variant(name + ":" + settings)[1]


def parse_models(text):
    models = []
    for item in filter(None, text.split(",")):
        model, sep, shape = item.partition(":")
        if not sep or not model or not shape:
            raise argparse.ArgumentTypeError("expected MODEL:SHAPE, got %r" % item)
        models.append((model, shape))
    if not models:
        raise argparse.ArgumentTypeError("no MODEL:SHAPE in %r" % text)
    return models


def parse_args(argv):
    p = argparse.ArgumentParser(prog="hf_ab.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--arm", action="append", type=parse_arm, required=True,
                   help="NAME=BUILD[:VAR=VALUE,...] (repeat; the first is the reference)")
    p.add_argument("--models", type=parse_models, default=parse_models("llama:medium"),
                   help="comma list of MODEL:SHAPE (default llama:medium)")
    p.add_argument("--processes", type=int, default=2, help="processes an arm a model (2)")
    p.add_argument("--rounds", type=int, default=2, help="rounds a process (2)")
    p.add_argument("--json", help="write every process's rounds here")
    args = p.parse_args(argv)
    names = [a[0] for a in args.arm]
    if len(set(names)) != len(names):
        p.error("arm names must differ: %s" % ", ".join(names))
    return args


def run_variants(arm, model, shape, rounds):
    """One hf_variants.py process of `arm` on the model: its rounds (ms)."""
    name, build, env = arm
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "variants.json")
        cmd = [sys.executable, os.path.join(HERE, "hf_variants.py"), "--model", model, "--shape",
               shape, "--rounds", str(rounds), "--variant", name + ":", "--json", out]
        full_env = dict(os.environ, INPLACE_BUILD_DIR=os.path.abspath(build), **env)
        r = subprocess.run(cmd, env=full_env, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            raise RuntimeError("arm %s, %s %s: hf_variants.py failed (%d):\n%s" % (
                name, model, shape, r.returncode, (r.stdout + r.stderr)[-2000:]))
        with open(out) as f:
            doc = json.load(f)
    return doc["variants"][name]["ms"], doc.get("device", "")


def collect(arms, models, processes, rounds, run=run_variants, log=print):
    """{(model, shape): {arm: [[ms of each round] of each process]}} and the device, the arms in
    turn within each process round."""
    results, device = {}, ""
    for model, shape in models:
        by_arm = results.setdefault((model, shape), {a[0]: [] for a in arms})
        for p in range(processes):
            for arm in arms:
                ms, device = run(arm, model, shape, rounds)
                by_arm[arm[0]].append(ms)
                log("[ab] %s %s %s process %d: %s ms" % (
                    model, shape, arm[0], p + 1, " / ".join("%.4f" % m for m in ms)))
    return results, device


def table(results, arm_names):
    """A markdown table: a row a model, a column an arm (each process's rounds, and the mean's
    change against the first arm)."""
    lines = ["| model | " + " | ".join(arm_names) + " |",
             "|---|" + "---:|" * len(arm_names)]
    for (model, shape), by_arm in results.items():
        ref = statistics.fmean([m for proc in by_arm[arm_names[0]] for m in proc])
        cells = []
        for name in arm_names:
            flat = [m for proc in by_arm[name] for m in proc]
            text = ", ".join(" / ".join("%.4f" % m for m in proc) for proc in by_arm[name])
            if name != arm_names[0]:
                text += " (%+.1f%%)" % (100.0 * (statistics.fmean(flat) / ref - 1.0))
            cells.append(text + " ms")
        lines.append("| %s %s | %s |" % (model, shape, " | ".join(cells)))
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    results, device = collect(args.arm, args.models, args.processes, args.rounds)
    names = [a[0] for a in args.arm]
    print("\n%s, processes alternated (%d an arm a model, %d rounds each):\n" % (
        device or "device", args.processes, args.rounds))
    print(table(results, names))
    if args.json:
        arms = [{"name": n, "build": b, "env": e} for n, b, e in args.arm]
        doc = {"device": device, "arms": arms,
               "results": [{"model": m, "shape": s, "ms": by_arm}
                           for (m, s), by_arm in results.items()]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
