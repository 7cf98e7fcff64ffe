#!/usr/bin/env python3
"""The measuring side of bench/hf_decode.py (torch, transformers, inplace). Reads units as JSON
lines on stdin and answers on stdout with protocol lines only: {"hello": env} once, then per
unit {"id", "partial": fields} as each measurement lands and {"id", "done", "exit"}; whatever it
or the libraries print goes to stderr. A unit that leaves CUDA broken ends with exit true, and
the process leaves (the parent starts a fresh one for the next unit).

A decode unit builds the model (bf16, random weights, on the device) with transformers'
exportable static-cache module and times, in this order: PyTorch eager on that module,
inplace.compile of its torch.export'ed program, torch.compile(mode="reduce-overhead") of the
module. Each in its own try: a failure is that column's error, printed with its traceback.
"""
import gc
import json
import os
import platform
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import hf_models  # noqa: E402
from hf_decode import PROTOCOL  # noqa: E402


def log(msg):
    print("[hf-bench worker] " + msg, file=sys.stderr, flush=True)


class Protocol:
    """Our stdout, kept for the protocol; file descriptor 1 then points at stderr, so that
    prints of the libraries cannot reach the parent as protocol."""

    def __init__(self):
        self.out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, obj):
        self.out.write(PROTOCOL + json.dumps(obj) + "\n")
        self.out.flush()


def env_info():
    import torch
    info = {"torch": torch.__version__, "python": sys.version.split()[0],
            "cuda": torch.version.cuda, "device_name": platform.processor() or "cpu"}
    if torch.cuda.is_available():
        info["device_name"] = torch.cuda.get_device_name()
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except Exception as e:  # noqa: BLE001 - every unit then says why
        info["transformers"] = "missing (%s)" % hf_models.first_line(e)
    try:
        import inplace
        inplace.native()
        info["inplace_extension"] = "loaded"
    except Exception as e:  # noqa: BLE001
        info["inplace_extension"] = hf_models.first_line(e)
    return info


def cuda_healthy():
    import torch
    if not torch.cuda.is_available():
        return True
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2
    except Exception:  # noqa: BLE001 - a sticky CUDA error
        return False


def synchronize(device):
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step, device, steps, warmup, reps):
    """Per-step milliseconds of each repetition: `steps` back-to-back calls step(0..steps-1)
    between two CUDA events (perf_counter on the cpu), after step(0..warmup-1)."""
    import torch
    for i in range(warmup):
        step(i)
    synchronize(device)
    means = []
    for _ in range(reps):
        if device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for i in range(steps):
                step(i)
            end.record()
            end.synchronize()
            means.append(start.elapsed_time(end) / steps)
        else:
            t0 = time.perf_counter()
            for i in range(steps):
                step(i)
            means.append((time.perf_counter() - t0) * 1e3 / steps)
    return means


def host_us_per_call(step, device, steps, reps=3):
    """Microseconds of host time a call: `steps` calls timed on the host clock without waiting
    for the device (what a call costs the caller's thread: checks, launch or replay), the best
    of `reps` repetitions, the device waited for before each. Where the device is slower than
    the host, a long enough run makes launches wait for room in the device's queue (the medium
    shape's 70-kernel graphs: 75-82 us a call against 32-40 us at the tiny shape); a call timed
    alone after a device wait reads about 51 us at both shapes (a thread just back from waiting)."""
    best = float("inf")
    for _ in range(reps):
        synchronize(device)
        t0 = time.perf_counter()
        for i in range(steps):
            step(i)
        best = min(best, (time.perf_counter() - t0) * 1e6 / steps)
    synchronize(device)
    return best


