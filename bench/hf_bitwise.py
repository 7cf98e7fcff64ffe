#!/usr/bin/env python3
"""Whether builds and switches give the same bits on Hugging Face decoders: each arm (a build
folder and the environment it runs under, as bench/hf_ab.py's) compiles each model in its own
process, decodes a walk of positions across the whole cache (every split count attention takes,
the longest prefix included; a fresh random token a step, the same in every arm) and keeps every
step's logits and the final contents of every cache; then every arm is compared with the first,
position by position and cache by cache. A kernel change meant to move no result (a launch
shape, a fusion, a probe) must show 0 everywhere; the exit status is 1 when an arm differs
(unless --allow-diff).

    python3 bench/hf_bitwise.py --arm main=build-main --arm new=build-new \\
        --arm fused=build-new:INPLACE_CUDA_X=1 --models llama:llama1b,gpt2:medium

The timing of the same arms is bench/hf_ab.py's.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import hf_ab  # noqa: E402

# Positions decoded in order: the first keys, the edges of attention's 64-key splits, a few
# hundred, and long prefixes up to the last slot (those at or past s_max are left out).
POSITIONS = (0, 1, 2, 3, 62, 63, 64, 65, 127, 128, 129, 200, 201, 511, 512, 513, 1000, 2047,
             3000, 4095, 8191, 16383)


def positions_for(s_max):
    return [p for p in POSITIONS if p < s_max]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="hf_bitwise.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--arm", action="append", type=hf_ab.parse_arm,
                   help="NAME=BUILD[:VAR=VALUE,...] (repeat, at least two; the first is the "
                        "reference)")
    p.add_argument("--models", type=hf_ab.parse_models, default=hf_ab.parse_models("llama:medium"),
                   help="comma list of MODEL:SHAPE (default llama:medium)")
    p.add_argument("--s-max", type=int, default=4096)
    p.add_argument("--allow-diff", action="store_true",
                   help="report differences without failing (a change that may move roundings)")
    p.add_argument("--dump", help=argparse.SUPPRESS)  # worker: one model, this process's build
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--shape", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.dump:
        return args
    if not args.arm or len(args.arm) < 2:
        p.error("at least two --arm")
    names = [a[0] for a in args.arm]
    if len(set(names)) != len(names):
        p.error("arm names must differ: %s" % ", ".join(names))
    return args


def dump(model, shape, s_max, out):
    """The worker: one model compiled by this process's build, decoded over positions_for(s_max);
    its logits and final state written to `out` (torch.save)."""
    import torch
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import hf_models
    dev = torch.device("cuda")
    config, ep, examples = hf_models.exported_decoder(model, shape, s_max, torch.bfloat16, dev)
    c = hf_models.compile_exported(ep, examples)
    if c.program is None:
        raise SystemExit("%s %s: %s" % (model, shape, "; ".join(
            hf_models.first_line(e) for _, e, _ in c.failures)))
    gen = torch.Generator().manual_seed(1)
    positions, logits = positions_for(s_max), []
    with torch.no_grad():
        for p in positions:
            token = torch.randint(0, config.vocab_size, (1, 1), generator=gen).to(dev)
            logits.append(c.program(token, torch.tensor([p], device=dev)).float().cpu())
        torch.cuda.synchronize()
        state = {t: hf_models.state_tensor(c.exported, t).float().cpu()
                 for t, _ in c.program.aliased_io.values()}
    torch.save({"positions": positions, "logits": logits, "state": state,
                "device": torch.cuda.get_device_name()}, out)


def compare(ref, other):
    """What differs between two dumps: {"positions": [(position, max |logit diff|, argmax
    equal)], "state": {name: max |diff|}, "equal": every logit and state element the same}."""
    import torch
    if ref["positions"] != other["positions"]:
        raise ValueError("the dumps decoded different positions")
    if set(ref["state"]) != set(other["state"]):
        raise ValueError("the dumps hold different state tensors: %s" % sorted(
            set(ref["state"]) ^ set(other["state"])))
    rows = []
    for p, x, y in zip(ref["positions"], ref["logits"], other["logits"]):
        rows.append((p, float((x - y).abs().max()), bool(torch.equal(x.argmax(-1),
                                                                     y.argmax(-1)))))
    state = {t: float((ref["state"][t] - other["state"][t]).abs().max()) for t in ref["state"]}
    equal = (all(torch.equal(x, y) for x, y in zip(ref["logits"], other["logits"])) and
             all(torch.equal(ref["state"][t], other["state"][t]) for t in ref["state"]))
    return {"positions": rows, "state": state, "equal": equal}


def summary(model, shape, name, ref_name, d):
    """One line of the report for arm `name` against the reference arm."""
    differ = [p for p, diff, _ in d["positions"] if diff > 0]
    argmax = [p for p, _, same in d["positions"] if not same]
    worst = max((diff for _, diff, _ in d["positions"]), default=0.0)
    caches = [t for t, diff in d["state"].items() if diff > 0]
    text = "%s %s: %s against %s: " % (model, shape, name, ref_name)
    if d["equal"]:
        return text + "bitwise equal (%d positions, %d state tensors)" % (
            len(d["positions"]), len(d["state"]))
    return text + ("logits differ at %d of %d positions (worst %.4g, argmax differs at %s), "
                   "%d of %d state tensors differ (worst %s %.4g)" % (
                       len(differ), len(d["positions"]), worst, argmax or "none", len(caches),
                       len(d["state"]), max(caches, key=d["state"].get) if caches else "-",
                       max(d["state"].values(), default=0.0)))


def run_dump(arm, model, shape, s_max, out):
    name, build, env = arm
    cmd = [sys.executable, os.path.abspath(__file__), "--dump", out, "--model", model, "--shape",
           shape, "--s-max", str(s_max)]
    full_env = dict(os.environ, INPLACE_BUILD_DIR=os.path.abspath(build), **env)
    r = subprocess.run(cmd, env=full_env, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("arm %s, %s %s: the dump failed (%d):\n%s" % (
            name, model, shape, r.returncode, (r.stdout + r.stderr)[-2000:]))


def main(argv=None):
    args = parse_args(argv)
    if args.dump:
        dump(args.model, args.shape, args.s_max, args.dump)
        return 0
    import torch
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for model, shape in args.models:
            dumps = {}
            for arm in args.arm:
                out = os.path.join(tmp, "%s-%s-%s.pt" % (model, shape, arm[0]))
                run_dump(arm, model, shape, args.s_max, out)
                dumps[arm[0]] = torch.load(out)
                print("[bitwise] %s %s %s: %d positions decoded" % (
                    model, shape, arm[0], len(dumps[arm[0]]["positions"])), flush=True)
            ref = args.arm[0][0]
            for name, _, _ in args.arm[1:]:
                d = compare(dumps[ref], dumps[name])
                same = same and d["equal"]
                print("[bitwise] " + summary(model, shape, name, ref, d), flush=True)
    return 0 if same or args.allow_diff else 1


if __name__ == "__main__":
    sys.exit(main())
