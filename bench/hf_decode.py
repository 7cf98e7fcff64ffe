#!/usr/bin/env python3
"""Hugging Face decoders on the GPU (issue 29 item 6): Llama, Mistral, Qwen2, Phi-3, Gemma and
GPT-2 with random weights (configs built in code: scripts/hf_models.py), at the GPU benchmark's
`medium` shape and at Llama-3.2-1B's shape (vocab 128256, tied), bf16, batch 1, s_max 4096 and
16384, decode steps from position 200. Per step: PyTorch eager and
torch.compile(mode="reduce-overhead") of transformers' exportable static-cache module,
inplace.compile of its torch.export'ed program (in process), the built-in model where the shape
matches (`inplace bench --device cuda`), and the HBM floor (bench/hf_decode_report.py says the
formula). Then greedy tokens against eager in float32 at a tiny shape, and whether the caches
are written in place.

    INPLACE_BUILD_DIR=build-hf python3 bench/hf_decode.py --out hf-bench [--quick]
        [--max-seconds 480] [--resume] [--models llama,qwen2] [--shapes medium] [--s-max 4096]

(scripts/bench-hf.sh builds what it needs and runs this.) The measurements run in a worker
process (bench/hf_decode_worker.py) fed one unit at a time: a unit that crashes the worker or
leaves CUDA broken costs only that unit, and the time budget is kept by stopping the worker.
Every result is written to OUT/hf_decode.json and OUT/hf_decode.md as it arrives; units the
budget left out are listed, and `--resume` runs only those. This file needs no torch.
"""
import argparse
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))

import hf_decode_report as report  # noqa: E402
from hf_models import FAMILIES, SHAPES  # noqa: E402

PROTOCOL = "@@hf_decode@@ "
TINY_S_MAX = 512  # issue 29's host-limited case: 2 layers, d_model 64, float32, s_max 512
FULL = dict(models=",".join(FAMILIES), shapes="medium,llama1b", s_max="4096,16384", steps=64,
            warmup=5, reps=3, token_steps=64, token_models=None)
QUICK = dict(models="llama", shapes="medium", s_max="4096", steps=8, warmup=3, reps=1,
             token_steps=8, token_models=None)


