#!/usr/bin/env python3
"""Where a decode step's GPU time goes: one Hugging Face decoder (random weights, bf16, the
exportable static-cache module, as bench/hf_decode.py builds it) compiled by inplace.compile,
then `--steps` decode steps under torch.profiler, and a table of the step's kernels in launch
order (name, microseconds, calls a step) with their sum, next to the step's time by CUDA events.

    INPLACE_BUILD_DIR=build-hf python3 bench/hf_kernel_trace.py --model llama --shape medium
        [--s-max 4096] [--position 200] [--steps 16] [--no-graph] [--json OUT.json]

With INPLACE_CUDA_PDL=0 each kernel's span is its own work (with programmatic dependent launch
a kernel starts early and waits, so its span includes the wait). The questions it answers: which
launches a model's step has beyond the built-in model's, and how fast each product reads.

`--sequence` prints a step's launches in order: each one's span, and its end delta (its end
minus the previous launch's end, the previous step's last for the first): its share of the
step's critical path, which with PDL on (where spans overlap) is what a launch costs the step;
then the same by a launch's role in a layer, averaged over the layers (`summarize_layers`).
Under the profiler the end deltas sum to more than the step's time by CUDA events (on the 1B
shape 1106 against 1068 us, mostly in the gap before the step's first kernels).
"""
import argparse
import json
import os
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import hf_models  # noqa: E402


def summarize_layers(sequence, marker="attention"):
    """Where the step's critical path goes, by the role a launch has in a layer: the launches
    from one `marker` launch (a layer's attention) to the next are a layer's (its attention, what
    follows it, and the next layer's products up to its attention); the layers of the most
    common length are averaged at each offset (mean span and mean end delta). Returns (before,
    per_offset, after, layers): the launches before the first marker, the averaged layer, the
    launches from the last marker on (the last layer's tail, the LM head, the step's end), and
    how many layers were averaged; each row {"kernel", "us", "end_delta_us"}."""
    at = [i for i, r in enumerate(sequence) if marker in r["kernel"]]
    if len(at) < 2:
        return sequence, [], [], 0
    spans = [(at[k], at[k + 1]) for k in range(len(at) - 1)]
    lengths = [b - a for a, b in spans]
    period = max(sorted(set(lengths)), key=lengths.count)
    full = [a for a, b in spans if b - a == period]
    per = []
    for k in range(period):
        rows = [sequence[a + k] for a in full]
        per.append({"kernel": rows[0]["kernel"],
                    "us": sum(r["us"] for r in rows) / len(rows),
                    "end_delta_us": sum(r["end_delta_us"] for r in rows) / len(rows)})
    return sequence[:at[0]], per, sequence[at[-1]:], len(full)


def print_layers(sequence):
    before, per, after, layers = summarize_layers(sequence)
    if not per:
        return
    print("by a launch's role in a layer (attention to attention): %d launches before, %d layers "
          "of %d launches averaged, %d from the last attention on" % (
              len(before), layers, len(per), len(after)))
    for label, rows in (("before", before), ("layer", per), ("after", after)):
        for row in rows:
            print("  %-6s %8.2f us %+8.2f us  %s" % (label, row["us"], row["end_delta_us"],
                                                    row["kernel"][:100]))
    print("  a layer: %.2f us of end deltas" % sum(r["end_delta_us"] for r in per))


def parse_args(argv):
    p = argparse.ArgumentParser(prog="hf_kernel_trace.py", description=__doc__.split("\n\n")[0])
    hf_models.add_model_arguments(p)
    p.add_argument("--steps", type=int, default=16, help="profiled steps (default 16)")
    p.add_argument("--no-graph", action="store_true", help="launch each call's kernels (no graph)")
    p.add_argument("--json", help="write the table as JSON here")
    p.add_argument("--plan", help="write the engine's plan (its steps in order) here")
    p.add_argument("--sequence", action="store_true",
                   help="also print each launch of a step in order (mean over the steps)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import torch
    import inplace
    dev = torch.device("cuda")
    dtype = torch.float32 if args.shape == "tiny" else torch.bfloat16
    _, ep, examples = hf_models.exported_decoder(args.model, args.shape, args.s_max, dtype, dev)
    with torch.no_grad():
        c = hf_models.compile_exported(ep, examples)
    if c.program is None:
        for label, e, tb in c.failures:
            print("inplace.compile (%s) failed:\n%s" % (label, tb), file=sys.stderr)
        return 1
    compiled = c.program
    if args.plan:
        with open(args.plan, "w") as f:
            f.write(str(compiled.plan))
    if args.no_graph:
        compiled.cuda_graph = False
    token = torch.ones(1, 1, dtype=torch.long, device=dev)
    n = args.steps
    positions = torch.arange(args.position, args.position + 2 * n + 8, device=dev)
    with torch.no_grad():
        for i in range(8):
            compiled(token, positions[i:i + 1])
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(n):
            compiled(token, positions[8 + i:9 + i])
        end.record()
        end.synchronize()
        step_us = start.elapsed_time(end) * 1e3 / n
        acts = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for i in range(n):
                compiled(token, positions[8 + n + i:9 + n + i])
            torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels.sort(key=lambda e: e.time_range.start)
    table = OrderedDict()  # name -> [total us, count, first index]
    for i, e in enumerate(kernels):
        row = table.setdefault(e.name, [0.0, 0, i])
        row[0] += e.time_range.end - e.time_range.start
        row[1] += 1
    busy = sum(r[0] for r in table.values()) / n
    print("%s %s s_max %d position %d, %s, PDL %s: step %.1f us (CUDA events), kernels %.1f "
          "us busy, %d launches a step" % (
              args.model, args.shape, args.s_max, args.position,
              "no graph" if args.no_graph else "graph",
              os.environ.get("INPLACE_CUDA_PDL", "1"), step_us, busy, len(kernels) // n))
    rows = []
    for name, (total, count, _) in table.items():
        rows.append({"kernel": name, "us_a_step": total / n, "calls_a_step": count / n,
                     "us_a_call": total / count})
        print("%9.2f us %6.2f x %8.2f us  %s" % (total / n, count / n, total / count, name[:150]))
    per = len(kernels) // n
    sequence = []
    if per * n == len(kernels):
        for i in range(per):
            spans = [kernels[j * per + i] for j in range(n)]
            us = sum(e.time_range.end - e.time_range.start for e in spans) / n
            deltas = [kernels[j * per + i].time_range.end - kernels[j * per + i - 1].time_range.end
                      for j in range(n) if j * per + i > 0]
            sequence.append({"kernel": spans[0].name, "us": us,
                             "end_delta_us": sum(deltas) / len(deltas) if deltas else 0.0})
    if args.sequence:
        for i, row in enumerate(sequence):
            print("%4d %8.2f us %+8.2f us  %s" % (i, row["us"], row["end_delta_us"],
                                                 row["kernel"][:110]))
        print_layers(sequence)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "step_us": step_us, "busy_us": busy,
                       "launches": len(kernels) // n, "kernels": rows,
                       "sequence": sequence}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
