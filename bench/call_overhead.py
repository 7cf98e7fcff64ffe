#!/usr/bin/env python3
"""Host work a call of a compiled module costs the caller's thread, whole and by part.

A tiny decode step (token embedding, two KV caches written in place at ``cache_position``, a
projection to logits), called as a Hugging Face decode step is: ``input_ids`` [1, 1] and
``cache_position`` [1], both int64. Every number is microseconds of host time per call
(perf_counter over ``--calls`` calls, best of ``--reps``; on cuda the device is waited for
before each repetition, never inside one): what a call costs the thread that makes it. The
parts are timed alone, each as the call runs it (CompiledProgram._call_parts), in grad mode off
and on:

  forward    the call without nn.Module's __call__
  sync       the module's state looked at (a replaced parameter or buffer is bound)
  inputs     the arguments checked (one pass over the inputs)
  grad       the written inputs and state looked at for requires_grad (grad mode on)
  stream     the caller's current stream (0 on the cpu)
  native     the extension call: the inputs crossing in, the engine's run (on cuda: launches
             or a graph replay), the results as torch tensors (a context-owned one cloned)
  outputs    the results as the program returns them (inputs returned, scalars, rebuild)

and on cuda the whole call and its native part with ``copy_outputs=False`` (the results are the
engine's own output buffers, rewritten by its next call: no torch copy a call).

With ``--hf FAMILY`` (llama, mistral, qwen2, phi3, gemma or gpt2; needs transformers) the
module is instead that Hugging Face decoder at issue 29's host-limited size (2 layers, d_model 64,
float32, s_max 512, random weights), exported by torch.export from transformers' static-cache
module and compiled from the ExportedProgram, called at position 200.

Usage: python3 bench/call_overhead.py [--device cpu|cuda] [--hf FAMILY] [--calls N] [--reps R]
[--loop N]
(``--loop N`` only calls N times, for a profiler). Runs from a build tree as the tests do:
INPLACE_BUILD_DIR=build /usr/bin/python3 bench/call_overhead.py
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import inplace  # noqa: E402


class TinyDecode(nn.Module):
    def __init__(self, vocab=64, d_model=16, s_max=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.lm_head = nn.Linear(d_model, vocab)
        self.register_buffer("k_cache", torch.zeros(1, s_max, d_model))
        self.register_buffer("v_cache", torch.zeros(1, s_max, d_model))

    def forward(self, input_ids, cache_position):
        x = self.embed(input_ids)
        self.k_cache.index_copy_(1, cache_position, x)
        self.v_cache.index_copy_(1, cache_position, x * 2)
        h = x + self.k_cache.sum(1, keepdim=True) + self.v_cache.sum(1, keepdim=True)
        return self.lm_head(h)


def per_call_us(f, calls, reps, settle=lambda: None):
    """Best of ``reps`` of the mean over ``calls`` calls; ``settle`` runs before each (on cuda:
    a device wait, so that a full launch queue never makes the host wait inside the timing)."""
    best = float("inf")
    for _ in range(reps):
        settle()
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
    return best


def hf_program(family, dev, s_max=512, position=200):
    """(compiled program, input_ids, cache_position) of `family` at the tiny shape."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "scripts"))
    import hf_models
    _, ep, examples = hf_models.exported_decoder(family, "tiny", s_max, device=dev)
    with torch.no_grad():
        c = hf_models.compile_exported(ep, examples)
    if c.program is None:
        raise SystemExit("inplace.compile failed: %s" % c.failures[-1][2])
    return c.program, examples[0], torch.tensor([position], device=dev)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--calls", type=int, default=0,
                    help="calls per repetition (default 2000 on the cpu, 200 on cuda)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--loop", type=int, default=0)
    ap.add_argument("--hf", help="a Hugging Face family at the tiny shape instead of TinyDecode")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device(a.device)
    calls = a.calls or (200 if dev.type == "cuda" else 2000)
    settle = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    if a.hf:
        compiled, ids, pos = hf_program(a.hf, dev)
    else:
        model = TinyDecode().to(dev).eval()
        ids = torch.tensor([[3]], device=dev)
        pos = torch.tensor([0], device=dev)
        compiled = inplace.compile(model, (ids, pos))
    call = lambda: compiled(ids, pos)  # noqa: E731
    if a.loop:
        for _ in range(a.loop):
            call()
        return
    if dev.type == "cuda":
        torch.cuda.synchronize()
    parts = compiled._call_parts((ids, pos))
    rows = [("whole call", call)] + [(name, f) for name, f in parts]

    for grad in (False, True):
        with torch.set_grad_enabled(grad):
            print("torch %s, %s, grad mode %s" % (torch.__version__, dev, "on" if grad else "off"))
            for name, f in rows:
                f()
                print("  %-10s %7.2f us" % (name, per_call_us(f, calls, a.reps, settle)))
            if dev.type == "cuda":  # the results as the engine's own buffers: no copy a call
                compiled.copy_outputs = False
                call()
                print("  %-10s %7.2f us" % ("whole call, copy_outputs=False",
                                            per_call_us(call, calls, a.reps, settle)))
                native = dict(compiled._call_parts((ids, pos)))["native"]
                native()
                print("  %-10s %7.2f us" % ("native, copy_outputs=False",
                                            per_call_us(native, calls, a.reps, settle)))
                compiled.copy_outputs = True
    if dev.type == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
