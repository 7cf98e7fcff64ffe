#!/usr/bin/env python3
"""PyTorch on the GPU for `inplace bench --device cuda`: the built-in Llama-style model's decode
step on the same weights, eager and `torch.compile(mode="reduce-overhead")` (CUDA graphs), per
s_max. The module is Hugging Face's LlamaForCausalLM with a StaticCache as it runs on a GPU:
everything in bfloat16 (weights, activations, caches), RMSNorm computed in float32, caches as
static buffers of the module written with index_copy_, and F.scaled_dot_product_attention over
the whole static cache with a mask of the positions not yet filled (enable_gqa).

    python3 bench/llama_torch_cuda.py --weights W.safetensors --config '{"d_model": ...}'
        --s-max 4096 16384 --position 200 --steps 64 [--no-compile]

Prints one JSON object: per-step milliseconds (mean over --steps back-to-back steps, one
synchronisation at the end, repeated --reps times) for every s_max and mode.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_torch import read_safetensors  # noqa: E402


class LlamaCuda(torch.nn.Module):
    def __init__(self, c, w, s_max, dtype=torch.bfloat16):
        super().__init__()
        self.c, self.hd, self.names = c, c["d_model"] // c["n_heads"], {}
        for i, (name, t) in enumerate(w.items()):
            buf = "w%d" % i
            self.names[name] = buf
            self.register_buffer(buf, t.to(device="cuda", dtype=dtype))
        for l in range(2 * c["n_layers"]):
            cache = torch.zeros(1, c["n_kv_heads"], s_max, self.hd, device="cuda", dtype=dtype)
            self.register_buffer("cache%d" % l, cache)

    def w(self, name):
        return getattr(self, self.names[name])

    def rms_norm(self, x, name):
        xf = x.float()
        var = xf.pow(2).mean(-1, keepdim=True)
        return self.w(name) * (xf * torch.rsqrt(var + self.c["eps"])).to(x.dtype)

    @staticmethod
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, tokens, pos):
        c, hd = self.c, self.hd
        T = tokens.shape[1]
        h = F.embedding(tokens, self.w("embed_tokens.weight"))
        cos = self.w("rope.cos")[pos][None, None]
        sin = self.w("rope.sin")[pos][None, None]
        s_max = self.cache0.shape[2]
        mask = (torch.arange(s_max, device=tokens.device)[None, :] <= pos[:, None])[None, None]
        for l in range(c["n_layers"]):
            p = "layers.%d." % l
            x = self.rms_norm(h, p + "input_layernorm.weight")
            q = F.linear(x, self.w(p + "self_attn.q_proj.weight")).view(1, T, c["n_heads"], hd).transpose(1, 2)
            k = F.linear(x, self.w(p + "self_attn.k_proj.weight")).view(1, T, c["n_kv_heads"], hd).transpose(1, 2)
            v = F.linear(x, self.w(p + "self_attn.v_proj.weight")).view(1, T, c["n_kv_heads"], hd).transpose(1, 2)
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            kc, vc = getattr(self, "cache%d" % (2 * l)), getattr(self, "cache%d" % (2 * l + 1))
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            o = F.scaled_dot_product_attention(q, kc, vc, attn_mask=mask, enable_gqa=True)
            o = o.transpose(1, 2).reshape(1, T, c["d_model"])
            h = h + F.linear(o, self.w(p + "self_attn.o_proj.weight"))
            x = self.rms_norm(h, p + "post_attention_layernorm.weight")
            g = F.silu(F.linear(x, self.w(p + "mlp.gate_proj.weight")))
            h = h + F.linear(g * F.linear(x, self.w(p + "mlp.up_proj.weight")), self.w(p + "mlp.down_proj.weight"))
        h = self.rms_norm(h, "norm.weight")
        return F.linear(h[:, -1], self.w("embed_tokens.weight"))


def time_steps(step, positions, steps, reps, compiled):
    token = torch.ones(1, 1, dtype=torch.int64, device="cuda")
    for i in range(3):  # warm-up (cudagraph trees record on these calls)
        if compiled:
            torch.compiler.cudagraph_mark_step_begin()
        step(token, positions[i:i + 1])
    torch.cuda.synchronize()
    means = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for i in range(steps):
            if compiled:
                torch.compiler.cudagraph_mark_step_begin()
            step(token, positions[i:i + 1])
        torch.cuda.synchronize()
        means.append((time.perf_counter() - t0) * 1e3 / steps)
    return means


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--s-max", type=int, nargs="+", required=True)
    ap.add_argument("--position", type=int, required=True)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    c = json.loads(args.config)
    w = read_safetensors(args.weights)
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "eager_ms": {},
              "compiled_ms": {}, "dtype": "bfloat16 weights, activations and caches"}
    with torch.no_grad():
        for s_max in args.s_max:
            model = LlamaCuda(c, w, s_max)
            for name, buf in model.named_buffers():
                if name.startswith("cache"):
                    buf.fill_(0.01)
            positions = torch.arange(args.position, args.position + args.steps + 3, device="cuda")
            result["eager_ms"][str(s_max)] = time_steps(model, positions, args.steps, args.reps, False)
            print("torch eager s_max %d: %.3f ms" % (s_max, min(result["eager_ms"][str(s_max)])),
                  file=sys.stderr)
            if not args.no_compile:
                torch._dynamo.reset()
                t0 = time.perf_counter()
                try:
                    step = torch.compile(model, mode="reduce-overhead", fullgraph=True)
                    result["compiled_ms"][str(s_max)] = time_steps(step, positions, args.steps, args.reps, True)
                    result.setdefault("compile_s", {})[str(s_max)] = time.perf_counter() - t0
                    print("torch.compile s_max %d: %.3f ms (compiled in %.0f s)"
                          % (s_max, min(result["compiled_ms"][str(s_max)]), result["compile_s"][str(s_max)]),
                          file=sys.stderr)
                except Exception as e:  # report, keep the eager column
                    result.setdefault("compile_error", {})[str(s_max)] = repr(e)[:500]
                    print("torch.compile s_max %d failed: %r" % (s_max, e), file=sys.stderr)
            del model
            torch.cuda.empty_cache()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
