"""Prepared weights: a module whose products read weights stored [in, out] (GPT-2's Conv1D,
`addmm(b, x, W)`) compiles on the cpu into products over [out, in] copies the engine makes when it
binds the weights. Compared with eager PyTorch after every kind of change to a weight: replaced,
written in place by torch (its version counter moves), written where torch does not count it
(`.data`, then `weights_written()`), loaded by load_state_dict; the cache written in place stays
the caller's tensor; `prepare_weights=False` reads the weights as they lie. On the GPU (skipped
elsewhere, saying why) a bf16 block with GPT-2's LayerNorm before a Conv1D product and its GELU
after: the products over the copies take the norm and the GELU into their steps.
"""
import os
import tempfile
import unittest

from compile_harness import EXT_ERROR, CompileCase, requires_extension, torch

CUDA_SKIP = None
if torch is None or EXT_ERROR:
    CUDA_SKIP = "torch or the extension missing"
elif not torch.cuda.is_available():
    CUDA_SKIP = "torch has no CUDA device here"

if torch is not None:
    import torch.nn as nn
    import inplace


if torch is not None:
    class Conv1D(nn.Module):
        """GPT-2's Conv1D: a linear layer whose weight is stored [in, out]."""

        def __init__(self, nf, nx):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(nx, nf) * 0.2)
            self.bias = nn.Parameter(torch.randn(nf) * 0.2)

        def forward(self, x):
            shape = x.shape[:-1] + (self.weight.shape[1],)
            return torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight).view(shape)

    class Block(nn.Module):
        """Two Conv1D products with a GELU between, and a cache row written at a position."""

        def __init__(self, d=32, hidden=96, slots=8):
            super().__init__()
            self.fc = Conv1D(hidden, d)
            self.proj = Conv1D(d, hidden)
            self.register_buffer("cache", torch.zeros(slots, d))

        def forward(self, x, pos):
            h = self.proj(torch.nn.functional.gelu(self.fc(x), approximate="tanh"))
            self.cache.index_copy_(0, pos, h.view(1, -1))
            return x + h

    class NormBlock(Block):
        """GPT-2's MLP: a LayerNorm, c_fc, GELU-tanh, c_proj, the residual."""

        def __init__(self, d=64, hidden=256, slots=8):
            super().__init__(d, hidden, slots)
            self.ln = nn.LayerNorm(d)

        def forward(self, x, pos):
            h = self.proj(torch.nn.functional.gelu(self.fc(self.ln(x)), approximate="tanh"))
            self.cache.index_copy_(0, pos, h.view(1, -1))
            return x + h


@requires_extension
class PreparedWeights(CompileCase):
    def setUp(self):
        torch.manual_seed(0)
        self.eager = Block().eval()
        self.mine = Block().eval()
        self.mine.load_state_dict(self.eager.state_dict())

    def compile(self, **kw):
        return inplace.compile(self.mine, (torch.randn(1, 1, 32), torch.tensor([0])), **kw)

    def check(self, compiled, pos, what):
        x = torch.randn(1, 1, 32)
        p = torch.tensor([pos])
        with torch.no_grad():
            want = self.eager(x, p)
            got = compiled(x, p)
        self.assertSame(got, want, what + ": output")
        self.assertSame(self.mine.cache, self.eager.cache, what + ": cache")

    def both(self, f):
        with torch.no_grad():
            f(self.eager)
            f(self.mine)

    def test_the_products_read_prepared_copies(self):
        compiled = self.compile()
        self.assertIn("prepared inputs", str(compiled.plan))
        self.assertEqual(str(compiled.plan).count("= permute("), 2)
        ptr = self.mine.cache.data_ptr()
        for pos in range(8):
            self.check(compiled, pos, "pos %d" % pos)
        self.assertEqual(self.mine.cache.data_ptr(), ptr)
        self.assertEqual(compiled.stats()["prepared_inputs"], 2)  # once each, at the first call

    def test_every_change_of_a_weight_reaches_the_copy(self):
        compiled = self.compile()
        self.check(compiled, 0, "first call")
        # Written in place by torch: its version counter moves, the next call sees it.
        self.both(lambda m: m.fc.weight.mul_(1.5))
        self.check(compiled, 1, "mul_")
        self.assertEqual(compiled.stats()["prepared_inputs"], 3)
        # load_state_dict copies into the parameters (copy_: counted).
        new = {k: (v * 0.5 if k.endswith("weight") else v)
               for k, v in self.eager.state_dict().items()}
        self.eager.load_state_dict(new)
        self.mine.load_state_dict(new)
        self.check(compiled, 2, "load_state_dict")
        # Replaced: bound anew (StateWatch), copy made again.
        w = torch.randn(96, 32) * 0.1
        self.eager.proj.weight = nn.Parameter(w.clone())
        self.mine.proj.weight = nn.Parameter(w.clone())
        self.check(compiled, 3, "replaced")
        # Through .data torch counts nothing: the caller says so.
        self.both(lambda m: m.fc.weight.data.add_(0.25))
        compiled.weights_written()
        self.check(compiled, 4, ".data, then weights_written()")
        self.both(lambda m: m.proj.weight.data.mul_(-1))
        compiled.weights_written("proj.weight")
        self.check(compiled, 5, ".data, then weights_written(target)")
        with self.assertRaisesRegex(inplace.InputError, "no state 'nope'"):
            compiled.weights_written("nope")

    def test_a_saved_program_stores_the_copies(self):
        compiled = self.compile()
        self.check(compiled, 0, "before save")
        with tempfile.TemporaryDirectory() as d:
            path = inplace.save(compiled, os.path.join(d, "m.inplace"))
            program = inplace.load_program(path)
            self.assertEqual(program._native.num_weights, 4)  # each weight once: the copies
            loaded = inplace.load(path)
            self.assertNotIn("prepared inputs", str(loaded.plan))
            for pos in (1, 6):
                x, p = torch.randn(1, 1, 32), torch.tensor([pos])
                with torch.no_grad():
                    want = self.eager(x, p)
                self.assertSame(loaded(x, p), want, "loaded, pos %d" % pos)
                self.assertSame(loaded.get_buffer("cache"), self.eager.cache, "loaded cache")

    def test_weights_as_they_lie(self):
        compiled = self.compile(prepare_weights=False)
        self.assertNotIn("prepared inputs", str(compiled.plan))
        for pos in (0, 7):
            self.check(compiled, pos, "pos %d" % pos)
        self.both(lambda m: m.fc.weight.data.add_(0.25))  # read where it lies: nothing to say
        self.check(compiled, 3, ".data")
        with self.assertRaisesRegex(TypeError, "prepare_weights"):
            self.compile(prepare_weights="yes")


