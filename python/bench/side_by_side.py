"""Side by side: a Hugging-Face-style decoder written in PyTorch (static KV cache in module
buffers, written by index_copy_ at cache_position), decoded greedily by torch eager and by
inplace.compile on the same weights, one run. Prints per-step times, checks that the tokens
and the final caches are equal, and measures the per-call overhead of a compiled call on a
trivial program.

  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/side_by_side.py [--steps 64] [--smax 256]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import inplace  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, dim, heads, s_max):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, heads, s_max, self.hd))
        self.register_buffer("v_cache", torch.zeros(1, heads, s_max, self.hd))
        self.register_buffer("positions", torch.arange(s_max))

    def forward(self, x, cache_position):
        q = self.q_proj(x).view(1, 1, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(1, 1, self.heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(1, 1, self.heads, self.hd).transpose(1, 2)
        self.k_cache.index_copy_(2, cache_position, k)   # StaticCache.update
        self.v_cache.index_copy_(2, cache_position, v)
        scores = q @ self.k_cache.transpose(-1, -2) / (self.hd ** 0.5)
        visible = self.positions <= cache_position
        scores = scores.masked_fill(~visible, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ self.v_cache
        return self.o_proj(out.transpose(1, 2).reshape(1, 1, -1))


class Layer(nn.Module):
    def __init__(self, dim, heads, s_max):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Attention(dim, heads, s_max)
        self.post_attention_layernorm = RMSNorm(dim)
        self.gate_proj = nn.Linear(dim, 4 * dim, bias=False)
        self.up_proj = nn.Linear(dim, 4 * dim, bias=False)
        self.down_proj = nn.Linear(4 * dim, dim, bias=False)

    def forward(self, x, cache_position):
        x = x + self.self_attn(self.input_layernorm(x), cache_position)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Decoder(nn.Module):
    def __init__(self, vocab=512, dim=256, heads=8, layers=4, s_max=256):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, heads, s_max) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids, cache_position):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cache_position)
        return self.lm_head(self.norm(x))


def decode(step, steps):
    token, tokens, times = torch.tensor([[1]]), [], []
    for t in range(steps):
        t0 = time.perf_counter()
        logits = step(token, torch.tensor([t]))
        times.append(time.perf_counter() - t0)
        token = logits[:, -1].argmax(-1, keepdim=True)
        tokens.append(int(token))
    return tokens, times


def overhead(reps=2000):
    def f(x):
        return x.add_(1.0)

    compiled = inplace.compile(f, (torch.zeros(4),))
    x = torch.zeros(4)
    for _ in range(100):
        compiled(x)
    t0 = time.perf_counter()
    for _ in range(reps):
        compiled(x)
    per_call = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        f(x)
    eager = (time.perf_counter() - t0) / reps
    return per_call, eager


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--smax", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    eager = Decoder(dim=args.dim, layers=args.layers, s_max=args.smax).eval()
    model = Decoder(dim=args.dim, layers=args.layers, s_max=args.smax).eval()
    model.load_state_dict(eager.state_dict())
    t0 = time.perf_counter()
    compiled = inplace.compile(model, (torch.tensor([[1]]), torch.tensor([0])))
    compile_s = time.perf_counter() - t0
    with torch.no_grad():
        e_tokens, e_times = decode(eager, args.steps)
    c_tokens, c_times = decode(compiled, args.steps)
    same_tokens = e_tokens == c_tokens
    caches = all(torch.allclose(compiled.get_buffer(n), b, atol=1e-4)
                 for n, b in eager.named_buffers() if n.endswith("_cache"))
    kinds = sorted({k for _, k in compiled.aliased_io.values()})
    med = lambda xs: statistics.median(xs[1:]) * 1e6  # noqa: E731 - first step is warm-up
    print("decoder: %d layers, dim %d, s_max %d, %d steps, 1 thread (torch %s)"
          % (args.layers, args.dim, args.smax, args.steps, torch.__version__))
    print("compile: %.2f s (%s); aliased outputs: %d (%s)"
          % (compile_s, compiled.captured_by, len(compiled.aliased_io), ", ".join(kinds)))
    print("| runner | median step (us) | tokens equal | caches equal |")
    print("|---|---|---|---|")
    print("| torch eager | %.0f | - | - |" % med(e_times))
    print("| inplace.compile | %.0f | %s | %s |" % (med(c_times), same_tokens, caches))
    per_call, eager_call = overhead()
    print("per-call: inplace.compile x.add_(1) on 4 floats %.1f us; torch eager %.1f us"
          % (per_call * 1e6, eager_call * 1e6))
    return 0 if same_tokens and caches else 1


if __name__ == "__main__":
    sys.exit(main())
