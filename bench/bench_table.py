#!/usr/bin/env python3
"""Turns the JSON of `inplace bench` into the markdown table of docs/performance.md and a PNG
plot (per-step time against s_max, one line per column). Standard library only: the PNG is
drawn pixel by pixel and written with zlib, so nothing beyond python3 is needed.

    python3 bench/bench_table.py bench.json [--png docs/decode_bench.png]

Plot colours: PyTorch eager orange, copy-back engine red, aliased engine blue, floor grey
(dashed); x: s_max on a log scale, y: milliseconds per step from 0.
"""
import argparse
import json
import math
import struct
import zlib

SERIES = [("torch_ms", (230, 120, 20), False), ("copy_back_ms", (200, 30, 30), False),
          ("aliased_ms", (30, 80, 200), False), ("floor_ms", (120, 120, 120), True)]


def table(data):
    m = data["model"]
    bw = "read bandwidth %.1f GB/s with %d thread(s) (the floor's)" % (
        data["read_bandwidth_gbs"], data.get("read_bandwidth_threads", 1))
    if "read_bandwidth_1t_gbs" in data:
        bw += ", %.1f GB/s with 1 thread, %.1f GB/s with all %d cores" % (
            data["read_bandwidth_1t_gbs"], data["read_bandwidth_all_cores_gbs"], data["all_cores"])
    reps = data.get("reps", 1)
    steps = ("median of %d steps" % data["steps"] if reps == 1 else
             "median of %d repetitions' medians of %d steps, PyTorch's and the engines' "
             "interleaved" % (reps, data["steps"]))
    lines = ["Model `%s`: %.1fM parameters, %.0f MB of %s weights, %d thread(s); decode position "
             "%d, %s; %s, measured in the same run." %
             (m["size"], m["parameters"] / 1e6, m["weight_bytes"] / 1e6, data["dtype"],
              data["threads"], data["position"], steps, bw), ""]

    def torch_ratio(r):  # per repetition where the run has them: median (lowest)
        if "torch_over_aliased_median" in r:
            return "%.2fx (%.2fx)" % (r["torch_over_aliased_median"], r["torch_over_aliased_min"])
        t = r.get("torch_ms")
        return "%.2fx" % (t / r["aliased_ms"]) if t else "-"
    per_rep = any("torch_over_aliased_median" in r for r in data["rows"])
    lines.append("| s_max | PyTorch eager | copy-back engine | aliased engine | floor | "
                 "aliased / floor | PyTorch / aliased%s | copy-back / aliased |" %
                 (" (median of the repetitions; lowest)" if per_rep else ""))
    lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in data["rows"]:
        t = r.get("torch_ms")
        lines.append("| %d | %s | %.2f ms | **%.2f ms** | %.2f ms | %.2fx | %s | %.2fx |" % (
            r["s_max"], "%.2f ms" % t if t else "-", r["copy_back_ms"], r["aliased_ms"],
            r["floor_ms"], r["aliased_ms"] / r["floor_ms"], torch_ratio(r),
            r["copy_back_ms"] / r["aliased_ms"]))
    if "aliased_cpu_ms" in data["rows"][0]:
        lines.append("")
        lines.append("CPU time (the engines': the stepping thread's, its own work, not inflated "
                     "by other processes on a busy machine; PyTorch's: its process's):")
        lines.append("")
        lines.append("| s_max | PyTorch eager | copy-back engine | aliased engine | floor | "
                     "aliased / floor | PyTorch / aliased | copy-back / aliased |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in data["rows"]:
            t = r.get("torch_cpu_ms")
            lines.append("| %d | %s | %.2f ms | **%.2f ms** | %.2f ms | %.2fx | %s | %.2fx |" % (
                r["s_max"], "%.2f ms" % t if t else "-", r["copy_back_cpu_ms"], r["aliased_cpu_ms"],
                r["floor_ms"], r["aliased_cpu_ms"] / r["floor_ms"],
                "%.2fx" % (t / r["aliased_cpu_ms"]) if t else "-",
                r["copy_back_cpu_ms"] / r["aliased_cpu_ms"]))
    if "torch_logits_max_rel_diff" in data:
        lines.append("")
        lines.append("PyTorch %s on the same weights; its logits differ from the engine's by at "
                     "most %.1g (relative) on the same step." %
                     (data["torch_version"], data["torch_logits_max_rel_diff"]))
    return "\n".join(lines)


def png(data, path, w=640, h=400):
    px = [[(255, 255, 255)] * w for _ in range(h)]
    left, right, top, bottom = 50, w - 20, 20, h - 40
    rows = data["rows"]
    xs = [math.log2(r["s_max"]) for r in rows]
    ymax = max(r.get(k, 0) or 0 for r in rows for k, _, _ in SERIES) * 1.1
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1

    def to_px(x, y):
        return (left + (x - x0) / (x1 - x0) * (right - left), bottom - y / ymax * (bottom - top))

    def dot(x, y, c, r=1):
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                xi, yi = int(round(x)) + dx, int(round(y)) + dy
                if 0 <= xi < w and 0 <= yi < h:
                    px[yi][xi] = c

    def line(a, b, c, dashed=False):
        n = int(max(abs(b[0] - a[0]), abs(b[1] - a[1]))) + 1
        for i in range(n + 1):
            if dashed and (i // 6) % 2:
                continue
            t = i / n
            dot(a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, c)

    axis = (0, 0, 0)
    line((left, top), (left, bottom), axis)
    line((left, bottom), (right, bottom), axis)
    for x in xs:  # ticks at each s_max
        line(to_px(x, 0), (to_px(x, 0)[0], bottom + 6), axis)
    step = 10 ** math.floor(math.log10(ymax / 2)) if ymax > 0 else 1
    y = 0.0
    while y <= ymax:  # horizontal grid every `step` ms
        line((left - 6, to_px(x0, y)[1]), (right, to_px(x0, y)[1]), (225, 225, 225))
        y += step
    for key, colour, dashed in SERIES:
        pts = [to_px(x, r[key]) for x, r in zip(xs, rows) if r.get(key)]
        for a, b in zip(pts, pts[1:]):
            line(a, b, colour, dashed)
        for p in pts:
            dot(p[0], p[1], colour, 3)
    raw = b"".join(b"\x00" + bytes(v for p in row for v in p) for row in px)
    chunk = lambda tag, body: struct.pack(">I", len(body)) + tag + body + struct.pack(
        ">I", zlib.crc32(tag + body) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--png", help="write the plot here")
    args = ap.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    print(table(data))
    if args.png:
        step = png(data, args.png)
        print("\nwrote %s (grid lines every %g ms)" % (args.png, step))


if __name__ == "__main__":
    main()
