#!/usr/bin/env python3
"""Issue 30's generation check: a Hugging Face Llama (random weights, float32) compiled as a
program (prefill dynamic up to the prompt length, decode one token) from transformers'
exportable static-cache module; `session.generate(prompt, max_new_tokens)` in one call must give
the tokens of Hugging Face's own greedy `generate()` (static cache), and so must the saved
program loaded again (the C++ load and generate loop) and `inplace generate FILE --prompt-ids`.
Its tokens per second must be at least 0.9 / (the decode step's time of the user-model
benchmark: inplace.compile of the same model's torch.export, one decode step, as
bench/hf_decode.py times it).

    INPLACE_BUILD_DIR=build-hf python3 scripts/hf_generate_check.py [--device cuda]
        [--shape medium] [--prompt-len 128] [--new-tokens 256] [--s-max 512]

Prints PASS or FAIL with what failed, then one JSON line. Needs torch >= 2.5, transformers
and a GPU for the default device (scripts/test-hf-generate.sh builds what it needs and runs
this). `check()` is the part without transformers: python/tests/test_hf_generate_check.py runs
it on the cpu with a module of the same form.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if os.environ.get("INPLACE_BUILD_DIR"):
    sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

TPS_FACTOR = 0.9


class Steps(nn.Module):
    """The static-cache module called as (input_ids, cache_position) by keyword (transformers'
    exportable module also takes inputs_embeds, between the two), returning its logits: the
    generation convention of docs/programs.md (output 0 the logits, the caches state)."""

    def __init__(self, module):
        super().__init__()
        self.m = module

    def forward(self, input_ids, cache_position):
        out = self.m(input_ids=input_ids, cache_position=cache_position)
        if isinstance(out, dict):  # a ModelOutput (no hasattr: a traced value answers any)
            return out["logits"]
        return out[0] if isinstance(out, (tuple, list)) else out


def sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def compile_generate_program(module, prompt_len, device):
    """inplace.compile_program of `module` (forward(input_ids, cache_position) -> logits):
    prefill of up to `prompt_len` tokens, decode of one. Dynamic dims by input index, so the
    exported program's own input names do not matter; they are returned too."""
    import inplace
    dev = torch.device(device)
    ids = torch.zeros(1, prompt_len, dtype=torch.long, device=dev)
    program = inplace.compile_program(module, {
        "prefill": ((ids, torch.arange(prompt_len, device=dev)),
                    {0: {1: prompt_len}, 1: {0: prompt_len}}),
        "decode": ((ids[:, :1], torch.tensor([prompt_len], device=dev)),),
    }, device=str(dev))
    return program, {m: program.input_names(m) for m in program.methods}


def greedy_eager(module, prompt, new_tokens, device="cpu"):
    """Greedy tokens of `module` (forward(input_ids, cache_position) -> logits) run eagerly on a
    copy: the prompt in one call, then one token a call."""
    m = copy.deepcopy(module)
    dev = torch.device(device)
    out = []
    with torch.no_grad():
        logits = m(torch.tensor([prompt], device=dev), torch.arange(len(prompt), device=dev))
        pos = len(prompt)
        for k in range(new_tokens):
            if k:
                logits = m(torch.tensor([[out[-1]]], device=dev), torch.tensor([pos], device=dev))
                pos += 1
            out.append(int(logits[0, -1].argmax()))
    return out


def time_step(step, device, steps=64, warmup=5, reps=3):
    """Seconds per call of step(i), the best of `reps` means over `steps` calls."""
    for i in range(warmup):
        step(i)
    sync(device)
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        for i in range(steps):
            step(warmup + i)
        sync(device)
        s = (time.perf_counter() - t0) / steps
        best = s if best is None else min(best, s)
    return best