def _names(text, allowed, what, parser):
    names = [n for n in text.split(",") if n]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        parser.error("--%s: %s (choose from %s)" % (what, ", ".join(bad) or "none given",
                                                    ", ".join(allowed)))
    return names


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="hf_decode.py", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="hf-bench", help="folder for hf_decode.json/.md (made)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: llama, medium, s_max 4096, 8 steps, 1 repetition")
    p.add_argument("--max-seconds", type=float, default=480,
                   help="wall-clock budget of the whole run (default 480): no unit starts "
                        "with less than --min-unit-seconds left, the worker is stopped at the end")
    p.add_argument("--min-unit-seconds", type=float, default=20,
                   help="no unit starts with less left of the budget (default 20)")
    p.add_argument("--resume", action="store_true",
                   help="keep the units OUT/hf_decode.json has done (run with the same "
                        "arguments); run the rest")
    p.add_argument("--models", help="comma list of %s (default all)" % ",".join(FAMILIES))
    p.add_argument("--shapes", help="comma list of %s (default medium,llama1b); tiny is the "
                   "host-limited case: float32, s_max %d whatever --s-max says"
                   % (",".join(SHAPES), TINY_S_MAX))
    p.add_argument("--s-max", help="comma list (default 4096,16384)")
    p.add_argument("--position", type=int, default=200, help="first decode position (default 200)")
    p.add_argument("--steps", type=int, help="timed steps a repetition (default 64)")
    p.add_argument("--warmup", type=int, help="warm-up steps (default 5)")
    p.add_argument("--reps", type=int, help="repetitions, the best is reported (default 3)")
    p.add_argument("--columns", default=",".join(report.COLUMNS),
                   help="comma list of eager,compile,inplace (default all)")
    p.add_argument("--token-steps", type=int, help="greedy steps of the token check (default 64)")
    p.add_argument("--token-models", help="models of the token check (default --models)")
    p.add_argument("--no-tokens", action="store_true", help="skip the token check")
    p.add_argument("--no-builtin", action="store_true", help="skip the built-in model")
    p.add_argument("--inplace-bin", help="the inplace CLI (default $INPLACE_BUILD_DIR/inplace, "
                                         "else build-gpu/inplace, else build/inplace)")
    p.add_argument("--hbm-tbs", type=float, default=4.8, help="HBM bandwidth of the floor (4.8)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--unit-seconds", type=float, default=300,
                   help="at most this long for one unit (default 300)")
    a = p.parse_args(argv)
    base = QUICK if a.quick else FULL
    for key, value in base.items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    a.models = _names(a.models, FAMILIES, "models", p)
    a.token_models = _names(a.token_models, FAMILIES, "token-models", p) if a.token_models else list(a.models)
    a.shapes = _names(a.shapes, list(SHAPES), "shapes", p)
    a.columns = _names(a.columns, report.COLUMNS, "columns", p)
    try:
        a.s_max = sorted({int(s) for s in a.s_max.split(",") if s})
    except ValueError:
        p.error("--s-max: expected integers separated by commas, got %r" % a.s_max)
    if not a.s_max:
        p.error("--s-max: none given")
    for name in ("steps", "warmup", "reps", "token_steps"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.position < 0 or a.position + max(a.steps, a.warmup) > a.s_max[0]:
        p.error("--position + --steps (and --warmup) must fit the smallest --s-max (%d)" % a.s_max[0])
    if a.max_seconds <= 0 or a.hbm_tbs <= 0:
        p.error("--max-seconds and --hbm-tbs must be positive")
    if a.inplace_bin is None:
        build = os.environ.get("INPLACE_BUILD_DIR")
        options = ([os.path.join(build, "inplace")] if build else []) + [
            os.path.join(REPO, "build-gpu", "inplace"), os.path.join(REPO, "build", "inplace")]
        a.inplace_bin = next((b for b in options if os.path.exists(b)), options[0])
    return a


def plan(a):
    """The units in the order they run: the token check (cheap: an answer on every model first),
    the built-in model, then every shape, s_max and model."""
    units = []
    if not a.no_tokens:
        for m in a.token_models:
            units.append({"id": "tokens/" + m, "kind": "tokens", "model": m,
                          "steps": a.token_steps, "device": a.device})
    if not a.no_builtin and any(SHAPES[s]["builtin"] == "medium" for s in a.shapes):
        units.append({"id": "builtin", "kind": "builtin"})
    for shape in [s for s in a.shapes if s != "tiny"]:
        for s in a.s_max:
            for m in a.models:
                units.append({"id": report.decode_id(shape, s, m), "kind": "decode", "shape": shape,
                              "model": m, "s_max": s, "position": a.position, "steps": a.steps,
                              "warmup": a.warmup, "reps": a.reps, "columns": list(a.columns),
                              "device": a.device})
    if "tiny" in a.shapes:
        for m in a.models:
            units.append({"id": report.decode_id("tiny", TINY_S_MAX, m), "kind": "decode",
                          "shape": "tiny", "model": m, "s_max": TINY_S_MAX, "dtype": "float32",
                          "position": a.position, "steps": a.steps, "warmup": a.warmup,
                          "reps": a.reps, "columns": list(a.columns), "device": a.device})
    return units


def new_doc(a, argv):
    meta = {"command": " ".join(shlex.quote(x) for x in ["bench/hf_decode.py"] + list(argv)),
            "models": a.models, "token_models": [] if a.no_tokens else a.token_models,
            "shapes": a.shapes, "s_max": a.s_max, "position": a.position, "steps": a.steps,
            "warmup": a.warmup, "reps": a.reps, "token_steps": a.token_steps,
            "columns": a.columns, "hbm_tbs": a.hbm_tbs, "device": a.device,
            "dtype": "bf16 weights, activations and caches", "floor": report.FLOOR_FORMULA,
            "max_seconds": a.max_seconds, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    return {"meta": meta, "env": {}, "shapes": {s: SHAPES[s] for s in a.shapes}, "units": {}}


def load_resumed(path):
    """The units a previous run finished (status done), from its JSON."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        return {}, {}
    done = {uid: e for uid, e in (old.get("units") or {}).items() if e.get("status") == "done"}
    return done, old.get("env") or {}


class LineReader:
    """Lines from a pipe's file descriptor, each read waiting at most until a deadline."""

    def __init__(self, fd):
        self.fd, self.buf, self.eof = fd, b"", False

    def readline(self, deadline, clock=time.monotonic):
        """A line (bytes without the newline), b"" at EOF, None at the deadline."""
        while b"\n" not in self.buf:
            left = deadline - clock()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                self.eof = True
                rest, self.buf = self.buf, b""
                return rest
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line


class Worker:
    """The measuring process: started on demand, fed a unit as a JSON line on stdin, answering
    with protocol lines on stdout ({"hello"}, {"id", "partial"}, {"id", "done"}); its stderr is
    ours. Stopped (its whole process group) at a deadline or when it exits."""

    def __init__(self, cmd, env=None, stderr=None):
        self.cmd, self.env, self.stderr = cmd, env, stderr
        self.proc, self.reader, self.hello, self.exit_status = None, None, None, None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=self.env, start_new_session=True)
        self.reader = LineReader(self.proc.stdout.fileno())

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and its compile workers
            except ProcessLookupError:
                pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None

    def _message(self, deadline):
        """The next protocol message; other lines are echoed. None at the deadline, {} at EOF."""
        while True:
            line = self.reader.readline(deadline)
            if line is None:
                return None
            if line == b"" and self.reader.eof:
                return {}
            text = line.decode("utf-8", "replace")
            if text.startswith(PROTOCOL):
                return json.loads(text[len(PROTOCOL):])
            if text:
                print(text, flush=True)

    def run(self, unit, deadline, on_partial):
        """Runs one unit. Returns "done", "failed" (the worker died: its exit status is in
        self.exit_status) or "timeout" (stopped at the deadline)."""
        self.exit_status = None
        if not self.alive():
            self.start()
            msg = self._message(deadline)
            if msg is None:
                self.stop()
                return "timeout"
            if "hello" not in msg:
                return self._died()
            self.hello = msg["hello"]
        try:
            self.proc.stdin.write((json.dumps(unit) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            return self._died()
        while True:
            msg = self._message(deadline)
            if msg is None:
                self.stop()
                return "timeout"
            if not msg:
                return self._died()
            if msg.get("id") != unit["id"]:
                continue
            if "partial" in msg:
                on_partial(msg["partial"])
            if msg.get("done"):
                if msg.get("exit"):  # it leaves after this unit (CUDA may be broken)
                    self.stop_after_exit(deadline)
                return "done"

    def stop_after_exit(self, deadline):
        try:
            self.proc.wait(timeout=max(0.1, min(10.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
        self.stop()

    def _died(self):
        self.proc.wait()
        self.exit_status = self.proc.returncode
        self.stop()
        return "failed"


def merge(result, partial):
    """A worker's partial result into the unit's: errors merge by column, the rest replaces."""
    for k, v in partial.items():
        if k == "errors":
            result.setdefault("errors", {}).update(v)
        else:
            result[k] = v


def run_builtin(a, entry, out_dir, deadline):
    """`inplace bench --device cuda` at the medium shape with 4 kv heads (the only shape with a
    built-in size): its aliased engine with CUDA graphs, per s_max."""
    path = os.path.join(out_dir, "builtin.json")
    cmd = [a.inplace_bin, "bench", "--device", a.device, "--size", "medium", "--kv-heads", "4",
           "--dtype", "bf16", "--s-max", ",".join(str(s) for s in a.s_max), "--position",
           str(a.position), "--steps", str(a.steps), "--reps", str(a.reps), "--cuda-graph", "on",
           "--no-torch", "--out", path]
    r = entry["result"]
    r["command"] = " ".join(shlex.quote(x) for x in cmd)
    if not os.path.exists(a.inplace_bin):
        r["error"] = "no inplace binary at %s (build the inplace_cli target)" % a.inplace_bin
        return "failed"
    if os.path.exists(path):
        os.remove(path)
    print("[hf-bench] built-in: %s" % r["command"], flush=True)
    status = "done"
    try:
        proc = subprocess.run(cmd, timeout=max(1.0, deadline - time.monotonic()))
        if proc.returncode != 0:
            r["error"] = "inplace bench exited with status %d" % proc.returncode
            status = "failed"
    except subprocess.TimeoutExpired:
        status = "timeout"
    try:
        with open(path) as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        r.setdefault("error", "no JSON from inplace bench (%s)" % e)
        return "failed" if status == "done" else status
    r["aliased_ms"] = {str(row["s_max"]): row["aliased_ms"] for row in raw.get("rows", [])}
    r["floor_ms"] = {str(row["s_max"]): row.get("floor_ms") for row in raw.get("rows", [])}
    r["raw"] = raw
    return status


def default_worker_cmd():
    return [sys.executable, os.path.join(HERE, "hf_decode_worker.py")]


def main(argv=None, worker_cmd=None, worker_stderr=None, clock=time.monotonic):
    argv = sys.argv[1:] if argv is None else list(argv)
    a = parse_args(argv)
    start = clock()
    deadline = start + a.max_seconds
    os.makedirs(a.out, exist_ok=True)
    doc = new_doc(a, argv)
    units = plan(a)
    done = {}
    if a.resume:
        done, env = load_resumed(os.path.join(a.out, "hf_decode.json"))
        doc["env"].update(env)
    for u in units:
        doc["units"][u["id"]] = done.get(u["id"]) or {"unit": u, "status": "pending", "result": {}}
    report.write(doc, a.out)
    env = dict(os.environ, PYTHONUNBUFFERED="1", TRANSFORMERS_VERBOSITY="error")
    worker = Worker(worker_cmd or default_worker_cmd(), env, worker_stderr)
    try:
        for u in units:
            entry = doc["units"][u["id"]]
            if entry["status"] == "done":
                print("[hf-bench] %s: kept from the previous run" % u["id"], flush=True)
                continue
            left = deadline - clock()
            if left < a.min_unit_seconds:
                entry["status"] = "skipped"
                print("[hf-bench] %s: skipped, %.0f s left of the budget" % (u["id"], left), flush=True)
                continue
            unit_deadline = min(deadline, clock() + a.unit_seconds)
            t0 = clock()
            print("[hf-bench] %s ..." % u["id"], flush=True)
            entry["status"] = "running"
            if u["kind"] == "builtin":
                status = run_builtin(a, entry, a.out, unit_deadline)
            else:
                def on_partial(partial, entry=entry):
                    merge(entry["result"], partial)
                    report.write(doc, a.out)
                status = worker.run(u, unit_deadline, on_partial)
                if worker.hello and not doc["env"]:
                    doc["env"] = worker.hello
                if status == "failed":
                    entry["result"].setdefault(
                        "error", "the worker exited with status %s" % worker.exit_status)
            entry["status"] = status
            entry["seconds"] = round(clock() - t0, 1)
            print("[hf-bench] %s: %s in %.0f s" % (u["id"], status, entry["seconds"]), flush=True)
            report.write(doc, a.out)
    except KeyboardInterrupt:
        print("[hf-bench] interrupted: writing what was measured", flush=True)
    finally:
        worker.stop()
        for e in doc["units"].values():
            if e["status"] in ("running", "pending"):
                e["status"] = "skipped"
        doc["meta"]["elapsed_s"] = round(clock() - start, 1)
        text = report.write(doc, a.out)
    print("\n" + text)
    print("[hf-bench] wrote %s and %s" % (os.path.join(a.out, "hf_decode.json"),
                                          os.path.join(a.out, "hf_decode.md")))
    clean = all(e["status"] == "done" and not (e.get("result") or {}).get("errors")
                for e in doc["units"].values())
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
