"""bench/hf_bitwise.py without a GPU (the dumps are made on the GPU machine): the positions it
walks, how two dumps are compared and reported, and its exit status, with dumps written here."""
import argparse
import contextlib
import io
import os
import sys
import unittest

from harness import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))

import hf_bitwise  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover - the suite runs with torch
    torch = None


def fake_dump(positions, shift=None, cache_shift=0.0):
    """Logits a position (row p holds p..p+3), and two caches; `shift` moves position shift's
    logits by 1/1024, `cache_shift` the value cache."""
    logits = []
    for p in positions:
        row = torch.arange(4, dtype=torch.float32).reshape(1, 1, 4) + p
        if p == shift:
            row = row + 1.0 / 1024
        logits.append(row)
    state = {"key_cache_0": torch.ones(2, 3), "value_cache_0": torch.zeros(2, 3) + cache_shift}
    return {"positions": list(positions), "logits": logits, "state": state, "device": "FakeGPU"}


class Arguments(unittest.TestCase):
    def test_positions_reach_the_last_slot_and_never_past_it(self):
        self.assertEqual(hf_bitwise.positions_for(4096)[-1], 4095)
        self.assertEqual(hf_bitwise.positions_for(16384)[-1], 16383)
        self.assertTrue(all(p < 100 for p in hf_bitwise.positions_for(100)))
        self.assertIn(64, hf_bitwise.positions_for(100))  # a split's edge

    def test_two_distinct_arms_are_needed(self):
        with contextlib.redirect_stderr(io.StringIO()):
            for argv in (["--arm", "a=x"], ["--arm", "a=x", "--arm", "a=y"]):
                with self.assertRaises(SystemExit):
                    hf_bitwise.parse_args(argv)
        a = hf_bitwise.parse_args(["--arm", "a=x", "--arm", "b=y:X=1", "--models", "gpt2:medium"])
        self.assertEqual(a.arm[1], ("b", "y", {"X": "1"}))
        self.assertEqual(a.models, [("gpt2", "medium")])
        with self.assertRaises(argparse.ArgumentTypeError):
            hf_bitwise.hf_ab.parse_arm("b=")


@unittest.skipIf(torch is None, "torch is not installed")
class Comparison(unittest.TestCase):
    def test_equal_dumps_are_reported_bitwise_equal(self):
        p = hf_bitwise.positions_for(300)
        d = hf_bitwise.compare(fake_dump(p), fake_dump(p))
        self.assertTrue(d["equal"])
        self.assertIn("bitwise equal (%d positions, 2 state tensors)" % len(p),
                      hf_bitwise.summary("llama", "medium", "new", "main", d))

    def test_a_moved_logit_and_cache_are_named(self):
        p = hf_bitwise.positions_for(300)
        d = hf_bitwise.compare(fake_dump(p), fake_dump(p, shift=200, cache_shift=0.5))
        self.assertFalse(d["equal"])
        self.assertEqual([row[0] for row in d["positions"] if row[1] > 0], [200])
        self.assertTrue(all(row[2] for row in d["positions"]))  # argmax unmoved
        text = hf_bitwise.summary("llama", "medium", "new", "main", d)
        self.assertIn("logits differ at 1 of %d positions (worst 0.0009766" % len(p), text)
        self.assertIn("1 of 2 state tensors differ (worst value_cache_0 0.5)", text)

    def test_dumps_of_other_positions_or_state_are_refused(self):
        with self.assertRaises(ValueError):
            hf_bitwise.compare(fake_dump([0, 1]), fake_dump([0, 2]))
        other = fake_dump([0, 1])
        other["state"]["extra"] = torch.zeros(1)
        with self.assertRaises(ValueError) as e:
            hf_bitwise.compare(fake_dump([0, 1]), other)
        self.assertIn("extra", str(e.exception))

    def test_the_exit_status_fails_on_a_difference_unless_allowed(self):
        shifts = {"main": None, "same": None, "moved": 64}

        def fake_run(arm, model, shape, s_max, out):
            torch.save(fake_dump(hf_bitwise.positions_for(s_max), shift=shifts[arm[0]]), out)

        saved = hf_bitwise.run_dump
        hf_bitwise.run_dump = fake_run
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                self.assertEqual(hf_bitwise.main(["--arm", "main=a", "--arm", "same=b"]), 0)
                self.assertEqual(hf_bitwise.main(["--arm", "main=a", "--arm", "moved=b"]), 1)
                self.assertEqual(hf_bitwise.main(["--arm", "main=a", "--arm", "moved=b",
                                                  "--allow-diff"]), 0)
        finally:
            hf_bitwise.run_dump = saved
        self.assertIn("llama medium: same against main: bitwise equal", out.getvalue())
        self.assertIn("llama medium: moved against main: logits differ at 1 of", out.getvalue())


if __name__ == "__main__":
    unittest.main()
