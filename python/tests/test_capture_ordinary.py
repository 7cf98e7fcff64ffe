"""Ordinary PyTorch code compiled with inplace.compile on every supported torch (torch 1.13 has
no torch.export: what symbolic tracing cannot take is traced at the examples' shapes), equal to
eager on fresh inputs, outputs and final buffer contents: a top-level nn.Sequential, shape
arithmetic (`B, T, C = x.size()`, `C // n_head`, `B, T, _ = x.shape`), BatchNorm1d (eval and
training, whose running statistics are buffers written in place), LSTMCell, nn.LSTM,
TransformerEncoderLayer, tensor constants made in a function body, and a KV cache written at
positions given at every call (a runtime input, never frozen).
"""
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import inplace


if torch is not None:
    class CausalSelfAttention(nn.Module):
        """nanoGPT's attention: sizes read from x, heads by integer division."""

        def __init__(self, C=16, n_head=4):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C)
            self.c_proj = nn.Linear(C, C)
            self.n_head = n_head

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.n_head) ** 0.5)
            y = (att.softmax(-1) @ v).transpose(1, 2).contiguous().view(B * T, C)
            return self.c_proj(y).view(B, T, C)

    class ShapeUnpack(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            B, T, _ = x.shape
            return self.lin(x).reshape(B, T * 8)

    class CachedAttention(nn.Module):
        """A KV cache written at the call's positions (index_copy_ and setitem), sizes from x."""

        def __init__(self, C=8, max_len=12):
            super().__init__()
            self.qkv = nn.Linear(C, 3 * C)
            self.register_buffer("k_cache", torch.zeros(1, max_len, C))
            self.register_buffer("v_cache", torch.zeros(1, max_len, C))

        def forward(self, x, pos):
            B, T, C = x.size()
            q, k, v = self.qkv(x).split(C, dim=2)
            self.k_cache.index_copy_(1, pos, k)
            self.v_cache[:, pos] = v
            att = (q @ self.k_cache.transpose(1, 2)) / C ** 0.5
            return att.softmax(-1) @ self.v_cache

    class LSTMStep(nn.Module):
        """An LSTMCell carrying its state in place."""

        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(4, 5)

        def forward(self, x, h, c):
            h2, c2 = self.cell(x, (h, c))
            h.copy_(h2)
            c.copy_(c2)
            return h2

    def with_constants(x):
        return x * torch.tensor([1.0, 2.0, 3.0]) + torch.arange(3)


@requires_extension
class OrdinaryCode(CompileCase):
    rtol = 1e-4
    atol = 1e-5

    def test_top_level_sequential(self):
        self.check(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)),
                   (torch.randn(2, 4),), [(torch.randn(2, 4),)])

    def test_shape_arithmetic_from_size(self):
        self.check(CausalSelfAttention(), (torch.randn(2, 5, 16),), [(torch.randn(2, 5, 16),)])

    def test_shape_unpacking(self):
        self.check(ShapeUnpack(), (torch.randn(2, 3, 8),), [(torch.randn(2, 3, 8),)])

    def test_batch_norm_eval(self):
        m = nn.BatchNorm1d(4)
        m.running_mean.uniform_(-1, 1)
        m.running_var.uniform_(0.5, 2)
        self.check(m.eval(), (torch.randn(3, 4),), [(torch.randn(3, 4),)])

    def test_batch_norm_training_updates_its_running_statistics(self):
        # running_mean, running_var and num_batches_tracked are buffers written in place; the
        # harness compares them with eager's after every call.
        compiled = self.check(nn.BatchNorm1d(4), (torch.randn(6, 4),),
                              [(torch.randn(6, 4),) for _ in range(2)])
        self.assertTrue(compiled.aliased_io or compiled._written_state)

    def test_lstm_cell(self):
        self.check(nn.LSTMCell(4, 5), (torch.randn(2, 4),), [(torch.randn(2, 4),)])
        self.check(LSTMStep(), (torch.randn(2, 4), torch.randn(2, 5), torch.randn(2, 5)),
                   [(torch.randn(2, 4), torch.randn(2, 5), torch.randn(2, 5)) for _ in range(2)])

    def test_lstm(self):
        self.check(nn.LSTM(4, 5, num_layers=2, batch_first=True), (torch.randn(2, 3, 4),),
                   [(torch.randn(2, 3, 4),)])

    def test_transformer_encoder_layer(self):
        m = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True).eval()
        self.check(m, (torch.randn(2, 5, 16),), [(torch.randn(2, 5, 16),)])

    def test_tensor_constants_in_a_function_body(self):
        self.check(with_constants, (torch.randn(2, 3),), [(torch.randn(2, 3),)])

    def test_module_constant_and_a_parameter_replaced_after_compiling(self):
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 3)

            def forward(self, x):
                B, T = x.shape
                return self.lin(x).view(B * T) * torch.arange(B * T)

        m = Scaled()
        compiled = self.check(m, (torch.randn(2, 3),), [(torch.randn(2, 3),)])
        self.assertEqual(compiled.captured_by, "make_fx")
        m.lin.weight = nn.Parameter(torch.randn(3, 3))  # followed at the next call
        x = torch.randn(2, 3)
        with torch.no_grad():
            self.assertSame(compiled(x), m(x), "after the replacement")

    def test_cache_positions_stay_runtime_inputs(self):
        m = CachedAttention()
        pos = lambda p: torch.arange(p, p + 2)  # noqa: E731
        compiled = self.check(m, (torch.randn(1, 2, 8), pos(0)),
                              [(torch.randn(1, 2, 8), pos(p)) for p in (2, 4, 9, 5)])
        self.assertEqual(compiled.input_names, ["x", "pos"])
        ptr = m.k_cache.data_ptr()
        compiled(torch.randn(1, 2, 8), pos(6))
        self.assertEqual(m.k_cache.data_ptr(), ptr, "the cache is written in place")

    def test_explicit_make_fx_and_its_refusals(self):
        c = inplace.compile(ShapeUnpack(), (torch.randn(2, 3, 8),), capture_with="make_fx")
        self.assertEqual(c.captured_by, "make_fx")

        def number_as_size(x, n):
            return x[: int(n)]

        with self.assertRaisesRegex(ValueError, "frozen"):
            inplace.compile(number_as_size, (torch.randn(5), torch.tensor(3)),
                            capture_with="make_fx")
        with self.assertRaisesRegex(ValueError, "pass it as a tensor"):
            inplace.compile(lambda x, n: x * n, (torch.randn(5), 3), capture_with="make_fx")


if __name__ == "__main__":
    unittest.main()
