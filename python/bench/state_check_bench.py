"""Per-call host cost of following a compiled module's state: a module of N state tensors (N - 1
small parameters in a ParameterList and one buffer written in place), compiled once, called
2000 times. Prints microseconds per call, and per StateWatch.sync alone (the check that every
bound tensor is still the module's), for N = 2 and 146 (a 12-layer Hugging Face decoder's count).

  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/state_check_bench.py [--calls 2000]
      [--python] (the check in Python, as without the extension's StateCheck) [--profile]
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import inplace  # noqa: E402
from inplace import state_watch  # noqa: E402


class Many(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(4)) for _ in range(n - 1)])
        self.register_buffer("acc", torch.zeros(4))

    def forward(self, x):
        y = x
        for w in self.ws:
            y = y + w
        self.acc.add_(y)
        return self.acc


def per_call_us(fn, calls):
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--python", action="store_true")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    if args.python:
        state_watch._layout.append((None, None))
    torch.set_grad_enabled(False)
    for n in (2, 146):
        m = Many(n)
        x = torch.ones(4)
        compiled = inplace.compile(m, (x,))
        watch, state = compiled._watch, compiled._state
        assert len(watch._entries) == n, len(watch._entries)
        call = per_call_us(lambda: compiled(x), args.calls)
        sync = per_call_us(lambda: watch.sync(state, compiled._rebind), args.calls)
        check = getattr(watch._fast, "__self__", None)
        print("%3d state tensors: %6.1f us per call, %5.2f us of it in StateWatch.sync (%s)"
              % (n, call, sync, "StateCheck, %d read raw" % check.raw_tensors
                 if check is not None else "Python check"))
        if args.profile:
            prof = cProfile.Profile()
            prof.runcall(lambda: [compiled(x) for _ in range(args.calls)])
            pstats.Stats(prof).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
