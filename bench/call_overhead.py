#!/usr/bin/env python3
"""Host work a call of a compiled module costs the caller's thread, whole and by part.

A tiny decode step (token embedding, two KV caches written in place at ``cache_position``, a
projection to logits), called as a Hugging Face decode step is: ``input_ids`` [1, 1] and
``cache_position`` [1], both int64. Every number is microseconds of host time per call
(perf_counter over ``--calls`` calls, best of ``--reps``), with no wait for the device: what a
call costs the thread that makes it. The parts are timed alone, each as the call runs it:

  sync       the module's state looked at (a replaced parameter or buffer is bound)
  inputs     the arguments checked and handed to the engine (one pass, all inputs)
  native     the engine's call with the inputs already prepared (binding, run or launch, the
             results as torch tensors: a context-owned one cloned)
  outputs    the results as the program returns them (pytree rebuilt, scalars)
  stream     the caller's current stream (0 on the cpu)

Usage: python3 bench/call_overhead.py [--device cpu|cuda] [--calls N] [--reps R] [--loop N]
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


def per_call_us(f, calls, reps):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--loop", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device(a.device)
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
                print("  %-10s %7.2f us" % (name, per_call_us(f, a.calls, a.reps)))
    if dev.type == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
