#!/usr/bin/env python3
"""One Hugging Face decoder's step under several compile-time settings, timed in one process:
the A/B of a switch read from the environment when an engine is compiled or first called
(INPLACE_PREPARE_WEIGHTS, INPLACE_FUSE_NORM_PROLOGUES, or a probe build's own). The model is
built and exported once (random weights, bf16, the exportable static-cache module, as
bench/hf_decode.py builds it); each variant is compiled by inplace.compile with its settings in
the environment and called once there; then the variants are timed in turn, `--rounds` times
over, so that a drift of the machine reads in every variant alike.

    INPLACE_BUILD_DIR=build-hf python3 bench/hf_variants.py --model gpt2 --shape medium \\
        --variant base: --variant prepared:INPLACE_PREPARE_WEIGHTS=1 [--rounds 2] [--json OUT]

A variant is NAME:VAR=VALUE,VAR=VALUE (none after the colon: the defaults). Each variant's
logits at the first step are compared with the first variant's (the largest difference is
printed), and every variant must leave the caches where they were (written in place).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, HERE)

import hf_models  # noqa: E402
from hf_decode_worker import time_steps  # noqa: E402


def parse_variant(text):
    name, sep, settings = text.partition(":")
    if not name or not sep:
        raise argparse.ArgumentTypeError("expected NAME:VAR=VALUE,..., got %r" % text)
    env = {}
    for item in filter(None, settings.split(",")):
        var, eq, value = item.partition("=")
        if not eq or not var:
            raise argparse.ArgumentTypeError("%r: expected VAR=VALUE in %r" % (item, text))
        env[var] = value
    return name, env


def parse_args(argv):
    p = argparse.ArgumentParser(prog="hf_variants.py", description=__doc__.split("\n\n")[0])
    hf_models.add_model_arguments(p)
    p.add_argument("--steps", type=int, default=64, help="timed steps a repetition (64)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=3, help="repetitions a round, the best kept (3)")
    p.add_argument("--rounds", type=int, default=2, help="times every variant is timed (2)")
    p.add_argument("--variant", action="append", type=parse_variant, required=True,
                   help="NAME:VAR=VALUE,... (repeat; the first is the reference)")
    p.add_argument("--json", help="write the results here")
    return p.parse_args(argv)


def with_env(env, fn):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv=None):
    args = parse_args(argv)
    import torch
    dev = torch.device("cuda")
    _, ep, examples = hf_models.exported_decoder(args.model, args.shape, args.s_max,
                                                 torch.bfloat16, dev)
    token = torch.ones(1, 1, dtype=torch.long, device=dev)
    positions = torch.arange(args.position, args.position + max(args.steps, args.warmup),
                             device=dev)
    compiled, first = {}, {}
    with torch.no_grad():
        for name, env in args.variant:
            def build():
                c = hf_models.compile_exported(ep, examples)
                if c.program is None:
                    raise RuntimeError("%s: %s" % (name, "; ".join(
                        hf_models.first_line(e) for _, e, _ in c.failures)))
                # The first call makes the context (the backend reads its settings there).
                logits = c.program(token, positions[0:1]).float()
                return c, logits
            c, logits = with_env(env, build)
            compiled[name], first[name] = c, logits
            state = {t: hf_models.state_tensor(c.exported, t)
                     for t, _ in c.program.aliased_io.values()}
            c.ptrs = {t: s.data_ptr() for t, s in state.items() if s is not None}
            print("[variants] %s compiled in %.1f s (%s)" % (name, c.seconds, env or "defaults"),
                  flush=True)
        ref = args.variant[0][0]
        rows = {name: {"env": env, "ms": []} for name, env in args.variant}
        for r in range(args.rounds):
            for name, _ in args.variant:
                prog = compiled[name].program
                ms = time_steps(lambda i: prog(token, positions[i:i + 1]), dev, args.steps,
                                args.warmup, args.reps)
                rows[name]["ms"].append(min(ms))
        for name, _ in args.variant:
            c = compiled[name]
            # Fetched again: the state must still be the same tensors at the same addresses.
            in_place = all(hf_models.state_tensor(c.exported, t).data_ptr() == p
                           for t, p in c.ptrs.items())
            diff = float((first[name] - first[ref]).abs().max())
            rows[name].update({"logits_max_abs_diff_vs_%s" % ref: diff,
                               "caches_in_place": in_place})
            print("[variants] %-12s %s ms  logits vs %s %.3g  caches in place %s" % (
                name, " / ".join("%.4f" % m for m in rows[name]["ms"]), ref, diff, in_place),
                flush=True)
    if args.json:
        doc = {"model": args.model, "shape": args.shape, "s_max": args.s_max,
               "position": args.position, "steps": args.steps, "reps": args.reps,
               "device": torch.cuda.get_device_name(), "variants": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
