"""A decoder written the way Hugging Face writes a static-cache Llama (RMSNorm with its float32
upcast and cast back, rotate-half rotary with cos/sin from inv_freq @ position_ids, repeat_kv,
attention over the whole static cache under a mask from cache_position, SiLU(gate) * up),
compiled by inplace.compile, one thread, decode step time at a position, per s_max. With
--qk-norm each q and k head is RMS-normalised before the rotary, as Qwen3 writes it.

  INPLACE_BUILD_DIR=build /usr/bin/python3 python/bench/hf_style_cpu.py --smax 256,4096
Prints one JSON line per s_max: {"s_max", "ms_mean", "ms_min", "steps", "load"}.
"""
import argparse
import json
import os
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
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, s_max, qk_norm=False):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.qk_norm = qk_norm
        if qk_norm:  # Qwen3's q_norm and k_norm: an RMSNorm of each head
            self.q_norm, self.k_norm = RMSNorm(self.hd), RMSNorm(self.hd)
        self.q_proj = nn.Linear(dim, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, kv_heads, s_max, self.hd))
        self.register_buffer("v_cache", torch.zeros(1, kv_heads, s_max, self.hd))

    def forward(self, x, cos, sin, cache_position, mask):
        q = self.q_proj(x).view(1, 1, self.heads, self.hd)
        k = self.k_proj(x).view(1, 1, self.kv_heads, self.hd)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v_proj(x).view(1, 1, self.kv_heads, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        self.k_cache.index_copy_(2, cache_position, k)  # StaticCache.update
        self.v_cache.index_copy_(2, cache_position, v)
        rep = self.heads // self.kv_heads
        keys, values = repeat_kv(self.k_cache, rep), repeat_kv(self.v_cache, rep)
        scores = torch.matmul(q, keys.transpose(2, 3)) * self.hd ** -0.5
        scores = scores.masked_fill(~mask, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        out = torch.matmul(probs, values)
        return self.o_proj(out.transpose(1, 2).reshape(1, 1, -1))


class Layer(nn.Module):
    def __init__(self, dim, heads, kv_heads, ffn, s_max, qk_norm=False):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = Attention(dim, heads, kv_heads, s_max, qk_norm)
        self.post_attention_layernorm = RMSNorm(dim)
        self.gate_proj = nn.Linear(dim, ffn, bias=False)
        self.up_proj = nn.Linear(dim, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, dim, bias=False)

    def forward(self, x, cos, sin, cache_position, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache_position, mask)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Decoder(nn.Module):
    def __init__(self, vocab, dim, heads, kv_heads, ffn, layers, s_max, qk_norm=False):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            [Layer(dim, heads, kv_heads, ffn, s_max, qk_norm) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        hd = dim // heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)))
        self.s_max = s_max

    def forward(self, input_ids, cache_position):
        x = self.embed_tokens(input_ids)
        # LlamaRotaryEmbedding: freqs = inv_freq @ position_ids, emb = cat(freqs, freqs).
        freqs = (self.inv_freq[None, :, None].float() @ cache_position[None, None, :].float())
        emb = torch.cat((freqs.transpose(1, 2), freqs.transpose(1, 2)), dim=-1)
        cos, sin = emb.cos()[:, None].to(x.dtype), emb.sin()[:, None].to(x.dtype)  # as HF casts
        # The static cache's causal mask: key j is visible when j <= cache_position.
        mask = (torch.arange(self.s_max) <= cache_position[:, None])[None, None]
        for layer in self.layers:
            x = layer(x, cos, sin, cache_position, mask)
        return self.lm_head(self.norm(x))


def time_steps(step, args):
    """(the best of --reps means of --steps decode steps, the fastest step), in seconds, from
    --position on, after 8 warm-up steps."""
    token = torch.tensor([[1]])
    for t in range(8):
        step(token, torch.tensor([args.position + t]))
    best, means = float("inf"), []
    for _ in range(args.reps):
        times = []
        for t in range(args.steps):
            pos = torch.tensor([args.position + t])
            t0 = time.perf_counter()
            step(token, pos)
            times.append(time.perf_counter() - t0)
        means.append(sum(times) / len(times))
        best = min(best, min(times))
    return min(means), best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--smax", default="256,4096")
    ap.add_argument("--position", type=int, default=200)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--check", action="store_true", help="tokens against eager, 16 steps")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                    help="weights, activations and caches (the rotary frequencies stay float32)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's threads and the compiled module's (its default follows torch)")
    ap.add_argument("--qk-norm", action="store_true",
                    help="an RMSNorm of each q and k head before the rotary (Qwen3)")
    ap.add_argument("--eager", action="store_true",
                    help="also time PyTorch eager on the same module, same threads, same steps")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    for s_max in [int(s) for s in args.smax.split(",")]:
        model = Decoder(8192, 512, 8, 4, 1408, args.layers, s_max, args.qk_norm).eval()
        for p in model.parameters():
            nn.init.normal_(p, std=0.02)
        dtype = getattr(torch, args.dtype)
        if dtype != torch.float32:  # as transformers' model.to(dtype): inv_freq stays float32
            inv_freq = model.inv_freq
            model = model.to(dtype)
            model.inv_freq = inv_freq
        compiled = inplace.compile(model, (torch.tensor([[1]]), torch.tensor([0])))
        mean, best = time_steps(compiled, args)
        out = {"s_max": s_max, "dtype": args.dtype, "qk_norm": args.qk_norm,
               "threads": compiled.threads,
               "ms_mean": round(1e3 * mean, 3), "ms_min": round(1e3 * best, 3),
               "steps": args.steps, "load": os.getloadavg()[0]}
        if args.eager:
            with torch.no_grad():
                mean, best = time_steps(model, args)
            out["eager_ms_mean"] = round(1e3 * mean, 3)
        if args.check:
            def fresh_copy():
                m = Decoder(8192, 512, 8, 4, 1408, args.layers, s_max, args.qk_norm).eval()
                m.load_state_dict(model.state_dict())
                for n, b in m.named_buffers():
                    if n.endswith("_cache"):
                        b.zero_()
                return m
            eager, fresh = fresh_copy(), inplace.compile(fresh_copy(), (torch.tensor([[1]]), torch.tensor([0])))
            tok_e, tok_c, tok = [], [], torch.tensor([[1]])
            with torch.no_grad():
                for t in range(16):
                    tok = eager(tok, torch.tensor([t]))[:, -1].argmax(-1, keepdim=True)
                    tok_e.append(int(tok))
            tok = torch.tensor([[1]])
            for t in range(16):
                tok = fresh(tok, torch.tensor([t]))[:, -1].argmax(-1, keepdim=True)
                tok_c.append(int(tok))
            out["tokens_equal"] = tok_e == tok_c
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
