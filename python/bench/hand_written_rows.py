"""A block no named rewrite knows: an RMSNorm spelled with sqrt and div, then a softmax written
out (amax, exp, sum, div), as a user's model may write them. Compiled by inplace.compile three
ways: without the generic fusion (INPLACE_FUSE_POINTWISE=0: one step an op), with it but its row
reductions left out (INPLACE_FUSE_ROWS=0: the elementwise runs between reductions fused), and
with them (INPLACE_FUSE_ROWS=1: one fused_rows step), next to PyTorch eager, in one run; on the
cpu (one thread) and on cuda where torch has it. Prints steps a call, time a call, and the
largest difference from eager.

  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/hand_written_rows.py [--rows 4]
      [--cols 2048] [--calls 200] [--dtype bfloat16]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import inplace  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, cols):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(cols) + 0.5)

    def forward(self, x):
        h = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * self.w
        e = torch.exp(h - h.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)


def per_call_us(f, x, calls, sync):
    for _ in range(5):
        f(x)
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        y = f(x)
    sync()
    return (time.perf_counter() - t0) / calls * 1e6, y


FORMS = (("INPLACE_FUSE_POINTWISE=0", {"INPLACE_FUSE_POINTWISE": "0"}),
         ("INPLACE_FUSE_ROWS=0", {"INPLACE_FUSE_ROWS": "0"}),
         ("INPLACE_FUSE_ROWS=1", {"INPLACE_FUSE_ROWS": "1"}))


def compiled_with(block, x, env):
    os.environ.update(env)
    try:
        return inplace.compile(block, (x,))
    finally:
        for k in env:
            del os.environ[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dtype = getattr(torch, a.dtype)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print("| device | form | steps a call | us a call | max abs diff from eager |")
    print("|---|---|---:|---:|---:|")
    for dev in devices:
        sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        block = Block(a.cols).to(device=dev, dtype=dtype).eval()
        x = torch.randn(a.rows, a.cols, device=dev, dtype=dtype)
        with torch.no_grad():
            eager_us, want = per_call_us(block, x, a.calls, sync)
        print("| %s | PyTorch eager | 7 ops | %.1f | - |" % (dev, eager_us))
        for label, env in FORMS:
            c = compiled_with(block, x, env)
            us, got = per_call_us(c, x, a.calls, sync)
            steps = sum(1 for line in str(c.plan).splitlines() if " = " in line and ": " in line)
            diff = (got.float() - want.float()).abs().max().item()
            print("| %s | inplace.compile, %s | %d | %.1f | %.3g |" % (dev, label, steps, us, diff))


if __name__ == "__main__":
    main()
