"""python/bench/hf_graphs_cpu.py on one exported fixture, briefly: both engines compile and
step, their greedy tokens agree, and the table and JSON carry every column."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

from compile_harness import requires_extension, torch  # noqa: F401

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python", "bench"))


@requires_extension
class HfGraphsCpuBench(unittest.TestCase):
    def test_one_fixture(self):
        import hf_graphs_cpu
        graph = os.path.join(ROOT, "tests", "frontend", "fixtures", "hf", "llama_bf16.json")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            argv = sys.argv
            sys.argv = ["hf_graphs_cpu.py", "--steps", "2", "--reps", "1", "--check", "3",
                        "--out", out, graph]
            text = io.StringIO()
            try:
                with redirect_stdout(text):
                    hf_graphs_cpu.main()
            finally:
                sys.argv = argv
            with open(out) as f:
                result = json.load(f)
        row = result["graphs"][0]
        self.assertTrue(row["tokens_equal"])
        self.assertEqual((row["dtype"], row["s_max"]), ("bfloat16", 64))
        for key in ("ms", "copy_back_ms", "floor_ms", "bytes"):
            self.assertGreater(row[key], 0, key)
        self.assertIn("| llama_bf16.json | bfloat16 | 64 |", text.getvalue())


if __name__ == "__main__":
    unittest.main()
