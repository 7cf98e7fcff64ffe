"""bench/hf_decode.py without transformers or a GPU (those are on the GPU machine): its
arguments, the order of its units, the HBM floor, the markdown tables from fake timings, and
whole runs against a fake worker and a fake `inplace` binary: partial results kept, a column's
error cited, a worker that crashes replaced, a unit that hangs stopped, the time budget kept,
and --resume running only what is left. With torch (any version): the worker's decode unit on
a toy static-cache module on the cpu, and the real worker answering units it cannot run."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from harness import REPO, torch

sys.path.insert(0, os.path.join(REPO, "bench"))

import hf_decode  # noqa: E402
import hf_decode_report as report  # noqa: E402
import hf_decode_worker as worker  # noqa: E402
import hf_models  # noqa: E402

FAKE_WORKER = textwrap.dedent("""
    import json, os, sys, time
    P = %r
    def send(o):
        sys.stdout.write(P + json.dumps(o) + "\\n"); sys.stdout.flush()
    send({"hello": {"torch": "fake", "transformers": "fake", "python": "3", "device_name": "FakeGPU"}})
    print("a library printing on stdout")  # not protocol: echoed by the parent
    sys.stdout.flush()
    sleep = float(os.environ.get("FAKE_SLEEP", "0"))
    for line in sys.stdin:
        u = json.loads(line)
        part = lambda p: send({"id": u["id"], "partial": p})
        if u["kind"] == "tokens":
            part({"label": "as exported", "tokens_equal": True, "logits_close": True,
                  "max_abs_diff": 0.0, "aliased": 4, "aliased_kinds": ["kv_cache_update"],
                  "caches": 4, "caches_aliased": 4, "caches_in_place": True,
                  "caches_equal_eager": True, "compile_s": 1.5, "failures": []})
        else:
            m, s = u["model"], u["s_max"]
            part({"weight_bytes": 300000000, "cache_bytes_per_position": 24576})
            part({"eager_ms": 13.5 if s == 4096 else 22.5})
            if m == "phi3":
                os._exit(9)  # a crash in the middle of the unit
            if m == "gemma" and s == 4096:
                time.sleep(60)  # hangs
            time.sleep(sleep)
            if m == "gpt2":
                part({"errors": {"inplace": "Error: [engine] node 'dropout' has no kernel"}})
            else:
                part({"inplace_ms": 5.87 if s == 4096 else 13.2})
            part({"compile_ms": 0.945 if s == 4096 else 1.261})
        send({"id": u["id"], "done": True, "exit": False})
""") % hf_decode.PROTOCOL

FAKE_INPLACE = textwrap.dedent("""\
    #!%s
    import json, sys
    out = sys.argv[sys.argv.index("--out") + 1]
    sizes = sys.argv[sys.argv.index("--s-max") + 1].split(",")
    rows = [{"s_max": int(s), "aliased_ms": 0.278, "floor_ms": 0.075} for s in sizes]
    json.dump({"rows": rows}, open(out, "w"))