def cli_generate(binary, path, prompt, new_tokens, device=None):
    """`inplace generate PATH --prompt-ids ...`: (tokens, tokens per second)."""
    args = [binary, "generate", path, "--prompt-ids", ",".join(str(t) for t in prompt),
            "--max-new-tokens", str(new_tokens)]
    if device:
        args += ["--device", str(device)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("`inplace generate` exited %d: %s" % (proc.returncode,
                                                                proc.stderr.strip()))
    tokens, tps = None, None
    for line in proc.stdout.splitlines():
        if line.startswith("tokens:"):
            rest = line[len("tokens:"):].split()
            tokens = [] if rest == ["(none)"] else [int(t) for t in rest]
        if "tokens/s" in line:
            tps = float(line.rsplit(",", 1)[1].split()[0])
    return tokens, tps


def judge_speed(r, step_s):
    """Adds the floor TPS_FACTOR / step_s to `r` and a failure when tokens/s is below it."""
    r["decode_step_s"] = step_s
    r["tokens_per_second_floor"] = TPS_FACTOR / step_s
    r["speed_ok"] = r["tokens_per_second"] >= r["tokens_per_second_floor"]
    if not r["speed_ok"]:
        r["failures"].append("%.1f tokens/s is below %.1f (0.9 / the %.3f ms decode step)"
                             % (r["tokens_per_second"], r["tokens_per_second_floor"],
                                step_s * 1e3))


def first_difference(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return i
    return None if len(got) == len(want) else min(len(got), len(want))


def check(module, prompt, new_tokens, want, device="cpu", step_s=None, binary=None, out_dir=None):
    """Compiles `module` as a generation program, generates `new_tokens` after `prompt` in one
    call, then from the saved program loaded again and through `inplace generate` (when
    `binary` is given); each must equal `want`. With `step_s` (the user-model benchmark's decode
    step), tokens/s must reach TPS_FACTOR / step_s. Returns a JSON-able dict; `failures` lists
    what failed (empty: PASS)."""
    import inplace
    r = {"device": str(device), "prompt_tokens": len(prompt), "new_tokens": new_tokens,
         "failures": []}
    t0 = time.perf_counter()
    program, names = compile_generate_program(module, len(prompt), device)
    r["compile_s"] = round(time.perf_counter() - t0, 2)
    r["input_names"] = names
    r["state"] = len(program.state_names)
    session = program.new_session()
    session.generate(prompt, 2)  # warm: kernels, workspaces, graphs
    session.reset()
    g = session.generate(prompt, new_tokens)
    r["tokens_equal"] = g.tokens == want
    r["first_difference"] = first_difference(g.tokens, want)
    r["tokens_per_second"] = g.tokens_per_second
    r["time_to_first_token_s"] = g.time_to_first_token_s
    if not r["tokens_equal"]:
        r["failures"].append("session.generate differs from the reference at token %s"
                             % r["first_difference"])
    # The session's own decode step, for the record (a Python call per token).
    dev = torch.device(device)
    tok = torch.tensor([[int(want[-1]) if want else 0]], device=dev)
    session.reset()
    session.generate(prompt, 1)
    start = len(prompt)
    r["session_decode_step_s"] = time_step(
        lambda i: session.run("decode", tok, torch.tensor([start + i % new_tokens], device=dev)),
        device, steps=min(64, new_tokens), warmup=2, reps=3)
    if step_s is not None:
        judge_speed(r, step_s)
    tmp = None
    if out_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="inplace_hf_generate_")
        out_dir = tmp.name
    path = os.path.join(out_dir, "generate.inplace")
    program.save(path)
    loaded = inplace.load_program(path)
    lg = loaded.new_session().generate(prompt, new_tokens)
    r["loaded_tokens_equal"] = lg.tokens == want
    r["loaded_tokens_per_second"] = lg.tokens_per_second
    if not r["loaded_tokens_equal"]:
        r["failures"].append("the saved program loaded again differs at token %s"
                             % first_difference(lg.tokens, want))
    if binary:
        try:
            cli_tokens, cli_tps = cli_generate(binary, path, prompt, new_tokens)
            r["cli_tokens_equal"] = cli_tokens == want
            r["cli_tokens_per_second"] = cli_tps
            if not r["cli_tokens_equal"]:
                r["failures"].append("`inplace generate` differs at token %s"
                                     % first_difference(cli_tokens or [], want))
        except Exception as e:  # noqa: BLE001 - reported, not raised
            r["cli_tokens_equal"] = False
            r["failures"].append("`inplace generate`: %s" % e)
    if tmp is not None:
        tmp.cleanup()
    r["got"], r["want"] = g.tokens, want
    return r


# --- Hugging Face (transformers) ------------------------------------------------------------

def hf_greedy(model, prompt, new_tokens, device):
    """transformers' own greedy generate() with a static cache; no end-of-sequence stop (the
    check compares every token)."""
    m = copy.deepcopy(model)
    m.generation_config.eos_token_id = None
    ids = torch.tensor([prompt], device=device)
    with torch.no_grad():
        out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                         do_sample=False, cache_implementation="static", pad_token_id=0)
    return [int(t) for t in out[0, len(prompt):]]


