"""A compiled module's call on its fast host path (inline checks, TorchCrossing, the precomputed
rebuild, the cached stream getter) against the full path every input took before (_check on
each): the same results over calls, and the same errors, word for word, for a wrong dtype,
shape or device, a Python number, a replaced parameter, a grad leaf written in place and
misplaced keyword arguments.
"""
import functools
import unittest

from compile_harness import CompileCase, leaves, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import torch.utils._pytree as pytree

    import inplace
    from inplace import compiled as compiled_module


def full_path(compiled):
    """``compiled`` made to check every input through _check, as every call did before."""
    compiled._exact = [(None, None)] * len(compiled._exact)
    return compiled


if torch is not None:
    class Decode(nn.Module):
        """A decode step: a token's embedding written into a cache at a position, logits."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(16, 4)
            self.head = nn.Linear(4, 16)
            self.register_buffer("cache", torch.zeros(1, 8, 4))

        def forward(self, input_ids, cache_position):
            x = self.embed(input_ids)
            self.cache.index_copy_(1, cache_position, x)
            return self.head(x + self.cache.sum(1, keepdim=True))


@requires_extension
class FastPath(CompileCase):
    def two(self, build):
        """(fast, full): the same program compiled twice, from two copies of its module."""
        return build(), full_path(build())

    def outcome(self, f, *args, **kwargs):
        try:
            return ("ok", f(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - compared below
            return (type(e), str(e))

    def assertSameOutcome(self, fast, full, *args, **kwargs):
        copies = [a.clone() if type(a) is torch.Tensor and not a.requires_grad else a
                  for a in args]  # what the fast call writes, as it was
        got = self.outcome(fast, *args, **kwargs)
        want = self.outcome(full, *copies, **kwargs)
        self.assertEqual(got[0], want[0], "fast %s, full %s" % (got, want))
        if got[0] == "ok":
            self.assertEqual(len(leaves(got[1])), len(leaves(want[1])))
            for k, (a, b) in enumerate(zip(leaves(got[1]), leaves(want[1]))):
                self.assertSame(a, b, "result %d" % k)
        else:
            self.assertEqual(got[1], want[1])
        return got

    def test_decode_steps_give_the_full_path_results(self):
        torch.manual_seed(0)
        model = Decode().eval()
        eager = Decode().eval()
        eager.load_state_dict(model.state_dict())
        ids, pos = torch.tensor([[3]]), torch.tensor([0])
        fast = inplace.compile(model, (ids, pos))
        for step in range(6):
            ids, pos = torch.tensor([[step + 1]]), torch.tensor([step])
            with torch.no_grad():
                want = eager(ids, pos)
                got = fast(ids, pos) if step % 2 else fast(input_ids=ids, cache_position=pos)
            self.assertSame(got, want, "step %d" % step)
            self.assertTrue(torch.equal(model.cache, eager.cache), "step %d cache" % step)

    def test_errors_are_the_full_paths_word_for_word(self):
        def step(x, idx, scale):
            return x * scale + idx.to(x.dtype).sum()

        def build():
            return inplace.compile(step, (torch.randn(2, 3), torch.tensor([1, 2]),
                                          torch.tensor(2.0)))
        fast, full = self.two(build)
        x, idx, scale = torch.randn(2, 3), torch.tensor([0, 1]), torch.tensor(3.0)
        cases = {
            "right": (x, idx, scale),
            "dtype": (x.double(), idx, scale),
            "shape": (torch.randn(3, 3), idx, scale),
            "rank": (torch.randn(6), idx, scale),
            "device": (x.to("meta"), idx, scale),
            "number": (x, idx, 2.5),
            "int for a float": (x, idx, 2),
            "not a tensor": (x, idx, "2"),
            "two bad, the first named": (x, idx.int(), torch.randn(2)),
            "a parameter": (nn.Parameter(x, requires_grad=False), idx, scale),
            "a view": (torch.randn(3, 2).t(), idx, scale),
        }
        for name, args in cases.items():
            with self.subTest(name):
                self.assertSameOutcome(fast, full, *args)
        with self.assertRaises(inplace.InputError) as e:
            fast(x.double(), idx, scale)
        self.assertEqual(str(e.exception),
                         "input 'x': expected dtype torch.float32, got torch.float64")
        with self.assertRaises(inplace.InputError) as e:
            fast(torch.randn(3, 3), idx, scale)
        self.assertEqual(str(e.exception), "input 'x': expected shape [2, 3], got [3, 3]")
        with self.assertRaises(inplace.InputError) as e:
            fast(x.to("meta"), idx, scale)
        self.assertEqual(str(e.exception), "input 'x' is on meta, but the engine runs on cpu")

    def test_dynamic_dims_and_keywords(self):
        def step(cache, rows, idx):
            cache.index_copy_(1, idx, rows)
            return cache.sum(dim=1)

        def build():
            return inplace.compile(step, (torch.zeros(2, 16, 3), torch.randn(2, 1, 3),
                                          torch.tensor([0])),
                                   dynamic={"rows": {1: 8}, "idx": {0: 8}})
        fast, full = self.two(build)
        for n in (1, 5, 8, 9):
            rows, idx = torch.randn(2, n, 3), torch.arange(n)
            c1, c2 = torch.zeros(2, 16, 3), torch.zeros(2, 16, 3)
            got = self.outcome(fast, c1, rows, idx)
            want = self.outcome(full, c2, rows, idx)
            self.assertEqual(got[0], want[0])
            if got[0] == "ok":
                self.assertSame(got[1], want[1], "rows=%d" % n)
                self.assertTrue(torch.equal(c1, c2))
            else:
                self.assertEqual(got[1], want[1])
                self.assertIn("(dims [1] up to that)", got[1])
        c, rows, idx = torch.zeros(2, 16, 3), torch.randn(2, 2, 3), torch.arange(2)
        self.assertSameOutcome(fast, full, c, rows=rows, idx=idx)
        self.assertSameOutcome(fast, full, c, rows, idx=idx, extra=1)
        self.assertSameOutcome(fast, full, c, rows)
        self.assertSameOutcome(fast, full, c, rows, idx, idx)

    def test_grad_leaves_written_in_place_are_refused_after_the_input_checks(self):
        def step(cache, x):
            cache.add_(x)
            return cache * 2

        def build():
            return inplace.compile(step, (torch.zeros(4), torch.ones(4)))
        fast, full = self.two(build)
        leaf = torch.zeros(4, requires_grad=True)
        self.assertSameOutcome(fast, full, leaf, torch.ones(4))
        self.assertSameOutcome(fast, full, leaf[:], torch.ones(4))  # a view of a leaf: eager's
        self.assertSameOutcome(fast, full, leaf, torch.ones(4, dtype=torch.float64))
        kind, message = self.outcome(fast, leaf, torch.ones(4))
        self.assertIs(kind, inplace.InputError)
        self.assertIn("input 'cache' is a leaf tensor that requires grad", message)
        with torch.no_grad():
            self.assertSameOutcome(fast, full, leaf.detach().clone(), torch.ones(4))

    def test_a_replaced_parameter_is_bound_or_refused_as_before(self):
        torch.manual_seed(1)
        models = [nn.Linear(3, 2), nn.Linear(3, 2)]
        models[1].load_state_dict(models[0].state_dict())
        builds = iter(models)
        fast, full = self.two(lambda: inplace.compile(next(builds), (torch.randn(4, 3),)))
        x = torch.randn(4, 3)
        w = torch.randn(2, 3)
        for m in models:
            m.weight = nn.Parameter(w.clone())
        with torch.no_grad():
            got = self.assertSameOutcome(fast, full, x)
            self.assertSame(got[1], x @ w.t() + models[0].bias, "the new weight")
        for m in models:
            m.weight = nn.Parameter(w.double())
        kind, message = self.assertSameOutcome(fast, full, x)
        self.assertIs(kind, inplace.InputError)
        self.assertIn("parameter 'weight' is now float64", message)

    def test_results_that_are_inputs_and_bools(self):
        def step(x, flag):
            x.mul_(2)
            return x, flag, flag & (x.sum() > 0), x.shape[0]

        def build():
            return inplace.compile(step, (torch.ones(3), torch.tensor(True)))
        fast, full = self.two(build)
        x, flag = torch.ones(3), torch.tensor(True)
        got = fast(x, flag)
        self.assertIs(got[0], x)
        self.assertIs(got[1], flag)
        self.assertEqual(got[2].dtype, torch.bool)
        self.assertTrue(bool(got[2]))
        self.assertTrue(torch.equal(x, torch.full((3,), 2.0)))
        self.assertSameOutcome(fast, full, torch.ones(3), torch.tensor(False))
        self.assertSameOutcome(fast, full, torch.ones(3), True)


@requires_extension
class Crossing(CompileCase):
    def test_inputs_a_result_may_view_are_the_ones_held_as_detached_aliases(self):
        # Only those cross as a detached alias (a result viewing one keeps its memory, whatever
        # `x.data = y` does to the caller's object); the others cross as they are.
        viewed = inplace.compile(lambda x, y: (x.t(), y + 1), (torch.zeros(3, 4), torch.ones(2)))
        self.assertEqual(viewed._native.user_input_viewed, [True, False])
        decode = inplace.compile(Decode().eval(), (torch.tensor([[3]]), torch.tensor([0])))
        self.assertEqual(decode._native.user_input_viewed, [False, False])
        x = torch.arange(12.0).reshape(3, 4)
        got, _ = viewed(x, torch.ones(2))
        x.data = torch.zeros(1)
        self.assertTrue(torch.equal(got, torch.arange(12.0).reshape(3, 4).t()))

    def test_inputs_that_require_grad_cross_read_only(self):
        w = torch.randn(4, 3, requires_grad=True)
        x = torch.randn(2, 4)
        compiled = inplace.compile(lambda w, x: torch.tanh(x @ w), (w.detach(), x))
        got = compiled(w, x)
        self.assertSame(got, torch.tanh(x @ w).detach(), "a read-only input requiring grad")
        self.assertTrue(w.requires_grad)
        self.assertIsNone(w.grad)


@requires_extension
class Rebuilder(unittest.TestCase):
    def check(self, spec, count):
        items = [torch.tensor(float(i)) for i in range(count)]
        fast = compiled_module._rebuilder(spec, count)
        want = compiled_module._rebuild(spec, list(items))
        got = fast(list(items))
        self.assertIdentical(got, want)
        return fast

    def assertIdentical(self, got, want):
        """The same structure (types, keys, lengths) over the very same leaves."""
        self.assertIs(type(got), type(want))
        if isinstance(want, dict):
            self.assertEqual(list(got), list(want))
            for k in want:
                self.assertIdentical(got[k], want[k])
        elif isinstance(want, (tuple, list)):
            self.assertEqual(len(got), len(want))
            for a, b in zip(got, want):
                self.assertIdentical(a, b)
        elif isinstance(want, torch.Tensor):
            self.assertIs(got, want)
        else:
            self.assertEqual(got, want)

    def test_every_spec_form_rebuilds_as_the_general_walk(self):
        from inplace.capture import _SizeSpec
        for spec, count in ((None, 1), (None, 3), (0, 1), (1, 2), ((0, 1), 2), ((1, 0), 2),
                            ([0, 1], 2), ((0, (1, 2)), 3), ((0,), 1), (_SizeSpec([0, 1]), 2)):
            with self.subTest(spec=spec):
                self.check(spec, count)
        for value in (torch.zeros(1), (torch.zeros(1), torch.ones(1)),
                      {"logits": torch.zeros(1), "h": (torch.ones(1),)}, [torch.zeros(1)]):
            spec = pytree.tree_flatten(value)[1]
            with self.subTest(spec=str(spec)):
                self.check(spec, len(pytree.tree_flatten(value)[0]))

    def test_the_common_forms_skip_the_walk(self):
        leaf_spec = pytree.tree_flatten(torch.zeros(1))[1]
        tuple_spec = pytree.tree_flatten((torch.zeros(1), torch.ones(1)))[1]
        for spec, count in ((None, 1), (0, 1), ((0, 1), 2), (leaf_spec, 1), (tuple_spec, 2)):
            with self.subTest(spec=str(spec)):
                self.assertNotIsInstance(self.check(spec, count), functools.partial)


@requires_extension
class Bench(unittest.TestCase):
    def test_call_overhead_prints_every_part_in_both_grad_modes(self):
        import os
        import subprocess
        import sys
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        r = subprocess.run([sys.executable, os.path.join(root, "bench", "call_overhead.py"),
                            "--calls", "5", "--reps", "1"], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        for part in ("whole call", "forward", "sync", "inputs", "grad", "stream", "native",
                     "outputs"):
            self.assertEqual(r.stdout.count("  %s " % part), 2, r.stdout)
        self.assertIn("grad mode on", r.stdout)


@requires_extension
class Streams(unittest.TestCase):
    def test_the_cpu_stream_is_zero(self):
        self.assertEqual(compiled_module._stream_getter(torch.device("cpu"))(), 0)
        self.assertEqual(compiled_module._stream_of(torch.device("cpu")), 0)


if __name__ == "__main__":
    unittest.main()