""") % sys.executable


class Arguments(unittest.TestCase):
    def test_defaults_are_the_whole_benchmark(self):
        a = hf_decode.parse_args([])
        self.assertEqual(a.models, ["llama", "mistral", "qwen2", "phi3", "gemma", "gpt2", "qwen3", "gemma3"])
        self.assertEqual(a.shapes, ["medium", "llama1b"])
        self.assertEqual(a.s_max, [4096, 16384])
        self.assertEqual((a.position, a.steps, a.warmup, a.reps, a.token_steps), (200, 64, 5, 3, 64))
        self.assertEqual(a.columns, ["eager", "compile", "inplace"])
        self.assertEqual(a.token_models, a.models)
        self.assertEqual(a.max_seconds, 480)
        self.assertEqual(a.hbm_tbs, 4.8)

    def test_quick_is_one_model_one_size_few_steps(self):
        a = hf_decode.parse_args(["--quick"])
        self.assertEqual((a.models, a.shapes, a.s_max), (["llama"], ["medium"], [4096]))
        self.assertLessEqual(a.steps, 8)
        self.assertEqual(a.reps, 1)
        self.assertEqual(a.token_models, ["llama"])
        # explicit options win over --quick's
        self.assertEqual(hf_decode.parse_args(["--quick", "--steps", "16"]).steps, 16)

    def test_refuses_what_cannot_run(self):
        for argv in (["--models", "llama,bert"], ["--shapes", "huge"], ["--s-max", "4k"],
                     ["--s-max", "128"], ["--steps", "0"], ["--columns", "eager,xla"],
                     ["--max-seconds", "0"]):
            with self.subTest(argv=argv):
                with self.assertRaises(SystemExit):
                    hf_decode.parse_args(argv)

    def test_plan_token_check_then_builtin_then_shapes(self):
        a = hf_decode.parse_args(["--models", "llama,gpt2", "--s-max", "4096,16384"])
        ids = [u["id"] for u in hf_decode.plan(a)]
        self.assertEqual(ids, [
            "tokens/llama", "tokens/gpt2", "builtin",
            "decode/medium/4096/llama", "decode/medium/4096/gpt2",
            "decode/medium/16384/llama", "decode/medium/16384/gpt2",
            "decode/llama1b/4096/llama", "decode/llama1b/4096/gpt2",
            "decode/llama1b/16384/llama", "decode/llama1b/16384/gpt2"])
        # no built-in size has Llama-3.2-1B's vocabulary: no built-in run for that shape alone
        a = hf_decode.parse_args(["--shapes", "llama1b", "--no-tokens"])
        self.assertNotIn("builtin", [u["id"] for u in hf_decode.plan(a)])


    def test_tiny_is_the_host_limited_case_in_float32(self):
        a = hf_decode.parse_args(["--models", "llama", "--shapes", "medium,tiny", "--s-max",
                                  "4096", "--no-tokens", "--no-builtin"])
        units = hf_decode.plan(a)
        self.assertEqual([u["id"] for u in units],
                         ["decode/medium/4096/llama", "decode/tiny/512/llama"])
        self.assertEqual(units[1]["dtype"], "float32")
        self.assertNotIn("dtype", units[0])  # bf16, the worker's default
        doc = hf_decode.new_doc(a, [])
        for u in units:
            doc["units"][u["id"]] = {"unit": u, "status": "pending", "result": {}}
        doc["units"]["decode/tiny/512/llama"].update(status="done", result={
            "eager_ms": 2.5, "compile_ms": 0.356, "inplace_ms": 0.178, "inplace_host_us": 12.25})
        text = report.render(doc)
        self.assertIn("### Where the host is the limit: `tiny`", text)
        self.assertIn("| llama | 512 | 2.500 ms | 0.356 ms | 0.178 ms | 12.2 us | 0.50x |", text)


class Floor(unittest.TestCase):
    def test_formula(self):
        self.assertEqual(report.read_positions(200, 64), 233)
        # 300 MB of weights and 233 positions of 24576 bytes at 4.8 TB/s
        want = (300e6 + 24576 * 233) / 4.8e12 * 1e3
        self.assertAlmostEqual(report.floor_ms(300e6, 24576, 233, 4.8), want)
        self.assertAlmostEqual(report.floor_ms(4.8e9, 0, 0, 4.8), 1.0)


def fake_doc(units):
    a = hf_decode.parse_args(["--models", "llama,gpt2", "--shapes", "medium"])
    doc = hf_decode.new_doc(a, ["--models", "llama,gpt2", "--shapes", "medium"])
    for u in hf_decode.plan(a):
        doc["units"][u["id"]] = {"unit": u, "status": "pending", "result": {}}
    for uid, (status, result) in units.items():
        doc["units"][uid].update(status=status, result=result)
    return doc


class Tables(unittest.TestCase):
    def test_rows_ratios_and_cited_errors(self):
        base = {"weight_bytes": 300000000, "cache_bytes_per_position": 24576}
        doc = fake_doc({
            "builtin": ("done", {"aliased_ms": {"4096": 0.278, "16384": 0.280}}),
            "decode/medium/4096/llama": ("done", dict(base, eager_ms=13.5, compile_ms=0.945,
                                                      inplace_ms=5.87)),
            "decode/medium/16384/llama": ("done", dict(base, eager_ms=22.5, compile_ms=1.261,
                                                       inplace_ms=13.2)),
            "decode/medium/4096/gpt2": ("done", dict(base, eager_ms=9.0, compile_ms=0.8, errors={
                "inplace": "Error: [engine] node 'dropout': op 'dropout' has no kernel"})),
            "decode/medium/16384/gpt2": ("timeout", dict(base, eager_ms=9.5)),
            "tokens/llama": ("done", {"label": "as exported", "tokens_equal": True,
                                      "logits_close": True, "max_abs_diff": 0.0, "aliased": 4,
                                      "aliased_kinds": ["kv_cache_update"], "caches": 4,
                                      "caches_aliased": 4, "caches_in_place": True,
                                      "caches_equal_eager": True, "compile_s": 1.25}),
            "tokens/gpt2": ("done", {"label": None, "failures": [
                ["as exported", "Error: dropout", None], ["decomposed", "Error: dropout", None]]}),
        })
        text = report.render(doc)
        floor = "%.3f ms" % report.floor_ms(300000000, 24576, 233, 4.8)
        self.assertIn("| llama | 4096 | 13.50 ms | 0.945 ms | 5.870 ms | 0.278 ms | %s | 6.21x "
                      "| 21.12x | - |" % floor, text)
        self.assertIn("| llama | 16384 | 22.50 ms | 1.261 ms | 13.20 ms | 0.280 ms | %s | 10.47x "
                      "| 47.14x | 2.25x |" % floor, text)
        self.assertIn("| gpt2 | 4096 | 9.000 ms | 0.800 ms | FAIL [1] | 0.278 ms |", text)
        self.assertIn("| gpt2 | 16384 | 9.500 ms | timeout | timeout |", text)
        self.assertIn("1. gpt2, s_max 4096, inplace.compile: Error: [engine] node 'dropout'", text)
        self.assertIn("| llama | equal | yes | yes (4 of 4) | yes | 4 (kv_cache_update) | "
                      "as exported | 1.2 s |", text)
        self.assertIn("| gpt2 | FAIL [2] |", text)
        self.assertIn("2. gpt2, tokens: Error: dropout; Error: dropout", text)
        self.assertIn("HBM floor at 4.8 TB/s: floor = (weight bytes", text)
        self.assertIn("decode/medium/16384/gpt2", text.split("Not measured")[1])

    def test_no_builtin_where_no_size_matches(self):
        doc = fake_doc({"builtin": ("done", {"aliased_ms": {"4096": 0.278}})})
        self.assertEqual(report.builtin_ms(doc, "medium", 4096), 0.278)
        doc["shapes"]["llama1b"] = hf_decode.SHAPES["llama1b"]
        self.assertIsNone(report.builtin_ms(doc, "llama1b", 4096))

    def test_unmeasured_cells(self):
        doc = fake_doc({"builtin": ("failed", {"command": "build/inplace bench",
                                               "error": "no inplace binary at build/inplace"})})
        text = report.render(doc)
        self.assertIn("| llama | 4096 | skip | skip | skip | - | - | - | - | - |", text)
        self.assertIn("1. built-in (`build/inplace bench`): no inplace binary at build/inplace", text)


class WholeRun(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.worker = os.path.join(self.dir, "worker.py")
        with open(self.worker, "w") as f:
            f.write(FAKE_WORKER)
        self.bin = os.path.join(self.dir, "inplace")
        with open(self.bin, "w") as f:
            f.write(FAKE_INPLACE)
        os.chmod(self.bin, 0o755)
        self.out = os.path.join(self.dir, "out")

    def run_bench(self, *argv, sleep=0.0):
        os.environ["FAKE_SLEEP"] = str(sleep)
        self.printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(self.printed):
                rc = hf_decode.main(["--out", self.out, "--inplace-bin", self.bin] + list(argv),
                                    worker_cmd=[sys.executable, self.worker])
        finally:
            del os.environ["FAKE_SLEEP"]
        with open(os.path.join(self.out, "hf_decode.json")) as f:
            doc = json.load(f)
        with open(os.path.join(self.out, "hf_decode.md")) as f:
            return rc, doc, f.read()

    def test_failures_stay_in_their_unit(self):
        rc, doc, md = self.run_bench("--models", "llama,gpt2,phi3,gemma", "--shapes", "medium",
                                     "--unit-seconds", "3", "--min-unit-seconds", "1")
        self.assertEqual(rc, 1)
        status = {uid: e["status"] for uid, e in doc["units"].items()}
        self.assertEqual(status["builtin"], "done")
        self.assertEqual(status["decode/medium/4096/llama"], "done")
        self.assertEqual(status["decode/medium/4096/gpt2"], "done")
        self.assertEqual(status["decode/medium/4096/phi3"], "failed")  # crashed
        self.assertEqual(status["decode/medium/4096/gemma"], "timeout")  # stopped
        # fresh workers took over after the crash and the hang
        self.assertEqual(status["decode/medium/16384/gemma"], "done")
        self.assertEqual(doc["env"]["device_name"], "FakeGPU")
        phi3 = doc["units"]["decode/medium/4096/phi3"]["result"]
        self.assertEqual(phi3["eager_ms"], 13.5)  # what arrived before the crash is kept
        self.assertIn("status 9", phi3["error"])
        self.assertIn("| llama | 4096 | 13.50 ms | 0.945 ms | 5.870 ms | 0.278 ms |", md)
        self.assertIn("| gemma | 4096 | 13.50 ms | timeout | timeout |", md)
        self.assertIn("| gemma | 16384 | 22.50 ms | 1.261 ms | 13.20 ms | 0.278 ms |", md)
        self.assertIn("inplace.compile: Error: [engine] node 'dropout' has no kernel", md)
        self.assertIn("the worker exited with status 9", md)
        self.assertIn("a library printing on stdout", self.printed.getvalue())  # echoed
        self.assertIn("| llama | 4096 | 13.50 ms |", self.printed.getvalue())  # the tables

    def test_budget_then_resume(self):
        argv = ["--models", "llama", "--shapes", "medium", "--no-tokens", "--no-builtin"]
        rc, doc, md = self.run_bench(*argv, "--max-seconds", "1.5", "--min-unit-seconds", "0.8",
                                     sleep=1.0)
        status = {uid: e["status"] for uid, e in doc["units"].items()}
        self.assertEqual(status, {"decode/medium/4096/llama": "done",
                                  "decode/medium/16384/llama": "skipped"})
        self.assertEqual(rc, 1)
        self.assertIn("rerun the command with `--resume`", md)
        first = doc["units"]["decode/medium/4096/llama"]
        rc, doc, md = self.run_bench(*argv, "--resume", sleep=0.0)
        self.assertEqual(rc, 0)
        self.assertEqual(doc["units"]["decode/medium/4096/llama"], first)  # kept as it was
        self.assertEqual(doc["units"]["decode/medium/16384/llama"]["status"], "done")
        self.assertIn("| llama | 16384 | 22.50 ms | 1.261 ms | 13.20 ms | - |", md)
        self.assertNotIn("Not measured", md)


if torch is not None:
    class ToyStaticCache(torch.nn.Module):
        """The exportable static-cache module's interface: (input_ids, cache_position) ->
        logits, caches as buffers written in place, a learned position table, a tied LM head."""

        def __init__(self, s_max):
            super().__init__()
            self.embed = torch.nn.Embedding(32, 8)
            self.wpe = torch.nn.Embedding(s_max, 8)
            self.lm_head = torch.nn.Linear(8, 32, bias=False)
            self.lm_head.weight = self.embed.weight
            self.register_buffer("key_cache_0", torch.zeros(1, 2, s_max, 4))
            self.register_buffer("value_cache_0", torch.zeros(1, 2, s_max, 4))

        def forward(self, input_ids=None, inputs_embeds=None, cache_position=None):
            h = self.embed(input_ids) + self.wpe(cache_position)[None]
            self.key_cache_0.index_copy_(2, cache_position, h.view(1, 2, 1, 4))
            self.value_cache_0.index_copy_(2, cache_position, -h.view(1, 2, 1, 4))
            return self.lm_head(h + self.key_cache_0.sum() * 1e-3)


@unittest.skipIf(torch is None, "torch missing")
class WorkerOnCpu(unittest.TestCase):
    """The worker's decode unit on a toy static-cache module (transformers replaced): what it
    reads of the weights and caches, a timed eager column, and each column's result or error
    (torch 1.13 has neither torch.export nor torch.compile: those columns fail, each alone)."""

    def test_decode_unit(self):
        saved = (hf_models.config_for, hf_models.build_model, hf_models.exportable)
        hf_models.config_for = lambda family, shape, s_max: s_max
        hf_models.build_model = lambda s_max, dtype=None, device="cpu": ToyStaticCache(s_max)
        hf_models.exportable = lambda model, s_max, device: model
        parts = []
        try:
            unit = {"id": "decode/medium/64/llama", "kind": "decode", "shape": "medium",
                    "model": "llama", "s_max": 64, "position": 20, "steps": 4, "warmup": 2,
                    "reps": 2, "columns": ["eager", "compile", "inplace"], "device": "cpu"}
            with contextlib.redirect_stderr(io.StringIO()):
                broken = worker.run_decode(unit, parts.append)
        finally:
            hf_models.config_for, hf_models.build_model, hf_models.exportable = saved
        self.assertFalse(broken)
        result = {}
        for p in parts:
            hf_decode.merge(result, p)
        json.dumps(result)  # what the parent gets must be JSON
        # the tied table whole (it is the LM head), the position table one row of 8 floats
        self.assertEqual(result["weight_bytes"], 32 * 8 * 4 + 8 * 4)
        self.assertEqual(result["parameters"], 32 * 8 + 64 * 8)
        self.assertEqual(result["cache_bytes_per_position"], 2 * (2 * 4) * 4)
        self.assertEqual(len(result["eager_reps_ms"]), 2)
        self.assertEqual(result["eager_ms"], min(result["eager_reps_ms"]))
        for column in ("compile", "inplace"):
            self.assertTrue(column + "_ms" in result or column in result.get("errors", {}),
                            column)


def transformers_missing():
    import importlib.util
    return importlib.util.find_spec("transformers") is None


@unittest.skipIf(torch is None or not transformers_missing(),
                 "needs torch without transformers (the GPU machine runs the real thing)")
class RealWorkerWithoutTransformers(unittest.TestCase):
    """The real worker process: its hello, the protocol on a stdout of its own, and a unit that
    cannot run (no transformers here) answered with each column's error, not a hang."""

    def test_units_fail_saying_why(self):
        out = tempfile.mkdtemp()
        argv = ["--out", out, "--device", "cpu", "--models", "llama", "--shapes", "medium",
                "--s-max", "64", "--position", "2", "--steps", "2", "--warmup", "1", "--reps",
                "1", "--token-steps", "2", "--no-builtin", "--max-seconds", "120"]
        with contextlib.redirect_stdout(io.StringIO()):
            rc = hf_decode.main(argv, worker_stderr=subprocess.DEVNULL)
        self.assertEqual(rc, 1)
        with open(os.path.join(out, "hf_decode.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["env"]["torch"], torch.__version__)
        self.assertIn("missing", doc["env"]["transformers"])
        decode = doc["units"]["decode/medium/64/llama"]
        self.assertEqual(decode["status"], "done")
        self.assertIn("transformers", decode["result"]["errors"]["inplace"])
        self.assertEqual(set(decode["result"]["errors"]), {"eager", "compile", "inplace"})
        self.assertIn("transformers", doc["units"]["tokens/llama"]["result"]["errors"]["tokens"])


if __name__ == "__main__":
    unittest.main()