def benchmark_decode_step(target, device):
    """The user-model benchmark's decode step: inplace.compile of the module's torch.export at
    one token (scripts/hf_models.py, as bench/hf_decode.py compiles it), steps from position
    200 (or the cache's middle)."""
    import hf_models
    ep, examples = hf_models.export_static(target, device)
    c = hf_models.compile_exported(ep, examples, target)
    if c.program is None:
        raise RuntimeError("inplace.compile of the export failed: %s"
                           % "; ".join(hf_models.first_line(e) for _, e, _ in c.failures))
    slots = next(b.shape[-2] for n, b in target.named_buffers() if "key_cache" in n)
    start = min(200, slots // 2)
    token = torch.tensor([[hf_models.PROMPT[0]]], device=device)
    positions = torch.arange(start, start + 64 + 5, device=device)
    return time_step(lambda i: c.program(token, positions[i:i + 1]), device)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="llama")
    ap.add_argument("--shape", default="medium")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--s-max", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--decode-step-ms", type=float, default=None,
                    help="the benchmark's decode step instead of measuring it here")
    ap.add_argument("--bin", default=os.environ.get("INPLACE_BIN") or os.path.join(
        os.environ.get("INPLACE_BUILD_DIR", "build"), "inplace"))
    ap.add_argument("--out", default=None, help="a folder for the program file (kept)")
    a = ap.parse_args()
    import hf_models
    import transformers
    device = torch.device(a.device)
    result = {"check": "hf_generate", "family": a.family, "shape": a.shape, "s_max": a.s_max,
              "torch": torch.__version__, "transformers": transformers.__version__}
    try:
        model = hf_models.build_model(hf_models.config_for(a.family, a.shape, a.s_max),
                                      device=device, seed=a.seed)
        reference = copy.deepcopy(model)
        gen = torch.Generator().manual_seed(a.seed)
        vocab = model.config.vocab_size
        prompt = torch.randint(3, vocab, (a.prompt_len,), generator=gen).tolist()
        want = hf_greedy(reference, prompt, a.new_tokens, device)
        result["hf_tokens"] = len(want)
        target = hf_models.export_target(hf_models.exportable(model, a.s_max, device))
        module = Steps(target)
        binary = a.bin if os.path.exists(a.bin) else None
        if binary is None:
            print("[hf_generate] %s missing: `inplace generate` not checked" % a.bin)
        r = check(module, prompt, a.new_tokens, want, device, None, binary, a.out)
        if a.decode_step_ms is not None:
            step_s = a.decode_step_ms / 1e3
        else:
            step_s = benchmark_decode_step(target, device)
        judge_speed(r, step_s)  # measured after the program took the caches' initial values
        if binary is None:
            r["failures"].append("`inplace generate` not run (no binary)")
        result.update(r)
    except Exception as e:  # noqa: BLE001 - a FAIL line, not a traceback only
        import traceback
        traceback.print_exc()
        result.setdefault("failures", []).append("%s: %s" % (type(e).__name__, e))
    ok = not result["failures"]
    print("[hf_generate] %s: %s %s float32 on %s, prompt %d + %d new tokens%s" % (
        "PASS" if ok else "FAIL", a.family, a.shape, device, a.prompt_len, a.new_tokens,
        "" if ok else ": " + "; ".join(result["failures"])))
    if "tokens_per_second" in result:
        print("[hf_generate] %.1f tokens/s (floor %.1f), decode step %.3f ms, first token %.1f ms"
              % (result["tokens_per_second"], result.get("tokens_per_second_floor", 0.0),
                 result.get("decode_step_s", 0.0) * 1e3,
                 result.get("time_to_first_token_s", 0.0) * 1e3))
    short = {k: v for k, v in result.items() if k not in ("got", "want")}
    print(json.dumps(short, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
