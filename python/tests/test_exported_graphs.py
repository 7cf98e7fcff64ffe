"""torch.export graphs as current PyTorch writes them, from hand-written fixtures (torch 1.13
has no torch.export): _assert_tensor_metadata, to.dtype_layout, to.device, alias, a lifted
constant that is a buffer's memory, and the signature's buffer mutation. Compiled in process
and compared with the same program written in torch."""
import os
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import inplace

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


@requires_extension
class ExportedDecodeStep(CompileCase):
    def reference(self, weight, k_cache, scale, x, pos):
        old = k_cache.clone()
        y = torch.nn.functional.linear(x, weight).view(1, 1, 1, 4)
        k_cache.index_copy_(2, pos, y)
        return (k_cache * scale).sum(dim=2), old.sum()

    def test_compiled_equals_torch_and_the_buffer_is_written_in_place(self):
        weight, scale = torch.randn(4, 4), torch.randn(1, 1, 8, 4)
        k_cache = torch.zeros(1, 1, 8, 4)
        k_ref = k_cache.clone()
        state = {"proj.weight": weight, "k_cache": k_cache, "scale": scale}
        compiled = inplace.compile_graph(os.path.join(FIXTURES, "exported_decode_step.json"),
                                         (torch.randn(1, 4), torch.tensor([0])), state)
        self.assertEqual(compiled.input_names, ["x", "input_pos"])
        ptr = k_cache.data_ptr()
        for t in range(8):
            x = torch.randn(1, 4)
            want = self.reference(weight, k_ref, scale, x, torch.tensor([t]))
            got = compiled(x, torch.tensor([t]))
            self.assertEqual(len(got), 2)
            self.assertSame(got[0], want[0], "step %d sum" % t)
            self.assertSame(got[1], want[1], "step %d old-cache sum" % t)
            self.assertSame(k_cache, k_ref, "step %d cache" % t)
        self.assertEqual(k_cache.data_ptr(), ptr)
        self.assertIn("_assert_tensor_metadata", str(compiled.graph))


if __name__ == "__main__":
    unittest.main()
