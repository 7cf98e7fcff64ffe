"""What a compiled program holds and follows (issue 31, items 1, 2, 8, 12 and 13): a result
that views an input keeps that input's memory alive as eager's does; the module's parameters
and buffers are held, followed when replaced and refused, naming them, when converted; a
failed call that left a buffer partly updated is recovered with reset() or by replacing the
buffer; an in-place write into a leaf that requires grad is refused as eager refuses it; a bad
value range is an InputError. The memory tests also run under AddressSanitizer
(scripts/sanitize.sh), where a read of freed memory is a report rather than a wrong value.
"""
import gc
import os
import subprocess
import sys
import textwrap
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import inplace

HERE = os.path.dirname(os.path.abspath(__file__))


def churn(shape, value, times=64):
    """Allocates (and keeps) tensors of `shape` filled with `value`: freed memory of that size
    is reused and overwritten."""
    return [torch.full(shape, value) for _ in range(times)]


def transpose(x):
    return x.t()


def double(y):
    """Reads every element of y in the engine (the read ASan checks)."""
    return y.contiguous() * 2


@requires_extension
class ResultsKeepInputsAlive(CompileCase):
    def test_a_view_of_a_dropped_input_still_reads_its_values(self):
        compiled = inplace.compile(transpose, (torch.zeros(3, 4),))
        x = torch.arange(12.0).reshape(3, 4)
        want = x.t().clone()
        got = compiled(x)
        self.assertEqual(got.data_ptr(), x.data_ptr())  # a view, as eager's
        del x
        gc.collect()
        keep = churn((3, 4), 7.0)
        self.assertTrue(torch.equal(got, want), got)
        reader = inplace.compile(double, (torch.zeros(4, 3),))
        self.assertTrue(torch.equal(reader(got), want * 2))  # the engine's read, checked by ASan
        del keep

    def test_a_view_outlives_the_input_data_being_replaced(self):
        # `x.data = y` frees x's memory unless something else holds it: the result does, as
        # eager's view does. The engine then reads the view (a read ASan checks).
        compiled = inplace.compile(transpose, (torch.zeros(3, 4),))
        reader = inplace.compile(double, (torch.zeros(4, 3),))
        x = torch.arange(12.0).reshape(3, 4)
        want = x.t().clone()
        got = compiled(x)
        x.data = torch.zeros(1)
        gc.collect()
        keep = churn((3, 4), 7.0)
        self.assertTrue(torch.equal(reader(got), want * 2))
        self.assertTrue(torch.equal(got, want), got)
        del keep

    def test_every_call_keeps_its_own_input(self):
        compiled = inplace.compile(transpose, (torch.zeros(2, 5),))
        results = [compiled(torch.full((2, 5), float(n))) for n in range(8)]
        keep = churn((2, 5), -1.0)
        for n, r in enumerate(results):
            self.assertTrue(torch.equal(r, torch.full((5, 2), float(n))), (n, r))
        del keep

    def test_a_large_dropped_input_is_still_mapped(self):
        # 64 MiB is above glibc's mmap threshold: freed, it is unmapped at once, and reading
        # the view crashed (SIGSEGV). Run apart, so a crash is a failure, not the end of the run.
        script = textwrap.dedent("""
            import gc, sys
            sys.path.insert(0, %r)
            from harness import torch
            import inplace
            compiled = inplace.compile(lambda x: x.t(), (torch.zeros(4, 4),),
                                       dynamic={0: {0: 4096, 1: 4096}})
            x = torch.ones(4096, 4096)
            r = compiled(x)
            del x
            gc.collect()
            keep = [torch.zeros(4096, 4096) for _ in range(2)]
            print(float(r.sum()), float(r[4095, 17]))
        """ % HERE)
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        self.assertEqual(run.stdout.split(), [str(4096.0 * 4096), "1.0"])


class Proj(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4, bias=False)
        self.register_buffer("k_cache", torch.zeros(2, 4))
        with torch.no_grad():
            self.proj.weight.fill_(1.0)

    def forward(self, x, pos):
        y = self.proj(x)
        self.k_cache.index_copy_(0, pos, y)
        return y, self.k_cache.sum(0)


