#!/usr/bin/env python3
"""PyTorch eager decode steps of the built-in Llama-style model on the same weights, for
`inplace bench` (which writes the weights and runs this with /usr/bin/python3).

    /usr/bin/python3 bench/llama_torch.py --weights W.safetensors --config '{"d_model": ...}'
        --s-max 256 1024 --position 200 --steps 16 --threads 1 [--logits-out L.safetensors]

The module is written as Hugging Face's LlamaForCausalLM with a StaticCache writes it (torch 1.13
has no scaled_dot_product_attention): RMSNorm, rotary embeddings, caches written with
index_copy_, grouped KV heads repeated (repeat_kv), attention over the whole static cache with a
mask of the positions not yet filled, SwiGLU, LM head tied to the embedding. Prints one JSON
object: per-step milliseconds for every s_max. --logits-out saves the logits of one step at
position 0 on zero caches (token 1), which `inplace bench` compares with its engine's.

With --serve (what `inplace bench` uses) it loads the weights once, prints {"ready": ...} and then
answers requests on stdin, one per line, "S_MAX STEPS WARMUP": it runs WARMUP untimed steps and
STEPS timed ones at positions --position.. on its own caches for that s_max and prints one JSON
line with their times. The bench interleaves these requests with its own engines' repetitions,
so that a busy moment of the machine falls on both sides alike.
"""
import argparse
import json
import os
import struct
import sys
import time


def threads_from_argv(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


# torch.set_num_threads does not reach the BLAS Debian's torch calls for its matrix products
# (BLAS_INFO=generic: OpenBLAS, with a thread per core of its own): without this, a "one thread"
# PyTorch step ran its products on two cores. OpenBLAS reads these when it loads, with torch.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = threads_from_argv(sys.argv)

import torch  # noqa: E402  (after the thread counts above)

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "I64": torch.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        buf = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(buf, dtype=DTYPES[info["dtype"]]) if buf else torch.empty(0)
        out[key] = t.reshape(info["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for key, t in tensors.items():
        b = t.contiguous().numpy().tobytes()
        header[key] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


class Llama(torch.nn.Module):
    def __init__(self, c, w):
        super().__init__()
        self.c, self.w = c, w
        self.hd = c["d_model"] // c["n_heads"]

    def rms_norm(self, x, name):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.w[name] * (x * torch.rsqrt(var + self.c["eps"]))

    @staticmethod
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, tokens, pos, caches):
        c, w, hd = self.c, self.w, self.hd
        T = tokens.shape[1]
        h = torch.nn.functional.embedding(tokens, w["embed_tokens.weight"]).float()
        cos = w["rope.cos"][pos][None, None]
        sin = w["rope.sin"][pos][None, None]
        s_max = caches[0].shape[2]
        # StaticCache attention mask: key j is visible to the query at pos[i] when j <= pos[i].
        mask = torch.arange(s_max)[None, :] <= pos[:, None]
        bias = torch.zeros(T, s_max).masked_fill(~mask, float("-inf"))
        rep = c["n_heads"] // c["n_kv_heads"]
        def lin(x, weight):  # bf16 weights are widened where they are used
            return torch.nn.functional.linear(x, weight.float())
        for l in range(c["n_layers"]):
            p = "layers.%d." % l
            x = self.rms_norm(h, p + "input_layernorm.weight")
            q = lin(x, w[p + "self_attn.q_proj.weight"]).view(1, T, c["n_heads"], hd).transpose(1, 2)
            k = lin(x, w[p + "self_attn.k_proj.weight"]).view(1, T, c["n_kv_heads"], hd).transpose(1, 2)
            v = lin(x, w[p + "self_attn.v_proj.weight"]).view(1, T, c["n_kv_heads"], hd).transpose(1, 2)
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            kc, vc = caches[2 * l], caches[2 * l + 1]
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
            kr = kc[:, :, None].expand(1, c["n_kv_heads"], rep, s_max, hd).reshape(1, c["n_heads"], s_max, hd)
            vr = vc[:, :, None].expand(1, c["n_kv_heads"], rep, s_max, hd).reshape(1, c["n_heads"], s_max, hd)
            scores = q @ kr.transpose(2, 3) / (hd ** 0.5) + bias
            o = torch.softmax(scores, dim=-1) @ vr
            o = o.transpose(1, 2).reshape(1, T, c["d_model"])
            h = h + lin(o, w[p + "self_attn.o_proj.weight"])
            x = self.rms_norm(h, p + "post_attention_layernorm.weight")
            g = torch.nn.functional.silu(lin(x, w[p + "mlp.gate_proj.weight"]))
            h = h + lin(g * lin(x, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
        h = self.rms_norm(h, "norm.weight")
        return lin(h[:, -1], w["embed_tokens.weight"])


def time_steps(model, caches, position, steps, warmup):
    """Per-step wall and CPU milliseconds (the process's: every thread torch or its BLAS runs)
    of `steps` decode steps after `warmup` ones."""
    times, cpu = [], []
    token = torch.tensor([[1]])
    for i in range(warmup + steps):
        pos = torch.tensor([position + i])
        t0, c0 = time.perf_counter(), time.process_time()
        logits = model(token, pos, caches)
        dt, dc = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
        token = logits.argmax(-1, keepdim=True)
        if i >= warmup:
            times.append(dt)
            cpu.append(dc)
    return times, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--config", required=True, help="JSON: vocab d_model n_layers n_heads n_kv_heads eps")
    ap.add_argument("--s-max", type=int, nargs="+", required=True)
    ap.add_argument("--position", type=int, required=True)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--logits-out")
    ap.add_argument("--serve", action="store_true", help="answer timing requests on stdin (above)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    c = json.loads(args.config)
    model = Llama(c, read_safetensors(args.weights))
    hd = c["d_model"] // c["n_heads"]
    result = {"torch": torch.__version__, "threads": torch.get_num_threads(), "per_step_ms": {},
              "per_step_cpu_ms": {}}
    all_caches = {}

    def caches_for(s_max):
        if s_max not in all_caches:
            assert all(model.w[k].shape[0] >= s_max for k in ("rope.cos", "rope.sin")), \
                "rope tables shorter than s_max"
            caches = [torch.zeros(1, c["n_kv_heads"], s_max, hd) for _ in range(2 * c["n_layers"])]
            if args.logits_out and s_max == args.s_max[0]:
                logits = model(torch.tensor([[1]]), torch.tensor([0]), caches)
                write_safetensors(args.logits_out, {"logits": logits})
            for cache in caches:  # every page really read, as the engines' caches are
                cache.fill_(0.01)
            all_caches[s_max] = caches
        return all_caches[s_max]

    with torch.no_grad():
        if args.serve:
            caches_for(args.s_max[0])  # the logits for --logits-out, before the first request
            tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
            print(json.dumps({"ready": True, "torch": torch.__version__,
                              "threads": torch.get_num_threads(), "process_threads": tasks}),
                  flush=True)
            for line in sys.stdin:
                if not line.strip():
                    continue
                s_max, steps, warmup = (int(v) for v in line.split())
                times, cpu = time_steps(model, caches_for(s_max), args.position, steps, warmup)
                print(json.dumps({"s_max": s_max, "per_step_ms": times, "per_step_cpu_ms": cpu}),
                      flush=True)
            return
        for s_max in args.s_max:
            times, cpu = time_steps(model, caches_for(s_max), args.position, args.steps, 2)
            result["per_step_ms"][str(s_max)] = times
            result["per_step_cpu_ms"][str(s_max)] = cpu
            del all_caches[s_max]
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
