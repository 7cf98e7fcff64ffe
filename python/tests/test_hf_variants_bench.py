"""bench/hf_variants.py without transformers or a GPU (the runs are on the GPU machine): how a
variant is read from the command line, and that a variant's settings are in the environment only
while its engine is compiled and first called."""
import argparse
import contextlib
import io
import os
import sys
import unittest

from harness import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))

import hf_variants  # noqa: E402


class VariantArguments(unittest.TestCase):
    def test_a_variant_is_a_name_and_its_settings(self):
        self.assertEqual(hf_variants.parse_variant("base:"), ("base", {}))
        self.assertEqual(hf_variants.parse_variant("p:INPLACE_PREPARE_WEIGHTS=1,X=a=b"),
                         ("p", {"INPLACE_PREPARE_WEIGHTS": "1", "X": "a=b"}))

    def test_a_malformed_variant_is_refused_naming_it(self):
        for bad in ("base", ":X=1", "p:X", "p:=1"):
            with self.assertRaises(argparse.ArgumentTypeError) as e:
                hf_variants.parse_variant(bad)
            self.assertIn(repr(bad) if bad in ("base", ":X=1") else "VAR=VALUE", str(e.exception))

    def test_the_command_line_needs_a_variant(self):
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            hf_variants.parse_args(["--model", "gpt2"])
        a = hf_variants.parse_args(["--model", "gpt2", "--variant", "a:", "--variant", "b:Y=2"])
        self.assertEqual([n for n, _ in a.variant], ["a", "b"])
        self.assertEqual(a.rounds, 2)


class VariantEnvironment(unittest.TestCase):
    def test_settings_hold_only_inside_the_call(self):
        os.environ["HF_VARIANTS_KEPT"] = "before"
        os.environ.pop("HF_VARIANTS_NEW", None)
        seen = hf_variants.with_env({"HF_VARIANTS_KEPT": "during", "HF_VARIANTS_NEW": "1"},
                                    lambda: (os.environ["HF_VARIANTS_KEPT"],
                                             os.environ["HF_VARIANTS_NEW"]))
        self.assertEqual(seen, ("during", "1"))
        self.assertEqual(os.environ["HF_VARIANTS_KEPT"], "before")
        self.assertNotIn("HF_VARIANTS_NEW", os.environ)

    def test_settings_are_restored_when_the_call_raises(self):
        os.environ.pop("HF_VARIANTS_NEW", None)

        def fail():
            raise RuntimeError("compile failed")
        with self.assertRaises(RuntimeError):
            hf_variants.with_env({"HF_VARIANTS_NEW": "1"}, fail)
        self.assertNotIn("HF_VARIANTS_NEW", os.environ)


if __name__ == "__main__":
    unittest.main()