@requires_extension
class ModuleStateFollowed(CompileCase):
    def compile(self):
        m = Proj()
        compiled = inplace.compile(m, (torch.ones(1, 4), torch.tensor([0])))
        return m, compiled

    def assertMatchesEager(self, m, compiled, x, pos):
        eager = Proj()
        eager.load_state_dict(m.state_dict())
        with torch.no_grad():
            want = eager(x.clone(), pos.clone())
        got = compiled(x.clone(), pos.clone())
        for g, w in zip(got, want):
            self.assertSame(g, w, "output")
        self.assertSame(m.k_cache, eager.k_cache, "k_cache")

    def test_a_weight_replaced_by_data_is_followed(self):
        m, compiled = self.compile()
        m.proj.weight.data = torch.full((4, 4), 4.0)  # the old weight is freed
        gc.collect()
        keep = churn((4, 4), float("inf"))
        y, _ = compiled(torch.ones(1, 4), torch.tensor([1]))
        self.assertTrue(torch.equal(y, torch.full((1, 4), 16.0)), y)
        del keep
        self.assertMatchesEager(m, compiled, torch.randn(1, 4), torch.tensor([0]))

    def test_a_weight_written_in_place_is_read_at_the_next_call(self):
        m, compiled = self.compile()
        with torch.no_grad():
            m.proj.weight.mul_(3.0)
        self.assertMatchesEager(m, compiled, torch.randn(1, 4), torch.tensor([1]))

    def test_a_replaced_buffer_is_the_one_written(self):
        m, compiled = self.compile()
        old = m.k_cache
        compiled(torch.ones(1, 4), torch.tensor([0]))
        m.k_cache = torch.zeros(2, 4)
        _, total = compiled(torch.full((1, 4), 2.0), torch.tensor([1]))
        self.assertTrue(torch.equal(m.k_cache[1], torch.full((4,), 8.0)), m.k_cache)
        self.assertTrue(torch.equal(m.k_cache[0], torch.zeros(4)), m.k_cache)
        self.assertTrue(torch.equal(total, torch.full((4,), 8.0)), total)
        self.assertTrue(torch.equal(old[1], torch.zeros(4)), "the old buffer is no longer written")
        self.assertMatchesEager(m, compiled, torch.randn(1, 4), torch.tensor([0]))

    def test_a_converted_module_is_refused_naming_the_parameter(self):
        m, compiled = self.compile()
        m.double()
        with self.assertRaisesRegex(inplace.InputError, r"parameter 'proj\.weight' is now "
                                    r"float64 \[4, 4\].*compiled for float32"):
            compiled(torch.ones(1, 4, dtype=torch.float64), torch.tensor([0]))
        m.float()  # back as compiled: followed
        self.assertMatchesEager(m, compiled, torch.randn(1, 4), torch.tensor([1]))

    def test_a_resized_buffer_is_refused_naming_it(self):
        m, compiled = self.compile()
        before = m.proj.weight.detach().clone()
        m.k_cache = torch.zeros(3, 4)
        with self.assertRaisesRegex(inplace.InputError, r"buffer 'k_cache' is now float32 "
                                    r"\[3, 4\].*\[2, 4\]"):
            compiled(torch.ones(1, 4), torch.tensor([0]))
        self.assertTrue(torch.equal(m.k_cache, torch.zeros(3, 4)))
        self.assertTrue(torch.equal(m.proj.weight, before))

    def test_the_per_call_check_reads_every_state_tensor_in_c(self):
        m, compiled = self.compile()
        check = compiled._watch._fast.__self__  # the extension's StateCheck
        self.assertEqual(check.raw_tensors, 2)
        m.proj.weight.data = torch.full((4, 4), 2.0)
        compiled(torch.ones(1, 4), torch.tensor([0]))
        self.assertEqual(compiled._watch._fast.__self__.raw_tensors, 2, "indexed anew")

    def test_data_replaced_after_many_unchanged_calls_is_followed(self):
        m, compiled = self.compile()
        for _ in range(50):
            compiled(torch.ones(1, 4), torch.tensor([0]))
        m.proj.weight.data = torch.full((4, 4), 4.0)  # same shape, another storage
        y, _ = compiled(torch.ones(1, 4), torch.tensor([1]))
        self.assertTrue(torch.equal(y, torch.full((1, 4), 16.0)), y)
        self.assertMatchesEager(m, compiled, torch.randn(1, 4), torch.tensor([0]))

    def test_set_and_resize_in_place_are_seen(self):
        m, compiled = self.compile()
        compiled(torch.ones(1, 4), torch.tensor([0]))
        with torch.no_grad():
            m.proj.weight.set_(torch.full((4, 4), 3.0))  # the same object, another storage
        y, _ = compiled(torch.ones(1, 4), torch.tensor([1]))
        self.assertTrue(torch.equal(y, torch.full((1, 4), 12.0)), y)
        before = m.k_cache.data_ptr()
        m.k_cache.storage().resize_(4096)  # same tensor, same shape; its storage reallocated
        self.assertNotEqual(m.k_cache.data_ptr(), before)
        self.assertMatchesEager(m, compiled, torch.randn(1, 4), torch.tensor([0]))
        m.k_cache.resize_(3, 4)
        with self.assertRaisesRegex(inplace.InputError, r"buffer 'k_cache' is now float32 "
                                    r"\[3, 4\].*\[2, 4\]"):
            compiled(torch.ones(1, 4), torch.tensor([0]))

    def test_a_buffer_viewed_as_another_dtype_is_refused(self):
        m, compiled = self.compile()
        compiled(torch.ones(1, 4), torch.tensor([0]))
        m.k_cache.data = m.k_cache.view(torch.int32)  # same memory, shape and strides
        with self.assertRaisesRegex(inplace.InputError, r"buffer 'k_cache' is now int32"):
            compiled(torch.ones(1, 4), torch.tensor([0]))

    def test_a_deleted_buffer_is_refused_naming_it(self):
        m, compiled = self.compile()
        del m.k_cache
        with self.assertRaisesRegex(inplace.InputError, "buffer 'k_cache' is gone"):
            compiled(torch.ones(1, 4), torch.tensor([0]))


