"""Exports into one folder share its constants file (issue 30: two exports into one folder
overwrote the shared weights file silently, so the first graph ran on the second's weights).
Two graphs of one module share the file; a graph of another module whose keys hold other
values is refused naming the key and the graph that reads them; exporting a graph again
rewrites its own values. Each graph then runs in `inplace exec` equal to its module in eager.
"""
import os
import subprocess
import tempfile
import unittest

from harness import torch

if torch is not None:
    import inplace
    from inplace.safetensors_io import read_safetensors, write_safetensors


if torch is not None:
    class Affine(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(3, 3))
            self.bias = torch.nn.Parameter(torch.randn(3))

        def forward(self, x):
            return x @ self.weight.t() + self.bias

    class Wrapped(torch.nn.Module):  # keys inner.weight, inner.bias
        def __init__(self):
            super().__init__()
            self.inner = Affine()

        def forward(self, x):
            return self.inner(x) * 2


def x_of(seed):
    return torch.randn(1, 3, generator=torch.Generator().manual_seed(seed))


@unittest.skipIf(torch is None, "torch is not installed")
class SharedConstantsFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.weights = os.path.join(self.dir.name, "weights.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def export(self, module, name, x=None):
        return inplace.export(module, (x_of(0) if x is None else x,),
                              os.path.join(self.dir.name, name))

    def assert_runs_like(self, graph, module, seed):
        """`inplace exec --mode compiled` of `graph` equals `module` in eager (when built)."""
        binary = os.environ.get("INPLACE_BIN")
        if not binary:
            return
        x = x_of(seed)
        inputs = os.path.join(self.dir.name, "in.safetensors")
        out = os.path.join(self.dir.name, "out.safetensors")
        write_safetensors(inputs, {"x": x})
        r = subprocess.run([binary, "exec", graph, "--mode", "compiled", "--inputs", inputs,
                            "--out", out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with torch.no_grad():
            want = module(x)
        self.assertTrue(torch.allclose(read_safetensors(out)["output.0"], want, atol=1e-6),
                        (graph, read_safetensors(out)["output.0"], want))

    def test_another_modules_graph_is_refused_and_the_first_keeps_its_weights(self):
        torch.manual_seed(0)
        a, b = Affine(), Affine()
        graph_a = self.export(a, "a.json")
        with self.assertRaisesRegex(ValueError, r"'weight' with other values, read by a\.json"):
            self.export(b, "b.json")
        self.assertTrue(torch.equal(read_safetensors(self.weights)["weight"], a.weight.detach()))
        self.assert_runs_like(graph_a, a, 1)
        with torch.no_grad():
            a.weight.mul_(-2.0)  # exported again: its own values are rewritten
        self.export(a, "a.json")
        self.assertTrue(torch.equal(read_safetensors(self.weights)["weight"], a.weight.detach()))
        self.assert_runs_like(graph_a, a, 2)

    def test_two_graphs_of_one_module_share_the_file(self):
        torch.manual_seed(1)
        m = Affine()
        one = self.export(m, "one.json")
        self.export(m, "two.json", torch.randn(4, 3))
        self.assertEqual(sorted(read_safetensors(self.weights)), ["bias", "weight"])
        self.assert_runs_like(one, m, 3)

    def test_disjoint_keys_are_kept_for_every_graph(self):
        torch.manual_seed(2)
        a, b = Affine(), Wrapped()
        graph_a, graph_b = self.export(a, "a.json"), self.export(b, "b.json")
        self.assertEqual(sorted(read_safetensors(self.weights)),
                         ["bias", "inner.bias", "inner.weight", "weight"])
        self.assert_runs_like(graph_a, a, 4)
        self.assert_runs_like(graph_b, b, 5)


if __name__ == "__main__":
    unittest.main()