def weight_bytes(model):
    """(bytes a decode step reads of the parameters, parameter count): each tensor once (a tied
    LM head once); a table only embedding modules use (token or position lookup) is one row."""
    import torch.nn as nn
    tensors = {}  # data_ptr -> [tensor, looked up only]
    for module in model.modules():
        lookup = isinstance(module, nn.Embedding)
        for p in module.parameters(recurse=False):
            entry = tensors.setdefault(p.data_ptr(), [p, True])
            entry[1] = entry[1] and lookup
    read = sum(p.element_size() * (p.shape[-1] if only_lookup else p.numel())
               for p, only_lookup in tensors.values())
    return read, sum(p.numel() for p, _ in tensors.values())


def _fail(column, e, send):
    log("%s failed:\n%s" % (column, traceback.format_exc()))
    send({"errors": {column: hf_models.first_line(e)}})
    return not cuda_healthy()


def eager_column(ctx, send):
    ms = time_steps(ctx["eager_step"], ctx["device"], *ctx["timing"])
    send({"eager_ms": min(ms), "eager_reps_ms": ms})
    log("eager %.3f ms" % min(ms))


def inplace_column(ctx, send):
    import torch
    target, dev, token, positions = ctx["target"], ctx["device"], ctx["token"], ctx["positions"]
    t0 = time.perf_counter()
    ep, examples = hf_models.export_static(target, dev)
    send({"export_s": round(time.perf_counter() - t0, 2)})
    c = hf_models.compile_exported(ep, examples)
    for label, e, tb in c.failures:
        log("inplace.compile (%s) failed:\n%s" % (label, tb))
    if c.program is None:
        raise RuntimeError("; ".join("%s: %s" % (label, hf_models.first_line(e))
                                     for label, e, _ in c.failures))
    compiled = c.program
    written = {t: kind for t, kind in compiled.aliased_io.values()}
    state = {t: hf_models.state_tensor(c.exported, t) for t in written}
    ptrs = {t: s.data_ptr() for t, s in state.items() if s is not None}
    caches = [n for n, _ in target.named_buffers() if "key_cache" in n or "value_cache" in n]
    send({"inplace_compile_s": round(c.seconds, 2), "inplace_program": c.label,
          "inplace_aliased": len(written), "inplace_aliased_kinds": sorted(set(written.values())),
          "inplace_caches_aliased": len([n for n in caches if n in ptrs]),
          "caches": len(caches)})
    with torch.no_grad():  # one step against eager's at the same position and cache contents
        want = ctx["eager_step"](0).float()
        got = compiled(token, positions[0:1]).float()
    send({"inplace_logits_max_abs_diff": float((got - want).abs().max()),
          "logits_max_abs": float(want.abs().max())})
    ms = time_steps(lambda i: compiled(token, positions[i:i + 1]), dev, *ctx["timing"])
    # The position tensors made before the timing: what is timed is the call, not the
    # benchmark's own slicing of its position tensor (a few microseconds of torch indexing).
    views = [positions[i:i + 1] for i in range(ctx["timing"][0])]
    host_us = host_us_per_call(lambda i: compiled(token, views[i]), dev, ctx["timing"][0])
    send({"inplace_ms": min(ms), "inplace_reps_ms": ms, "inplace_host_us": host_us,
          "inplace_caches_in_place": all(hf_models.state_tensor(c.exported, t).data_ptr() == p
                                         for t, p in ptrs.items())})
    log("inplace.compile %.3f ms (%s, compiled in %.1f s)" % (min(ms), c.label, c.seconds))


def compile_column(ctx, send):
    import torch
    target, dev, token, positions = ctx["target"], ctx["device"], ctx["token"], ctx["positions"]
    torch._dynamo.reset()
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)
    f = torch.compile(target, mode="reduce-overhead")

    def step(i):
        mark()
        return f(input_ids=token, cache_position=positions[i:i + 1])
    t0 = time.perf_counter()
    step(0)
    synchronize(dev)
    first = time.perf_counter() - t0
    send({"torch_compile_first_call_s": round(first, 2)})
    ms = time_steps(step, dev, *ctx["timing"])
    send({"compile_ms": min(ms), "compile_reps_ms": ms})
    log("torch.compile %.3f ms (first call %.1f s)" % (min(ms), first))