class Tied(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4, bias=False)
        self.b = nn.Linear(4, 4, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


@requires_extension
class TiedWeights(CompileCase):
    def test_tied_weights_follow_together_or_are_refused_untied(self):
        m = Tied()
        compiled = inplace.compile(m, (torch.ones(1, 4),))
        x = torch.randn(1, 4)
        m.a.weight.data = torch.randn(4, 4)  # both names see it
        with torch.no_grad():
            self.assertSame(compiled(x), m(x), "retied output")
        m.a.weight = nn.Parameter(torch.randn(4, 4))  # untied: the engine has one memory
        with self.assertRaisesRegex(inplace.InputError, "parameter 'b.weight' was one tensor "
                                    "with 'a.weight' at compile"):
            compiled(x)
        m.b.weight = m.a.weight
        with torch.no_grad():
            self.assertSame(compiled(x), m(x), "tied again")


class WeightView(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.arange(6.0).reshape(2, 3))

    def forward(self, x):
        return x + 1, self.w.t()


@requires_extension
class StateViews(CompileCase):
    def test_a_view_of_a_buffer_outlives_its_replacement(self):
        m = WeightView()
        compiled = inplace.compile(m, (torch.zeros(2),))
        _, got = compiled(torch.zeros(2))
        want = m.w.t().clone()
        m.w.data = torch.full((2, 3), -1.0)  # eager's view keeps the old memory; so does ours
        gc.collect()
        keep = churn((2, 3), 7.0)
        self.assertTrue(torch.equal(got, want), got)
        reader = inplace.compile(double, (torch.zeros(3, 2),))
        self.assertTrue(torch.equal(reader(got), want * 2))
        _, now = compiled(torch.zeros(2))  # and the next call reads the new buffer
        self.assertTrue(torch.equal(now, torch.full((3, 2), -1.0)), now)
        del keep


class TwoCaches(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(8, 4))
        self.register_buffer("v_cache", torch.zeros(8, 4))

    def forward(self, k, v, pos, idx):
        self.k_cache.index_copy_(0, pos, k)
        self.v_cache.index_copy_(0, idx, v)
        return self.k_cache.sum() + self.v_cache.sum()


@requires_extension
class RecoveryAfterAFailedCall(CompileCase):
    def failed(self):
        m = TwoCaches()
        compiled = inplace.compile(m, (torch.ones(1, 4), torch.ones(1, 4), torch.tensor([0]),
                                       torch.tensor([0])))
        with self.assertRaisesRegex(inplace.Error, "partly updated.*'k_cache'"):
            compiled(torch.ones(1, 4), torch.ones(1, 4), torch.tensor([3]), torch.tensor([9]))
        self.assertEqual(float(m.k_cache.sum()), 4.0)  # written before the failing step
        self.assertEqual(compiled.partly_updated, ["k_cache"])
        with self.assertRaisesRegex(inplace.Error, "'k_cache'.*reset"):
            compiled(torch.ones(1, 4), torch.ones(1, 4), torch.tensor([1]), torch.tensor([1]))
        return m, compiled

    def check_next_call(self, m, compiled):
        eager = TwoCaches()
        eager.load_state_dict(m.state_dict())
        args = (torch.randn(1, 4), torch.randn(1, 4), torch.tensor([5]), torch.tensor([6]))
        want = eager(*args)
        self.assertSame(compiled(*args), want, "output")
        self.assertSame(m.k_cache, eager.k_cache, "k_cache")
        self.assertSame(m.v_cache, eager.v_cache, "v_cache")

    def test_reset_after_restoring_in_place(self):
        m, compiled = self.failed()
        m.k_cache.zero_()
        compiled.reset()
        self.assertEqual(compiled.partly_updated, [])
        self.check_next_call(m, compiled)

    def test_replacing_the_buffer_rebinds_it(self):
        m, compiled = self.failed()
        m.k_cache = torch.zeros(8, 4)
        self.check_next_call(m, compiled)

    def test_a_loaded_program_refuses_until_reset(self):
        import tempfile
        _, compiled = self.failed()
        compiled.reset()
        with tempfile.TemporaryDirectory() as d:
            loaded = inplace.load(inplace.save(compiled, os.path.join(d, "e.inplace")))
        with self.assertRaisesRegex(inplace.Error, "partly updated"):
            loaded(torch.ones(1, 4), torch.ones(1, 4), torch.tensor([3]), torch.tensor([9]))
        with self.assertRaisesRegex(inplace.Error, "partly updated.*reset"):
            loaded(torch.ones(1, 4), torch.ones(1, 4), torch.tensor([1]), torch.tensor([1]))
        loaded.reset()
        loaded(torch.ones(1, 4), torch.ones(1, 4), torch.tensor([1]), torch.tensor([1]))


def add_one(x):
    x.add_(1)
    return x * 2


@requires_extension
class GradLeaves(CompileCase):
    def test_a_leaf_that_requires_grad_is_not_written(self):
        compiled = inplace.compile(add_one, (torch.zeros(3),))
        for make in (lambda: torch.zeros(3, requires_grad=True),
                     lambda: torch.zeros(6, requires_grad=True)[:3]):
            x = make()
            with self.assertRaisesRegex(RuntimeError, "leaf Variable"):
                add_one(x)  # eager refuses
            with self.assertRaisesRegex(inplace.InputError, "input 'x' is .*leaf tensor that "
                                        "requires grad"):
                compiled(x)
            self.assertTrue(torch.equal(x.detach(), torch.zeros(3)), "nothing written")
        x = torch.zeros(3, requires_grad=True)
        with torch.no_grad():  # eager writes it there, and so does the program
            self.assertSame(compiled(x), torch.full((3,), 2.0), "output")
        self.assertTrue(torch.equal(x.detach(), torch.ones(3)))
        # A tensor that requires grad but is not a leaf is written, as eager writes it.
        y = torch.zeros(3, requires_grad=True) * 1
        self.assertSame(compiled(y).detach(), torch.full((3,), 2.0), "output")


def offset(x, n):
    return x + n


@requires_extension
class ValueRangeBounds(CompileCase):
    def test_a_bound_outside_int64_is_an_input_error(self):
        ex = (torch.zeros(3, dtype=torch.int64), torch.tensor(1))
        for bounds, said in (((0, 2**64), "the upper bound is 18446744073709551616, outside int64"),
                             ((-2**63 - 1, 0), "the lower bound is -9223372036854775809"),
                             ((0, 1.5), "the upper bound is 1.5, not an integer"),
                             ((5, 1), "the lower bound 5 is above the upper bound 1"),
                             ((0,), r"expected \(lo, hi\)")):
            with self.assertRaisesRegex(inplace.InputError, "value_ranges: input 'n': " + said):
                inplace.compile(offset, ex, value_ranges={"n": bounds})
        with self.assertRaisesRegex(inplace.InputError, "value_ranges: no input 'm'"):
            inplace.compile(offset, ex, value_ranges={"m": (0, 1)})
        compiled = inplace.compile(offset, ex, value_ranges={1: (0, 2**63 - 1)})
        self.assertSame(compiled(torch.zeros(3, dtype=torch.int64), torch.tensor(5)),
                        torch.full((3,), 5, dtype=torch.int64), "output")


if __name__ == "__main__":
    unittest.main()
