"""The bf16 Hugging Face fixture derived from a float32 capture (tests/frontend/fixtures/hf/
derive_bf16.py): the derivation reproduces torch.export's bf16 captures of Llama and Mistral byte
for byte, and phi3_bf16.json and qwen2_bf16.json are its outputs for phi3.json and qwen2.json."""
import os
import subprocess
import sys
import tempfile
import unittest

HF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "frontend",
                  "fixtures", "hf")


def derived(name):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, name + "_bf16.json")
        subprocess.run([sys.executable, os.path.join(HF, "derive_bf16.py"),
                        os.path.join(HF, name + ".json"), out], check=True)
        with open(out, "rb") as f:
            return f.read()


class DerivedBf16Fixtures(unittest.TestCase):
    def test_the_derivation_reproduces_the_captured_bf16_exports(self):
        for name in ("llama", "mistral"):
            with open(os.path.join(HF, name + "_bf16.json"), "rb") as f:
                self.assertEqual(derived(name), f.read(), name)

    def test_phi3_and_qwen2_bf16_are_their_derivations(self):
        for name in ("phi3", "qwen2"):
            with open(os.path.join(HF, name + "_bf16.json"), "rb") as f:
                self.assertEqual(derived(name), f.read(), name)

    def test_qwen2_rotary_frequencies_stay_float32(self):
        # Qwen2's .float() of inv_freq and of the positions before their product are not the
        # cast back to the input dtype; cos and sin are.
        import json
        with open(os.path.join(HF, "qwen2_bf16.json")) as f:
            nodes = {n["name"]: n for n in json.load(f)["nodes"]}
        self.assertEqual(nodes["matmul"]["meta"]["dtype"], "float32")
        for name in ("to_1", "to_4", "to_5"):
            self.assertEqual(nodes[name]["args"][1], {"dtype": "float32"}, name)
        for name in ("to_6", "to_7"):
            self.assertEqual(nodes[name]["args"][1], {"dtype": "bfloat16"}, name)
        self.assertEqual(nodes["p_model_model_layers_0_self_attn_q_proj_bias"]["meta"]["dtype"],
                         "bfloat16")


if __name__ == "__main__":
    unittest.main()
