"""Compile once, run on every value — against PyTorch itself.

Each program is exported once with inplace.export_graph, compiled once into a program file
(`inplace compile -o`), and that one file is then run (`inplace exec PROGRAM`) on fresh values
of every input: decode positions 0..15, ring-buffer steps, indices across their range
(negatives included), prompt lengths 1..max. Every output and the final contents of every input
are compared with what PyTorch eager computes on the same values; where PyTorch raises, the
engine must refuse too.

Run: /usr/bin/python3 -m unittest discover -s python/tests
The binary is $INPLACE_BIN, default build/inplace under the repository root.
"""
import json
import os
import subprocess
import tempfile
import unittest

from harness import BIN, torch

if torch is not None:
    import torch.nn as nn
    import inplace


def run(*args, check=True):
    proc = subprocess.run([BIN, *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError("`inplace %s` exited %d: %s" % (" ".join(args), proc.returncode,
                                                            proc.stderr.strip()))
    return proc


@unittest.skipIf(torch is None and not os.environ.get("INPLACE_REQUIRE_TORCH"), "torch missing")
@unittest.skipIf(not os.path.exists(BIN), "inplace binary missing")
class CompileOnceRunOnEveryValue(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="inplace_rv_")
        self.dir = self.tmp.name
        torch.manual_seed(0)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def compile(self, module, example, extra=()):
        """Exports `module` on `example` and compiles one program file; returns (path, names)."""
        r = inplace.export_graph(module, tuple(t.clone() for t in example), self.path("graph.json"))
        inplace.write_inputs(self.path("example.safetensors"), r.inputs_dict(example))
        run("compile", self.path("graph.json"), "--inputs", self.path("example.safetensors"),
            "-o", self.path("engine.inplace"), *extra)
        return self.path("engine.inplace"), r.input_names

    def call(self, engine, names, values):
        """Runs the engine once; returns (outputs, final inputs) or raises AssertionError."""
        inplace.write_inputs(self.path("in.safetensors"), dict(zip(names, values)))
        proc = run("exec", engine, "--inputs", self.path("in.safetensors"), "--out",
                   self.path("out.safetensors"), check=False)
        if proc.returncode != 0:
            return None, proc.stderr
        res = inplace.read_outputs(self.path("out.safetensors"))
        outs = [res["output.%d" % i] for i in range(len(res)) if "output.%d" % i in res]
        return outs, {n: res["input." + n] for n in names}

    def check_call(self, module, engine, names, values, atol=1e-5):
        """One call: the engine against PyTorch on clones of the same values."""
        ref_in = [v.clone() for v in values]
        try:
            ref = module(*ref_in)
            ref_error = None
        except (RuntimeError, IndexError, ValueError) as e:
            ref, ref_error = None, e
        outs, final = self.call(engine, names, values)
        if ref_error is not None:
            self.assertIsNone(outs, "PyTorch raised %r but the engine ran" % (ref_error,))
            return False
        self.assertIsNotNone(outs, "PyTorch ran but the engine refused: %s" % (final,))
        ref = ref if isinstance(ref, tuple) else (ref,)
        self.assertEqual(len(outs), len(ref))
        for i, (o, r) in enumerate(zip(outs, ref)):
            r = torch.as_tensor(r)
            self.assertEqual(tuple(o.shape), tuple(r.shape), "output %d shape" % i)
            self.assertTrue(torch.allclose(o.to(r.dtype), r, atol=atol, rtol=1e-5),
                            "output %d: %s vs %s" % (i, o, r))
        for n, r in zip(names, ref_in):
            self.assertTrue(torch.allclose(final[n].to(r.dtype), r, atol=atol), "input " + n)
        return True

    def test_decode_loop_over_sixteen_positions_with_one_engine(self):
        class Decode(nn.Module):
            def forward(self, q, k, v, kc, vc, pos):
                kc.index_copy_(2, pos, k)
                vc.index_copy_(2, pos, v)
                ks = kc[:, :, :pos[0] + 1]
                vs = vc[:, :, :pos[0] + 1]
                return torch.softmax(q @ ks.mT, -1) @ vs

        m = Decode()
        row, cache = (1, 2, 1, 4), (1, 2, 16, 4)
        ex = (torch.randn(row), torch.randn(row), torch.randn(row), torch.zeros(cache),
              torch.zeros(cache), torch.tensor([5]))
        engine, names = self.compile(m, ex)
        kc, vc = torch.zeros(cache), torch.zeros(cache)
        ekc, evc = kc.clone(), vc.clone()
        for pos in range(16):
            q, k, v = torch.randn(row), torch.randn(row), torch.randn(row)
            outs, final = self.call(engine, names, [q, k, v, kc, vc, torch.tensor([pos])])
            self.assertIsNotNone(outs, final)
            ref = m(q, k, v, ekc, evc, torch.tensor([pos]))
            self.assertEqual(tuple(outs[0].shape), tuple(ref.shape))
            self.assertTrue(torch.allclose(outs[0], ref, atol=1e-5), "position %d" % pos)
            kc, vc = final["kc"], final["vc"]
        self.assertTrue(torch.allclose(kc, ekc) and torch.allclose(vc, evc))
        # Past the end PyTorch's index_copy_ raises: so does the engine, before any write.
        self.assertFalse(self.check_call(m, engine, names, [q, k, v, kc, vc, torch.tensor([16])]))

    def test_ring_buffer_at_t_mod_n(self):
        class Ring(nn.Module):
            def forward(self, buf, x, t):
                buf[:, t % 4] = x
                return buf.sum(1)

        m = Ring()
        engine, names = self.compile(m, (torch.zeros(3, 4), torch.randn(3), torch.tensor(5)))
        for t in [0, 1, 2, 3, 4, 7, 1001, -1, -6]:
            self.assertTrue(self.check_call(m, engine, names,
                                            [torch.randn(3, 4), torch.randn(3), torch.tensor(t)]))

    def test_index_slice_and_narrow_at_a_runtime_value(self):
        class Reads(nn.Module):
            def forward(self, x, n):
                return x[n] * 2, x[:, :n].sum(1), x.narrow(1, n, 1) + 1

        m = Reads()
        engine, names = self.compile(m, (torch.randn(6, 6), torch.tensor(2)))
        accepted = 0
        for n in [0, 1, 5, -1, -6, 6, -7, 9]:
            accepted += self.check_call(m, engine, names, [torch.randn(6, 6), torch.tensor(n)])
        self.assertEqual(accepted, 5)  # 6, -7 and 9 are out of range for x[n] and narrow

    def test_write_through_narrow_at_a_position(self):
        class NarrowWrite(nn.Module):
            def forward(self, cache, k, pos):
                cache.narrow(2, pos, 1).copy_(k)
                return cache * 1

        m = NarrowWrite()
        engine, names = self.compile(
            m, (torch.zeros(1, 2, 8, 4), torch.randn(1, 2, 1, 4), torch.tensor(3)))
        accepted = 0
        for p in [0, 3, 7, -1, -8, 8, -9]:
            accepted += self.check_call(
                m, engine, names, [torch.randn(1, 2, 8, 4), torch.randn(1, 2, 1, 4), torch.tensor(p)])
        self.assertEqual(accepted, 5)

    def test_arange_sized_by_an_input(self):
        # torch.fx cannot trace arange(tensor); the graph is written by hand.
        doc = {"format": "inplace.graph", "version": 1, "name": "arange_n", "constants": {},
               "nodes": [
                   {"name": "n", "op": "placeholder", "target": "n", "args": [], "kwargs": {},
                    "meta": {"shape": [], "dtype": "int64"}},
                   {"name": "arange", "op": "call_function", "target": "torch.arange",
                    "args": [{"node": "n"}], "kwargs": {}},
                   {"name": "output", "op": "output", "target": "output",
                    "args": [{"tuple": [{"node": "arange"}]}], "kwargs": {}}]}
        with open(self.path("graph.json"), "w") as f:
            json.dump(doc, f)
        proc = run("compile", self.path("graph.json"), "-o", self.path("e.inplace"), check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("node 'arange'", proc.stderr)
        self.assertIn("--value-range", proc.stderr)
        run("compile", self.path("graph.json"), "-o", self.path("e.inplace"),
            "--value-range", "n:0:100")
        for n in [0, 1, 7, 100]:
            outs, final = self.call(self.path("e.inplace"), ["n"], [torch.tensor(n)])
            self.assertIsNotNone(outs, final)
            self.assertTrue(torch.equal(outs[0], torch.arange(n)), "n = %d" % n)
        outs, err = self.call(self.path("e.inplace"), ["n"], [torch.tensor(101)])
        self.assertIsNone(outs)
        self.assertIn("outside its declared range", err)

    def test_prompt_of_every_length_through_one_dynamic_engine(self):
        class Prefill(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(4, 3), requires_grad=False)

            def forward(self, x):
                h = x @ self.w
                return torch.softmax(h, -1), h.sum(0)

        m = Prefill()
        engine, names = self.compile(m, (torch.randn(5, 4),), extra=("--dynamic", "x:0:8"))
        for length in range(1, 9):
            self.assertTrue(self.check_call(m, engine, names, [torch.randn(length, 4)]))
        outs, err = self.call(engine, names, [torch.randn(9, 4)])
        self.assertIsNone(outs)
        self.assertIn("'x'", err)


if __name__ == "__main__":
    unittest.main()
