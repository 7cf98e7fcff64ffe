#!/usr/bin/env python3
"""Checks the example files against PyTorch with the `inplace` command-line program.

    /usr/bin/python3 examples/streaming_decoder/verify.py [--bin build/inplace] [--steps 64]

1. One step: `inplace exec graph.json --inputs inputs.safetensors` in eager, compiled and
   compiled --no-alias modes; output.0 (logits), output.1 (next token) and the updated caches
   input.k0 ... input.v1 are compared with PyTorch eager on the same inputs.
2. Decoding: --steps greedy steps, each one `inplace exec --mode compiled` whose caches and
   token are fed to the next, compared with reference.safetensors (tokens exactly, logits and
   the final caches within 1e-4 absolute).
3. `inplace plan` shows the four caches as aliased I/O of kind kv_cache_update.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import inplace  # noqa: E402
from make_model import PROMPT_TOKEN, build  # noqa: E402

NAMES = ["token", "pos", "k0", "v0", "k1", "v1"]
CACHES = ["k0", "v0", "k1", "v1"]
ATOL = 1e-4


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        sys.exit("FAILED: %s\n%s" % (" ".join(cmd), proc.stderr.strip()))
    return proc.stdout


def close(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and float((a.double() - b.double()).abs().max()) <= ATOL


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("INPLACE_BIN", os.path.join(REPO, "build", "inplace")))
    ap.add_argument("--dir", default=HERE, help="folder with the generated files")
    ap.add_argument("--steps", type=int, default=None, help="decode steps (default: the reference's)")
    args = ap.parse_args()
    graph = os.path.join(args.dir, "graph.json")
    ref = inplace.read_safetensors(os.path.join(args.dir, "reference.safetensors"))
    meta = inplace.read_safetensors_metadata(os.path.join(args.dir, "reference.safetensors"))
    s_max = int(meta["s_max"])
    steps = args.steps or int(meta["steps"])
    model = build(s_max)
    ok = True

    with tempfile.TemporaryDirectory() as tmp:
        # 1. One step, three modes.
        inputs = inplace.read_safetensors(os.path.join(args.dir, "inputs.safetensors"))
        want_in = {n: inputs[n].clone() for n in NAMES}
        with torch.no_grad():
            logits, nxt = model(*[want_in[n] for n in NAMES])
        for mode in (["eager"], ["compiled"], ["compiled", "--no-alias"]):
            out = os.path.join(tmp, "step.safetensors")
            run([args.bin, "exec", graph, "--inputs", os.path.join(args.dir, "inputs.safetensors"),
                 "--out", out, "--mode"] + mode)
            got = inplace.read_outputs(out)
            good = close(got["output.0"], logits) and torch.equal(got["output.1"], nxt)
            good = good and all(close(got["input." + n], want_in[n]) for n in NAMES)
            print("one step, --mode %-22s %s" % (" ".join(mode), "ok" if good else "MISMATCH"))
            ok &= good

        # 2. Greedy decoding through the compiled engine.
        state = {"token": torch.tensor([[PROMPT_TOKEN]]), "pos": torch.tensor([0])}
        state.update({n: torch.zeros(1, 4, s_max, 16) for n in CACHES})
        tokens, all_logits = [], []
        for pos in range(steps):
            state["pos"] = torch.tensor([pos])
            fin, fout = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
            inplace.write_inputs(fin, state)
            run([args.bin, "exec", graph, "--inputs", fin, "--out", fout, "--mode", "compiled"])
            got = inplace.read_outputs(fout)
            state.update({n: got["input." + n] for n in CACHES})
            state["token"] = got["output.1"]
            tokens.append(int(got["output.1"].item()))
            all_logits.append(got["output.0"][0])
        n = min(steps, ref["tokens"].numel())
        same_tokens = tokens[:n] == ref["tokens"][:n].tolist()
        logits_diff = float((torch.stack(all_logits)[:n] - ref["logits"][:n]).abs().max())
        print("decode %d steps (compiled): tokens %s, logits max |diff| %.3g"
              % (steps, "equal" if same_tokens else "DIFFER", logits_diff))
        ok &= same_tokens and logits_diff <= ATOL
        if steps == int(meta["steps"]):
            caches_ok = all(close(state[c], ref[c]) for c in CACHES)
            print("final caches:", "ok" if caches_ok else "MISMATCH")
            ok &= caches_ok

    # 3. The caches are aliased I/O written by kv_cache_update steps.
    plan = run([args.bin, "plan", graph, "--inputs", os.path.join(args.dir, "inputs.safetensors")])
    aliased = all("(%s) kind=kv_cache_update" % c in plan for c in CACHES)
    print("plan: caches aliased via kv_cache_update:", "ok" if aliased else "NO")
    ok &= aliased
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
