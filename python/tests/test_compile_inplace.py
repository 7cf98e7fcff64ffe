"""inplace.compile in process against eager PyTorch: in-place chains, every setitem form,
copy_ with broadcast and dtype change, writes through views, index_put with accumulate, KV-cache
slice writes and index_copy_, slice_scatter leaving its input untouched. Each program is
compiled once and called again on fresh values; outputs, every input after the call and the
identity of returned inputs are compared (compile_harness.CompileCase.check).

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn


def fresh(*shapes):
    return tuple(torch.randn(*s) for s in shapes)


@requires_extension
class InPlaceChains(CompileCase):
    def test_method_chain_returns_the_input(self):
        def f(x, y):
            return x.mul_(2.0).add_(y).clamp_(min=-1.0, max=1.5)

        self.check(f, fresh((3, 4), (3, 4)), [fresh((3, 4), (3, 4))])

    def test_chain_with_unary_and_scalar_ops(self):
        def f(x, y):
            x.sub_(y, alpha=0.5).abs_().sqrt_()
            y.neg_()
            return x + y, x.sum()

        self.check(f, fresh((2, 5), (2, 5)), [fresh((2, 5), (2, 5))])


@requires_extension
class SetItem(CompileCase):
    def test_int_slice_ellipsis_none_forms(self):
        def f(x, v):
            x[0] = 1.0
            x[1, 2:4] = v[0, :2]
            x[..., -1] = v[:, 3]
            x[:, None, 1] = 7.0
            x[::2, 1] += 1.0
            return x

        self.check(f, fresh((4, 5), (4, 5)), [fresh((4, 5), (4, 5))])

    def test_tensor_index_list_index_and_mask(self):
        def f(x, idx, v, mask):
            x[idx] = v
            x[[0, 2], 1] = -1.0
            x[mask] = 0.5
            return x.sum(dim=0)

        ex = (torch.randn(5, 3), torch.tensor([4, 1]), torch.randn(2, 3), torch.rand(5, 3) > 0.5)
        again = (torch.randn(5, 3), torch.tensor([0, 3]), torch.randn(2, 3), torch.rand(5, 3) > 0.5)
        self.check(f, ex, [again])

    def test_position_tensor_in_a_tuple_index(self):
        def f(cache, k, pos):
            cache[:, :, pos] = k
            return cache

        ex = (torch.zeros(1, 2, 8, 4), torch.randn(1, 2, 4), torch.tensor(3))
        self.check(f, ex, [(torch.zeros(1, 2, 8, 4), torch.randn(1, 2, 4), torch.tensor(t))
                           for t in (0, 7, 5)])


@requires_extension
class CopyAndViews(CompileCase):
    def test_copy_broadcast_and_dtype_change(self):
        def f(x, row, ints):
            x.copy_(row)                 # [4] float64 broadcast into [3, 4] float32
            x[1].copy_(ints)             # int64 into float32
            return x * 2

        ex = (torch.randn(3, 4), torch.randn(4, dtype=torch.float64), torch.arange(4))
        self.check(f, ex, [(torch.randn(3, 4), torch.randn(4, dtype=torch.float64),
                            torch.arange(4) * 3)])

    def test_writes_through_views(self):
        def f(x):
            x.view(-1)[2:5].fill_(1.0)
            x.t()[0].add_(10.0)
            x.narrow(1, 1, 2).mul_(3.0)
            x.unsqueeze(0)[0, 2].zero_()
            return x.sum(dim=1)

        self.check(f, fresh((3, 4)), [fresh((3, 4))])

    def test_split_view_write(self):
        def f(x):
            parts = torch.split(x, 2, dim=1)
            parts[1].mul_(-1.0)
            return x

        self.check(f, fresh((3, 4)), [fresh((3, 4))])


@requires_extension
class Scatter(CompileCase):
    def test_index_put_accumulate_with_duplicates(self):
        def f(x, idx, v):
            x.index_put_((idx,), v, accumulate=True)
            return x

        ex = (torch.zeros(6, 2), torch.tensor([1, 3, 1, 1]), torch.randn(4, 2))
        self.check(f, ex, [(torch.randn(6, 2), torch.tensor([5, 5, 0, 2]), torch.randn(4, 2))])

    def test_kv_cache_slice_write_and_index_copy(self):
        def f(kc, vc, k, v, pos):
            kc[:, :, pos:pos + 1] = k
            vc.index_copy_(2, pos.view(1), v)
            return kc, vc

        def args(p):
            return (torch.zeros(1, 2, 8, 4), torch.zeros(1, 2, 8, 4), torch.randn(1, 2, 1, 4),
                    torch.randn(1, 2, 1, 4), torch.tensor(p))

        compiled = self.check(f, args(0), [args(p) for p in (1, 7, 3)])
        kinds = sorted(kind for _, kind in compiled.aliased_io.values())
        self.assertEqual(len(kinds), 2, compiled.aliased_io)

    def test_slice_scatter_leaves_its_input_untouched(self):
        def f(x, src):
            y = torch.slice_scatter(x, src, dim=1, start=1, end=3, step=1)
            return y * 2.0

        self.check(f, fresh((3, 4), (3, 2)), [fresh((3, 4), (3, 2))])


@requires_extension
class MakeFx(CompileCase):
    def test_aten_graph_from_make_fx(self):
        from torch.fx.experimental.proxy_tensor import make_fx

        def f(cache, k, pos, x):
            cache.index_copy_(2, pos, k)
            x[:, 1:3] = 5.0
            x.add_(1.0)
            return cache.sum(dim=-1), x.masked_fill(x > 3.0, float("-inf"))

        def args(p):
            return (torch.zeros(1, 2, 8, 4), torch.randn(1, 2, 1, 4), torch.tensor([p]),
                    torch.randn(3, 4))

        gm = make_fx(f)(*args(3))
        compiled = self.check(gm, args(3), [args(0), args(7)])
        self.assertEqual(sorted(k for _, k in compiled.aliased_io.values()),
                         ["kv_cache_update", "user"])


if __name__ == "__main__":
    unittest.main()
