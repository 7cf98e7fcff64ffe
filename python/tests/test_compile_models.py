"""Ordinary models compiled in process, equal to eager: a GRU cell carrying its state, a
MultiheadAttention block (general path and eval fast path), a conv1d streaming front end with a
ring buffer; tuple unpacking of split/chunk; conv1d's forms; the in-place ops addcmul_,
addcdiv_, lerp_, hardtanh_, leaky_relu_ and unsafe_split; a norm and a softmax written out by
hand (row reductions fused with the ops around them: one fused_rows step).
"""
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import inplace


@requires_extension
class Models(CompileCase):
    rtol = 1e-4
    atol = 1e-5

    def test_gru_cell_state_update(self):
        class Step(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = nn.GRUCell(6, 8)

            def forward(self, x, h):
                h.copy_(self.cell(x, h))
                return h

        self.check(Step(), (torch.randn(2, 6), torch.randn(2, 8)),
                   [(torch.randn(2, 6), torch.randn(2, 8)) for _ in range(2)])

    def test_sequential_whose_state_names_start_with_digits(self):
        # "0.weight" is no Python argument name: the placeholder is renamed, the state kept.
        self.check(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)), (torch.randn(2, 4),),
                   [(torch.randn(2, 4),)])

    def test_gru_cell_alone_unbatched(self):
        self.check(nn.GRUCell(4, 5), (torch.randn(4), torch.randn(5)), [(torch.randn(4), torch.randn(5))])

    def test_multihead_attention_general_path(self):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
                self.norm = nn.LayerNorm(16)

            def forward(self, x, mask):
                y, w = self.attn(x, x, x, attn_mask=mask)
                return self.norm(x + y), w

        mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
        self.check(Block(), (torch.randn(2, 5, 16), mask), [(torch.randn(2, 5, 16), mask)])

    def test_multihead_attention_eval_fast_path(self):
        m = nn.MultiheadAttention(8, 2).eval()  # eval + no_grad: torch's fused fast path
        x = torch.randn(3, 2, 8)
        self.check(m, (x, x, x), [(torch.randn(3, 2, 8),) * 3])

    def test_conv1d_ring_buffer_front_end(self):
        class FrontEnd(nn.Module):
            """Streaming: each call brings 4 new samples; the last 6 live in a ring buffer."""

            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(2, 8, kernel_size=3, padding=1, groups=2)
                self.down = nn.Conv1d(8, 4, kernel_size=2, stride=2, dilation=1)
                self.register_buffer("ring", torch.zeros(1, 2, 6))

            def forward(self, chunk):
                self.ring.copy_(torch.cat([self.ring[:, :, 4:], chunk], dim=2))
                y = F.leaky_relu(self.conv(self.ring), 0.1)
                return self.down(y)

        self.check(FrontEnd(), (torch.randn(1, 2, 4),), [(torch.randn(1, 2, 4),) for _ in range(3)])


@requires_extension
class Ops(CompileCase):
    def test_split_and_chunk_tuple_unpacking(self):
        def f(x):
            a, b = x.split(2, dim=1)
            c, d = torch.chunk(x, 2)
            a.mul_(2.0)
            return b + c.sum() + d.sum(), x

        self.check(f, (torch.randn(4, 4),), [(torch.randn(4, 4),)])

    def test_conv1d_forms(self):
        def f(x, w, b, w_g):
            return (F.conv1d(x, w, b), F.conv1d(x, w, None, stride=2, padding=2, dilation=2),
                    F.conv1d(x, w, b, padding="same"), F.conv1d(x, w_g, groups=2),
                    F.conv1d(x[0], w, b))

        args = (torch.randn(2, 4, 9), torch.randn(6, 4, 3), torch.randn(6), torch.randn(6, 2, 3))
        self.rtol, self.atol = 1e-4, 1e-5
        self.check(f, args, [tuple(torch.randn(a.shape) for a in args)])

    def test_addcmul_addcdiv_lerp_inplace(self):
        def f(avg, sq, g, target):
            avg.mul_(0.9).add_(g, alpha=0.1)
            sq.mul_(0.99).addcmul_(g, g, value=0.01)
            step = torch.addcdiv(target, avg, sq.sqrt().add_(1e-8), value=-0.5)
            target.lerp_(step, 0.25)
            avg.lerp_(g, torch.full_like(g, 0.75))
            return torch.addcmul(target, avg, sq), target.lerp(g, 0.5)

        def args():
            return (torch.randn(5), torch.rand(5), torch.randn(5), torch.randn(5))

        self.check(f, args(), [args()])

    def test_hardtanh_leaky_relu_inplace_and_functional(self):
        def f(x, y):
            F.hardtanh_(x, -0.5, 0.5)
            F.leaky_relu(y, 0.2, inplace=True)
            z = F.hardtanh(y, min_val=-0.1, max_val=0.3) + F.leaky_relu(x)
            F.hardtanh(z, inplace=True)
            return z, F.leaky_relu_(y, 0.5)

        self.check(f, (torch.randn(3, 4), torch.randn(3, 4)), [(torch.randn(3, 4), torch.randn(3, 4))])

    def test_unsafe_split(self):
        def f(x):
            parts = torch.unsafe_split(x, 2, dim=0)
            return parts[0] * 2 + parts[1]

        self.check(f, (torch.randn(4, 3),), [(torch.randn(4, 3),)])

    def test_hand_written_norm_and_softmax_fuse_their_rows(self):
        # No named rewrite knows these spellings: every reduction joins the ops around it, one
        # step in all.
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.rand(24) + 0.5)

            def forward(self, x):
                h = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * self.w
                e = torch.exp(h - h.amax(-1, keepdim=True))
                return e / e.sum(-1, keepdim=True)

        compiled = self.check(Block(), (torch.randn(3, 5, 24),),
                              [(torch.randn(3, 5, 24) * 4,) for _ in range(3)])
        plan = compiled.plan
        self.assertEqual(plan.count("= fused_rows("), 1, plan)
        self.assertNotIn("= mean", plan)
        self.assertNotIn("= sum", plan)


if __name__ == "__main__":
    unittest.main()
