"""scripts/hf_generate_check.py on the cpu without transformers: a module of the form of
transformers' exportable static-cache module (forward(input_ids, cache_position) -> logits, the
key/value caches as buffers) goes through the script's own check(): compiled as a program
(prefill dynamic up to the prompt length, decode), generate in one call, the saved program
loaded again and `inplace generate`, each against greedy steps of the module in PyTorch.

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import os
import sys
import unittest

from compile_harness import requires_extension
from harness import BIN, REPO, torch

if torch is not None:
    import torch.nn as nn
    from test_programs import D, S_MAX, Decoder

    sys.path.insert(0, os.path.join(REPO, "scripts"))
    import hf_generate_check as script

    VOCAB = 13

    class StaticCacheLM(nn.Module):
        """input_ids [1, T], cache_position [T] -> logits [1, T, VOCAB], caches as buffers."""

        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(VOCAB, D)
            self.model = Decoder()
            self.model.head = nn.Linear(D, VOCAB)

        def forward(self, input_ids=None, cache_position=None):
            return self.model(self.embed_tokens(input_ids), cache_position)


@requires_extension
class HfGenerateCheckOnCpu(unittest.TestCase):
    def test_check_passes_against_eager_greedy(self):
        torch.manual_seed(3)
        lm = StaticCacheLM().eval()
        prompt, new = [1, 5, 2, 9, 4, 7, 3, 11], S_MAX - 8
        want = script.greedy_eager(lm, prompt, new)
        binary = BIN if os.path.exists(BIN) else None
        r = script.check(script.Steps(lm), prompt, new, want, "cpu", step_s=None, binary=binary)
        self.assertEqual(r["failures"], [], r)
        self.assertTrue(r["tokens_equal"] and r["loaded_tokens_equal"], r)
        if binary:
            self.assertTrue(r["cli_tokens_equal"], r)
        self.assertEqual(r["input_names"]["prefill"][:2], ["input_ids", "cache_position"])
        self.assertGreater(r["tokens_per_second"], 0)

    def test_a_wrong_reference_and_a_slow_floor_fail(self):
        torch.manual_seed(3)
        lm = StaticCacheLM().eval()
        prompt, new = [1, 5, 2, 9], 4
        want = script.greedy_eager(lm, prompt, new)
        wrong = want[:2] + [(want[2] + 1) % VOCAB] + want[3:]
        r = script.check(script.Steps(lm), prompt, new, wrong, "cpu", step_s=1e-9)
        self.assertFalse(r["tokens_equal"])
        self.assertEqual(r["first_difference"], 2)
        self.assertFalse(r["speed_ok"])
        self.assertEqual(len(r["failures"]), 3, r["failures"])  # generate, loaded, speed


if __name__ == "__main__":
    unittest.main()
