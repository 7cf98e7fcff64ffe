"""The bf16 Hugging Face fixture derived from a float32 capture (tests/frontend/fixtures/hf/
derive_bf16.py): the derivation reproduces torch.export's bf16 captures of Llama and Mistral byte
for byte, and phi3_bf16.json is its output for phi3.json."""
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

    def test_phi3_bf16_is_the_derivation_of_phi3(self):
        with open(os.path.join(HF, "phi3_bf16.json"), "rb") as f:
            self.assertEqual(derived("phi3"), f.read())


if __name__ == "__main__":
    unittest.main()
