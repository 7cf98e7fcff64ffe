"""bench/hf_kernel_trace.py without a GPU (the traces are taken on the GPU machine): the summary
of a step's launches by their role in a layer, on a sequence shaped like the Llama-3.2-1B
shape's (a preamble, a first layer with one launch more, the LM head and the step's end after
the last layer)."""
import contextlib
import io
import os
import sys
import unittest

from harness import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))

import hf_kernel_trace  # noqa: E402


def row(name, us, delta):
    return {"kernel": name, "us": us, "end_delta_us": delta}


def decoder_sequence(layers):
    seq = [row("copy", 2, 2), row("scalars", 6, 20), row("embedding", 9, 7), row("rotary", 11, 3)]
    for layer in range(layers):
        seq.append(row("stream qkv", 22, 8 + layer % 2))  # 8 and 9: mean 8.5
        if layer == 0:
            seq.append(row("positions", 21, 3))
        seq += [row("decode_attention", 16, 6), row("columns o_proj", 10, 3.5),
                row("stream gate_up", 27, 25), row("stream down", 20, 12)]
    return seq + [row("stream qkv", 190, 178), row("publish", 24, 1), row("Memcpy", 1, 4)]


class LayerSummary(unittest.TestCase):
    def test_layers_are_averaged_from_attention_to_attention(self):
        before, per, after, layers = hf_kernel_trace.summarize_layers(decoder_sequence(16))
        self.assertEqual(layers, 15)
        self.assertEqual([r["kernel"] for r in per], ["decode_attention", "columns o_proj",
                                                      "stream gate_up", "stream down",
                                                      "stream qkv"])
        self.assertAlmostEqual(per[4]["end_delta_us"], (7 * 8 + 8 * 9) / 15)  # layers 1..15
        self.assertAlmostEqual(per[2]["end_delta_us"], 25)
        # The first layer's q/k/v and its extra launch stay before; the LM head after.
        self.assertEqual([r["kernel"] for r in before][-2:], ["stream qkv", "positions"])
        self.assertEqual([r["kernel"] for r in after],
                         ["decode_attention", "columns o_proj", "stream gate_up", "stream down",
                          "stream qkv", "publish", "Memcpy"])
        self.assertEqual(after[4]["end_delta_us"], 178)

    def test_without_two_layers_nothing_is_averaged(self):
        seq = decoder_sequence(1)
        self.assertEqual(hf_kernel_trace.summarize_layers(seq), (seq, [], [], 0))
        self.assertEqual(hf_kernel_trace.summarize_layers([]), ([], [], [], 0))

    def test_the_printed_summary_names_each_role(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            hf_kernel_trace.print_layers(decoder_sequence(3))
        text = out.getvalue()
        self.assertIn("2 layers of 5 launches averaged", text)
        self.assertIn("stream gate_up", text)
        self.assertIn("a layer: ", text)


if __name__ == "__main__":
    unittest.main()
