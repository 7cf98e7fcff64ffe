"""bf16 products on the cpu: an MLP's two linears (1 x 1024 @ 1024 x 2816, then 1 x 2816 @
2816 x 1024) in bfloat16, compiled by inplace.compile, against PyTorch eager on one thread, in
one run; the results' largest difference is printed too (bf16 rounding of different summation
orders).

  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/bf16_linear_cpu.py [--calls 20]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import inplace  # noqa: E402


def per_call_ms(f, x, calls):
    for _ in range(3):
        f(x)
    t0 = time.perf_counter()
    for _ in range(calls):
        y = f(x)
    return (time.perf_counter() - t0) / calls * 1e3, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    m = torch.nn.Sequential(torch.nn.Linear(1024, 2816, bias=False),
                            torch.nn.Linear(2816, 1024, bias=False)).to(torch.bfloat16).eval()
    x = torch.randn(1, 1024, dtype=torch.bfloat16)
    compiled = inplace.compile(m, (x,))
    ours, y = per_call_ms(compiled, x, a.calls)
    with torch.no_grad():
        theirs, z = per_call_ms(m, x, a.calls)
    print("inplace.compile %.2f ms, PyTorch eager (1 thread) %.2f ms, max |diff| %.3g"
          % (ours, theirs, float((y.float() - z.float()).abs().max())))


if __name__ == "__main__":
    main()
