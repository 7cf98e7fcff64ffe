"""Programs and sessions in process (inplace.compile_program) against eager PyTorch: the
two-layer decoder of test_programs.py with its key/value caches as buffers, prefill of any
prompt length and one-token decode compiled into one program; two sessions interleaved equal
two eager copies of the module; state read as torch tensors without a copy at stable
addresses (across calls and reset()); a saved and loaded program equal too.

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import copy
import os
import tempfile
import unittest

from compile_harness import requires_extension
from harness import torch

if torch is not None:
    import inplace
    from test_programs import D, P_MAX, Decoder

STEPS = 3



@requires_extension
class ProgramInProcess(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.model = Decoder().eval()
        cls.program = inplace.compile_program(cls.model, {
            "prefill": ((torch.randn(1, 5, D), torch.arange(5)),
                        {"x": {1: P_MAX}, "positions": {0: P_MAX}}),
            "decode": ((torch.randn(1, 1, D), torch.tensor([5])),),
        })

    def caches(self):
        return [n for n, _ in self.model.named_buffers() if n != "slots"]

    def replay(self, program):
        """Sessions a (prompt 1) and b (prompt 5) interleaved, decode steps, then a reset of a
        and a prompt of the maximum length: every output and state against eager copies."""
        sessions = {"a": program.new_session(), "b": program.new_session()}
        eager = {k: copy.deepcopy(self.model) for k in sessions}
        position = {}
        addresses = {k: {n: s.state(n).data_ptr() for n in self.caches()}
                     for k, s in sessions.items()}

        def check(session, method, x, positions):
            got = getattr(sessions[session], method)(x, positions)
            with torch.no_grad():
                want = eager[session](x, positions)
            self.assertEqual(got.shape, want.shape)
            self.assertTrue(torch.allclose(got, want, atol=1e-5), (session, method, x.shape))

        def prefill(session, length):
            check(session, "prefill", torch.randn(1, length, D), torch.arange(length))
            position[session] = length

        def decode(session):
            p = position[session]
            check(session, "decode", torch.randn(1, 1, D), torch.tensor([p]))
            position[session] = p + 1

        prefill("a", 1)
        prefill("b", 5)
        for _ in range(STEPS):
            decode("a")
            decode("b")
        sessions["a"].reset()
        for n in self.caches():
            self.assertEqual(sessions["a"].state(n).abs().sum().item(), 0.0, n)
        eager["a"] = copy.deepcopy(self.model)
        prefill("a", P_MAX)
        for _ in range(STEPS):
            decode("a")
        for k, s in sessions.items():
            for n, buf in eager[k].named_buffers():
                if n == "slots":
                    continue
                state = s.state(n)
                self.assertEqual(state.data_ptr(), addresses[k][n], "%s moved in %s" % (n, k))
                self.assertTrue(torch.allclose(state, buf, atol=1e-5), (k, n))

    def test_two_sessions_interleaved_equal_eager_copies(self):
        self.assertEqual(sorted(self.program.methods), ["decode", "prefill"])
        self.assertIn("layers.0.k_cache", self.program.state_names)
        self.assertNotIn("layers.0.k_cache_1", self.program.state_names)
        weights = sum(p.numel() * 4 for p in self.model.parameters())
        self.assertLessEqual(self.program.weight_bytes, weights + 4 * 64)  # once, not per method
        self.replay(self.program)

    def test_state_is_a_view_of_the_session(self):
        s = self.program.new_session()
        k = s.state("layers.0.k_cache")
        s.prefill(torch.randn(1, 3, D), torch.arange(3))
        self.assertNotEqual(k.abs().sum().item(), 0.0)  # the same memory: sees the call
        s.reset()
        self.assertEqual(k.abs().sum().item(), 0.0)
        del s  # the tensor keeps the memory alive
        self.assertEqual(k.shape, torch.Size([1, 2, 16, 4]))
        self.assertEqual(k.sum().item(), 0.0)

    def test_saved_and_loaded_program_equals_eager(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decoder.inplace")
            self.program.save(path)
            loaded = inplace.load_program(path)
            self.assertEqual(sorted(loaded.methods), ["decode", "prefill"])
            self.replay(loaded)

    def test_module_buffers_are_not_the_state(self):
        s = self.program.new_session()
        before = self.model.layers[0].k_cache.clone()
        s.prefill(torch.randn(1, 4, D), torch.arange(4))
        self.assertTrue(torch.equal(self.model.layers[0].k_cache, before))
        # A program compiled later starts from the buffers as they are then; this one does not.
        self.model.layers[0].k_cache.fill_(1.0)
        try:
            fresh = self.program.new_session()
            self.assertEqual(fresh.state("layers.0.k_cache").sum().item(), 0.0)
        finally:
            self.model.layers[0].k_cache.zero_()

    def test_errors_name_the_method_and_inputs(self):
        s = self.program.new_session()
        with self.assertRaisesRegex(inplace.InputError, "no method 'step'.*'prefill'"):
            s.run("step", torch.randn(1, 1, D), torch.tensor([0]))
        with self.assertRaisesRegex(inplace.Error, "positions"):
            s.decode(torch.randn(1, 1, D), torch.tensor([0, 1]))
        with self.assertRaisesRegex(inplace.Error, "state 'nope'|'nope'"):
            s.state("nope")

    def test_named_methods_of_the_module(self):
        class TwoEntries(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("total", torch.zeros(4))
                self.scale = torch.nn.Parameter(torch.randn(4))

            def forward(self, x):
                return x * self.scale + self.total

            def accumulate(self, x):
                self.total.add_(x)
                return self.total * 2

        m = TwoEntries()
        program = inplace.compile_program(m, {"forward": ((torch.randn(4),),),
                                              "accumulate": ((torch.randn(4),),)})
        s = program.new_session()
        eager = copy.deepcopy(m)
        for _ in range(2):
            x = torch.randn(4)
            self.assertTrue(torch.allclose(s.accumulate(x), eager.accumulate(x)))
            x = torch.randn(4)
            self.assertTrue(torch.allclose(s.forward(x), eager(x)))
        self.assertTrue(torch.allclose(s.state("total"), eager.total))


if __name__ == "__main__":
    unittest.main()
