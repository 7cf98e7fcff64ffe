"""A program compiled from torch.export programs of several methods (issue 30's "or the
torch.export programs of several methods"): the Decoder of test_programs exported twice, a
prefill with its length dynamic and a one-token decode, given to ``inplace.compile_program(None,
{"prefill": {"exported": ep, ...}, "decode": {"exported": ep, ...}})``. Prefill and decode steps
on a session, a reset, then again: every output and the final caches equal the module run the
same way. Needs torch.export (torch 2.x; the GPU machine's torch): skipped, saying so, on
torch 1.13.

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import copy
import os
import unittest

from harness import torch

HAS_EXPORT = torch is not None and hasattr(torch, "export") and hasattr(torch.export, "export")
if torch is not None:
    from test_programs import D, P_MAX, Decoder
if HAS_EXPORT:
    import inplace


def skip_reason():
    if torch is None:
        return "torch missing"
    if not HAS_EXPORT:
        return "torch %s has no torch.export" % torch.__version__
    return None


@unittest.skipIf(skip_reason() is not None and not os.environ.get("INPLACE_REQUIRE_EXPORT"),
                 skip_reason() or "")
class ProgramFromExportedPrograms(unittest.TestCase):
    def export(self, model):
        with torch.no_grad():
            t = torch.export.Dim("t", min=1, max=P_MAX)
            prefill = torch.export.export(model, (torch.randn(1, 5, D), torch.arange(5)),
                                          dynamic_shapes=({1: t}, {0: t}))
            decode = torch.export.export(model, (torch.randn(1, 1, D), torch.tensor([5])))
        return prefill, decode

    def test_prefill_and_decode_equal_the_module(self):
        torch.manual_seed(0)
        model = Decoder().eval()
        reference = copy.deepcopy(model)
        prefill, decode = self.export(model)
        program = inplace.compile_program(None, {
            "prefill": {"exported": prefill, "examples": (torch.randn(1, 5, D), torch.arange(5)),
                        "dynamic": {"x": {1: P_MAX}, "positions": {0: P_MAX}}},
            "decode": {"exported": decode, "examples": (torch.randn(1, 1, D), torch.tensor([5]))},
        }, device="cpu")
        session = program.new_session()
        for length in (5, 1, P_MAX):
            ref = copy.deepcopy(reference)
            session.reset()
            with torch.no_grad():
                x = torch.randn(1, length, D)
                got, want = session.run("prefill", x, torch.arange(length)), ref(x, torch.arange(length))
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
                for p in range(length, min(length + 3, 16)):
                    x = torch.randn(1, 1, D)
                    got, want = session.run("decode", x, torch.tensor([p])), ref(x, torch.tensor([p]))
                    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            for name in ("layers.0.k_cache", "layers.1.v_cache"):
                torch.testing.assert_close(session.state(name), ref.get_buffer(name),
                                           rtol=1e-5, atol=1e-5, msg=name)

    def test_a_method_without_its_program_is_refused_naming_it(self):
        prefill, _ = self.export(Decoder().eval())
        with self.assertRaisesRegex(inplace.InputError, "'decode' needs 'exported'"):
            inplace.compile_program(None, {
                "prefill": {"exported": prefill, "examples": (torch.randn(1, 5, D),
                                                               torch.arange(5))},
                "decode": ((torch.randn(1, 1, D), torch.tensor([5])),)})


if __name__ == "__main__":
    unittest.main()
