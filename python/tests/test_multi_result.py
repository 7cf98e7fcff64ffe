"""A program that returns a multi-result op as it is (torch.max(x, -1), sort, topk, unbind, a
tuple around one) returns every result, as eager does, through inplace.compile; deep chains of
in-place ops compile on a worker thread with a small stack; a 0-d tensor passed for a number is
read on every call (issue 31, items 3, 4 and 11).

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import threading
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import inplace

def fresh(*shapes):
    return tuple(torch.randn(*s) for s in shapes)

@requires_extension
class MultiResultReturned(CompileCase):
    def test_max_dim(self):
        self.check(lambda x: torch.max(x, -1), fresh((3, 5)), [fresh((3, 5))])

    def test_sort(self):
        self.check(lambda x: x.sort(-1), fresh((3, 5)), [fresh((3, 5))])

    def test_topk(self):
        self.check(lambda x: torch.topk(x, 2), fresh((3, 5)), [fresh((3, 5))])

    def test_unbind(self):
        self.check(lambda x: torch.unbind(x, 0), fresh((3, 5)), [fresh((3, 5))])

    def test_a_tuple_around_max(self):
        self.check(lambda x: (torch.max(x, -1),), fresh((3, 5)), [fresh((3, 5))])

    def test_after_an_in_place_write(self):
        def f(x):
            x.add_(1.0)
            return x.sort(-1)

        self.check(f, fresh((3, 5)), [fresh((3, 5))])

@requires_extension
class SizesReturned(CompileCase):
    def test_one_size(self):
        self.check(lambda x: x.size(0), fresh((3, 5)), [fresh((3, 5))])

    def test_a_size_list_and_a_tensor(self):
        self.check(lambda x: (x.size(), x * 2), fresh((3, 5)), [fresh((3, 5))])

@requires_extension
class DeepChain(CompileCase):
    def test_twenty_thousand_in_place_adds_on_a_small_stack(self):
        def f(x):
            for _ in range(20000):
                x = x.add_(1.0)
            return x * 1

        result = {}

        def work():
            try:
                result["compiled"] = inplace.compile(f, (torch.zeros(2, 3),))
            except BaseException as e:  # reported on the main thread
                result["error"] = e

        old = threading.stack_size(1 << 20)
        try:
            t = threading.Thread(target=work)
            t.start()
            t.join()
        finally:
            threading.stack_size(old)
        self.assertNotIn("error", result)
        x = torch.randn(2, 3)
        want = x + 20000
        got = result["compiled"](x)
        self.assertTrue(torch.equal(got, want))
        self.assertTrue(torch.equal(x, want))

@requires_extension
class NumberAsTensor(CompileCase):
    def test_zero_dim_float_tensor_as_a_scalar_argument(self):
        def f(x, t):
            return x.add(x, alpha=t), x.sub(x, alpha=t)

        self.check(f, (torch.randn(2), torch.tensor(0.5)),
                   [(torch.randn(2), torch.tensor(v)) for v in (-3.25, 0.0, 7.0)])

if __name__ == "__main__":
    unittest.main()