COLUMN_RUNS = (("eager", eager_column), ("inplace", inplace_column), ("compile", compile_column))


def run_decode(unit, send):
    """Returns True when CUDA is left broken."""
    import torch
    dev = torch.device(unit["device"])
    t0 = time.perf_counter()
    config = hf_models.config_for(unit["model"], unit["shape"], unit["s_max"])
    model = hf_models.build_model(config, dtype=getattr(torch, unit.get("dtype", "bfloat16")),
                                  device=dev)
    wrapper = hf_models.exportable(model, unit["s_max"], dev)
    target = hf_models.export_target(wrapper)
    read, params = weight_bytes(model)
    send({"weight_bytes": read, "parameters": params,
          "cache_bytes_per_position": hf_models.cache_bytes_per_position(target),
          "build_s": round(time.perf_counter() - t0, 2)})
    token = torch.ones(1, 1, dtype=torch.long, device=dev)
    positions = torch.arange(unit["position"],
                             unit["position"] + max(unit["steps"], unit["warmup"]), device=dev)

    def eager_step(i):
        return target(input_ids=token, cache_position=positions[i:i + 1])
    ctx = {"target": target, "device": dev, "token": token, "positions": positions,
           "eager_step": eager_step, "timing": (unit["steps"], unit["warmup"], unit["reps"])}
    with torch.no_grad():
        for column, run in COLUMN_RUNS:
            if column not in unit["columns"]:
                continue
            try:
                run(ctx, send)
            except Exception as e:  # noqa: BLE001 - this column's error; the others still run
                if _fail(column, e, send):
                    return True
    return False


def run_tokens(unit, send):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    steps = unit["steps"]
    max_cache = max(64, 1 << (len(hf_models.PROMPT) + steps).bit_length())
    r = hf_models.token_check(unit["model"], steps, unit["device"], max_cache)
    for label, error, tb in r["failures"]:
        log("%s tokens (%s) failed:\n%s" % (unit["model"], label, tb))
    r["failures"] = [[label, error, None] for label, error, _ in r["failures"]]
    send(r)
    if r["label"] is None:
        send({"errors": {"tokens": "; ".join("%s: %s" % (l, e) for l, e, _ in r["failures"])}})
    else:
        log("%s tokens %s" % (unit["model"], "equal" if r["tokens_equal"] else "DIFFER"))
    return False


RUNS = {"decode": run_decode, "tokens": run_tokens}


def cleanup():
    try:
        import torch
        torch._dynamo.reset()
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - a broken CUDA context: the unit said so already
        pass


def die_with_parent():
    """SIGKILL when the parent dies (Linux): a worker in a session of its own would otherwise
    outlive a parent killed from outside, holding the GPU."""
    try:
        import ctypes
        import signal
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main():
    die_with_parent()
    proto = Protocol()
    try:
        hello = env_info()
    except Exception as e:  # noqa: BLE001 - no torch: every unit fails, saying so
        hello = {"error": hf_models.first_line(e)}
    proto.send({"hello": hello})
    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        unit = json.loads(line)

        def send(part, uid=unit["id"]):
            proto.send({"id": uid, "partial": part})
        broken = False
        try:
            broken = RUNS[unit["kind"]](unit, send)
        except Exception as e:  # noqa: BLE001 - the whole unit failed (model, export wrapper)
            log("%s failed:\n%s" % (unit["id"], traceback.format_exc()))
            columns = unit.get("columns") or [unit["kind"]]
            error = hf_models.first_line(e)
            send({"error": error, "errors": {c: error for c in columns}})
            broken = not cuda_healthy()
        cleanup()
        proto.send({"id": unit["id"], "done": True, "exit": bool(broken)})
        if broken:
            return 3


if __name__ == "__main__":
    sys.exit(main())