@requires_extension
class VersionCounters(CompileCase):
    """PreparedWatch reads torch's version counters raw where the extension calibrated them (the
    same answers as ``t._version``), else through the attribute: each reports what moved."""

    def watch_reports(self, watch_class_layout):
        from inplace import prepared_watch
        saved = list(prepared_watch._layout)
        prepared_watch._layout[:] = watch_class_layout
        try:
            state = {"a": nn.Parameter(torch.randn(3, 4)), "b": torch.zeros(5), "c": torch.ones(2)}
            written = []
            watch = prepared_watch.PreparedWatch(state, ["a", "b", "c"], written.append)
            watch.check()
            self.assertEqual(written, [])
            with torch.no_grad():
                state["a"].mul_(2)      # the parameter
                state["b"][1:3].add_(1)  # a view of it: the same counter
            watch.check()
            self.assertEqual(written, ["a", "b"])
            watch.check()
            self.assertEqual(written, ["a", "b"])  # seen once
            state["c"] = torch.ones(2)  # replaced: bound anew elsewhere, not reported written
            watch.check()
            state["c"].add_(1)
            watch.check()
            self.assertEqual(written, ["a", "b", "c"])
            return watch.raw_tensors()
        finally:
            prepared_watch._layout[:] = saved

    def test_raw_where_calibrated(self):
        from inplace import prepared_watch
        prepared_watch._native_versions()
        native, layout = prepared_watch._layout[0]
        raw = self.watch_reports([(native, layout)])
        if layout is not None and layout.ok:
            self.assertEqual(raw, 3)

    def test_the_attribute_elsewhere(self):
        self.assertIsNone(self.watch_reports([(None, None)]))


@unittest.skipIf(CUDA_SKIP is not None, CUDA_SKIP or "")
@requires_extension
class PreparedWeightsCuda(CompileCase):
    rtol = 2e-2
    atol = 2e-2

    def setUp(self):
        torch.manual_seed(0)
        dev = torch.device("cuda:0")
        self.eager = NormBlock().eval().to(dev, torch.bfloat16)
        self.mine = NormBlock().eval().to(dev, torch.bfloat16)
        self.mine.load_state_dict(self.eager.state_dict())
        self.dev = dev

    def check(self, compiled, pos, what):
        x = torch.randn(1, 1, 64, device=self.dev, dtype=torch.bfloat16)
        p = torch.tensor([pos], device=self.dev)
        with torch.no_grad():
            want = self.eager(x, p)
            got = compiled(x, p)
        self.assertSame(got, want, what + ": output")
        self.assertSame(self.mine.cache, self.eager.cache, what + ": cache")

    def test_the_norm_and_the_gelu_join_the_products(self):
        compiled = inplace.compile(self.mine, (torch.randn(1, 1, 64, device=self.dev,
                                                           dtype=torch.bfloat16),
                                               torch.tensor([0], device=self.dev)),
                                   prepare_weights=True)
        plan = str(compiled.plan)
        self.assertIn("prepared inputs", plan)
        self.assertIn("= rms_norm_linear(", plan)
        self.assertNotIn("= layer_norm(", plan)
        self.assertNotIn("= fused_pointwise(", plan)
        ptr = self.mine.cache.data_ptr()
        for pos in range(8):
            self.check(compiled, pos, "pos %d" % pos)
        with torch.no_grad():
            self.eager.fc.weight.mul_(1.5)
            self.mine.fc.weight.mul_(1.5)
        self.check(compiled, 3, "mul_")
        self.assertEqual(self.mine.cache.data_ptr(), ptr)
        self.assertEqual(compiled.stats()["prepared_inputs"], 3)


if __name__ == "__main__":
    unittest.main()
