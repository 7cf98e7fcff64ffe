"""bench/hf_ab.py without a GPU (the runs are on the GPU machine): how arms and models are read,
that the arms take turns within each process round, and the table it prints."""
import argparse
import contextlib
import io
import os
import sys
import unittest

from harness import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))

import hf_ab  # noqa: E402


class Arguments(unittest.TestCase):
    def test_an_arm_is_a_name_a_build_and_its_settings(self):
        self.assertEqual(hf_ab.parse_arm("main=build-a"), ("main", "build-a", {}))
        self.assertEqual(hf_ab.parse_arm("c=b:INPLACE_CUDA_GEMV=columns,X=1"),
                         ("c", "b", {"INPLACE_CUDA_GEMV": "columns", "X": "1"}))

    def test_a_malformed_arm_or_model_is_refused_naming_it(self):
        for bad in ("main", "=b", "main=", "m=b:X"):
            with self.assertRaises(argparse.ArgumentTypeError):
                hf_ab.parse_arm(bad)
        for bad in ("llama", "llama:", ":medium", ","):
            with self.assertRaises(argparse.ArgumentTypeError) as e:
                hf_ab.parse_models(bad)
            self.assertIn(repr(bad), str(e.exception))

    def test_arm_names_must_differ(self):
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            hf_ab.parse_args(["--arm", "a=x", "--arm", "a=y"])
        a = hf_ab.parse_args(["--arm", "a=x", "--arm", "b=y", "--models", "gpt2:medium"])
        self.assertEqual(a.models, [("gpt2", "medium")])
        self.assertEqual(a.processes, 2)


class Runs(unittest.TestCase):
    def test_the_arms_take_turns_and_the_table_compares_with_the_first(self):
        calls = []

        def fake(arm, model, shape, rounds):
            calls.append((arm[0], model, shape, rounds))
            base = {"main": 0.300, "new": 0.294}[arm[0]]
            return [base, base + 0.0002][:rounds], "FakeGPU"

        arms = [("main", "a", {}), ("new", "b", {"X": "1"})]
        results, device = hf_ab.collect(arms, [("llama", "medium")], 2, 2, run=fake,
                                        log=lambda *_: None)
        self.assertEqual(device, "FakeGPU")
        self.assertEqual([c[0] for c in calls], ["main", "new", "main", "new"])
        got = results[("llama", "medium")]["new"]
        self.assertEqual(len(got), 2)
        for proc in got:
            self.assertEqual([round(m, 6) for m in proc], [0.294, 0.2942])
        text = hf_ab.table(results, ["main", "new"])
        self.assertIn("| llama medium | 0.3000 / 0.3002, 0.3000 / 0.3002 ms |", text)
        self.assertIn("(-2.0%) ms |", text)


if __name__ == "__main__":
    unittest.main()
