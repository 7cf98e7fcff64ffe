"""inplace.compile on CUDA tensors (the GPU machine: torch with CUDA, the extension built with
the CUDA backend; skipped elsewhere, saying why): a module whose cache buffer is written in
place on the GPU over many positions, a user cache mutated through a slice write at a runtime
position, the copy-back engine, fresh outputs on the device, calls on a side stream, save ->
load, and errors naming the input on the wrong device. Every result is compared with eager
PyTorch on the same device, including the cache contents, and caches keep their data_ptr.
"""
import os
import tempfile
import unittest

from compile_harness import EXT_ERROR, CompileCase, torch

WHY_SKIP = None
if torch is None:
    WHY_SKIP = "torch missing"
elif EXT_ERROR:
    WHY_SKIP = EXT_ERROR
elif not torch.cuda.is_available():
    WHY_SKIP = "torch has no CUDA device here"
else:
    import inplace
    WHY_SKIP = inplace.native().device_unavailable("cuda:0") or None

if torch is not None:
    import torch.nn as nn


def skip_message(cls):
    if WHY_SKIP and os.environ.get("INPLACE_REQUIRE_CUDA") == "1":
        raise RuntimeError("INPLACE_REQUIRE_CUDA=1 but the CUDA tests cannot run: %s" % WHY_SKIP)
    if WHY_SKIP:
        print("[gpu suite] python cuda tests skipped: %s" % WHY_SKIP)
        return unittest.skip(WHY_SKIP)(cls)
    return cls


if torch is not None:
    class CachedAttention(nn.Module):
        """One decoder attention step over a static cache written with index_copy_ (as Hugging
        Face's StaticCache does); the cache is a buffer."""

        def __init__(self, d=32, heads=4, s_max=64):
            super().__init__()
            self.heads, self.hd = heads, d // heads
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)
            self.register_buffer("k_cache", torch.zeros(1, heads, s_max, d // heads))
            self.register_buffer("v_cache", torch.zeros(1, heads, s_max, d // heads))

        def forward(self, x, pos, mask):
            q, k, v = self.qkv(x).split(self.heads * self.hd, dim=-1)
            shape = (1, 1, self.heads, self.hd)
            q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
            self.k_cache.index_copy_(2, pos, k)
            self.v_cache.index_copy_(2, pos, v)
            o = torch.nn.functional.scaled_dot_product_attention(q, self.k_cache, self.v_cache,
                                                                 attn_mask=mask)
            return self.out(o.transpose(1, 2).reshape(1, 1, -1))


def slice_write_step(cache, rows, pos):
    cache[:, pos:pos + rows.size(1)] = rows * 2
    return cache.sum(dim=1)


@skip_message
class Cuda(CompileCase):
    rtol = 1e-4
    atol = 1e-5

    def setUp(self):
        torch.manual_seed(0)
        torch.backends.cuda.matmul.allow_tf32 = False
        self.dev = torch.device("cuda:0")

    def decode_inputs(self, pos, s_max=64):
        mask = torch.full((1, 1, 1, s_max), float("-inf"), device=self.dev)
        mask[..., :pos + 1] = 0
        return (torch.randn(1, 1, 32, device=self.dev),
                torch.tensor([pos], device=self.dev), mask)

    def test_buffer_cache_written_in_place_over_positions(self):
        eager = CachedAttention().to(self.dev).eval()
        mine = CachedAttention().to(self.dev).eval()
        mine.load_state_dict(eager.state_dict())
        compiled = inplace.compile(mine, self.decode_inputs(0))
        self.assertEqual(compiled.device, self.dev)
        ptr = mine.k_cache.data_ptr()
        self.assertIn("k_cache", {name for name, _ in compiled.aliased_io.values()})
        for pos in [0, 1, 2, 9, 3, 63, 30]:  # every position through one engine
            args = self.decode_inputs(pos)
            want = eager(*args)
            got = compiled(*args)
            self.assertEqual(got.device, self.dev)
            self.assertSame(got, want, "pos %d output" % pos)
            self.assertSame(compiled.k_cache, eager.k_cache, "pos %d k_cache" % pos)
            self.assertSame(compiled.get_buffer("v_cache"), eager.v_cache, "pos %d v_cache" % pos)
            self.assertEqual(mine.k_cache.data_ptr(), ptr)

    def test_user_cache_slice_write_at_runtime_positions_aliased_and_copy_back(self):
        for alias in (True, False):
            example = (torch.zeros(2, 16, 8, device=self.dev),
                       torch.randn(2, 1, 8, device=self.dev), 0)
            compiled = inplace.compile(slice_write_step, example, dynamic={"rows": {1: 4}},
                                       value_ranges={"pos": (0, 15)}, alias=alias)
            cache_c = torch.zeros(2, 16, 8, device=self.dev)
            cache_e = cache_c.clone()
            ptr = cache_c.data_ptr()
            for pos, n in [(0, 1), (1, 4), (5, 2), (15, 1), (7, 0), (12, 3)]:
                rows = torch.randn(2, n, 8, device=self.dev)
                want = slice_write_step(cache_e, rows, pos)
                got = compiled(cache_c, rows.clone(), pos)
                what = "alias=%s pos=%d n=%d" % (alias, pos, n)
                self.assertSame(got, want, what + " output")
                self.assertSame(cache_c, cache_e, what + " cache", exact=True)
                self.assertEqual(cache_c.data_ptr(), ptr)

    def test_calls_on_a_side_stream(self):
        compiled = inplace.compile(lambda a, b: torch.relu(a @ b + 1.0),
                                   (torch.randn(64, 64, device=self.dev),
                                    torch.randn(64, 64, device=self.dev)))
        side = torch.cuda.Stream()
        a, b = torch.randn(64, 64, device=self.dev), torch.randn(64, 64, device=self.dev)
        with torch.cuda.stream(side):
            got = compiled(a, b)  # enqueued on `side`, ordered after the work queued there
        side.synchronize()
        self.assertSame(got, torch.relu(a @ b + 1.0), "side stream result")

    def test_the_stream_a_call_takes_is_torchs_current_one(self):
        # The cached getter (torch's raw one where torch has it) follows torch.cuda.stream().
        from inplace import compiled as compiled_module
        get = compiled_module._stream_getter(self.dev)
        self.assertEqual(get(), torch.cuda.current_stream(self.dev).cuda_stream)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            self.assertEqual(get(), side.cuda_stream)
            self.assertEqual(compiled_module._stream_of(self.dev), side.cuda_stream)
        self.assertEqual(compiled_module._stream_of(torch.device("cuda")),
                         torch.cuda.current_stream().cuda_stream)

    def test_the_fast_host_path_checks_the_device_index_and_words_refusals_as_before(self):
        compiled = inplace.compile(lambda c, x: c.add_(x) * 2, (torch.zeros(4, device=self.dev),
                                                               torch.ones(4, device=self.dev)))
        c = torch.zeros(4, device=self.dev)
        self.assertSame(compiled(c, torch.ones(4, device=self.dev)), torch.full((4,), 2.0,
                        device=self.dev), "a call")
        with self.assertRaises(inplace.InputError) as e:
            compiled(c, torch.ones(4))
        self.assertEqual(str(e.exception), "input 'x' is on cpu, but the engine runs on cuda:0")
        with self.assertRaises(inplace.InputError) as e:
            compiled(c, torch.ones(4, device=self.dev, dtype=torch.float64))
        self.assertEqual(str(e.exception),
                         "input 'x': expected dtype torch.float32, got torch.float64")
        if torch.cuda.device_count() > 1:
            with self.assertRaises(inplace.InputError) as e:
                compiled(c, torch.ones(4, device="cuda:1"))
            self.assertEqual(str(e.exception),
                             "input 'x' is on cuda:1, but the engine runs on cuda:0")

    def test_results_are_the_callers_own_and_calls_do_not_wait_for_the_device(self):
        # The engine's output buffers are rewritten by every call: each result is a torch copy
        # (the caching allocator, the call's stream), which the next calls leave as it was.
        # And no call waits for the device: many calls are queued behind a long kernel on the
        # stream, and return before it completes.
        compiled = inplace.compile(lambda a, b: torch.tanh(a @ b) * 2.0,
                                   (torch.randn(32, 32, device=self.dev),
                                    torch.randn(32, 32, device=self.dev)))
        b = torch.randn(32, 32, device=self.dev)
        xs = [torch.randn(32, 32, device=self.dev) for _ in range(8)]
        got = [compiled(x, b) for x in xs]
        self.assertEqual(len({g.data_ptr() for g in got}), len(got))
        for x, g in zip(xs, got):
            self.assertSame(g, torch.tanh(x @ b) * 2.0, "a result after later calls")
        torch.cuda.synchronize()
        big = torch.randn(8192, 8192, device=self.dev)
        for _ in range(3):
            compiled(xs[0], b)  # warm: captured graph, memory in torch's cache
        torch.cuda.synchronize()
        slow = torch.cuda.Event()
        _ = big @ big @ big @ big  # tens of milliseconds of work ahead of the calls
        for _ in range(20):
            out = compiled(xs[0], b)
        slow.record()
        self.assertFalse(slow.query(), "the calls waited for the device")
        torch.cuda.synchronize()
        self.assertSame(out, torch.tanh(xs[0] @ b) * 2.0, "the last queued call")

    def test_copy_outputs_false_returns_the_engines_buffers(self):
        # copy_outputs=False: each result is the engine's own output buffer (one address for
        # every call, as torch.compile's CUDA graphs return theirs), right at its call and
        # rewritten by the next; switching back gives the caller's own tensors again.
        compiled = inplace.compile(lambda a, b: torch.tanh(a @ b) * 2.0,
                                   (torch.randn(32, 32, device=self.dev),
                                    torch.randn(32, 32, device=self.dev)),
                                   copy_outputs=False)
        self.assertFalse(compiled.copy_outputs)
        b = torch.randn(32, 32, device=self.dev)
        ptrs = set()
        for _ in range(5):
            x = torch.randn(32, 32, device=self.dev)
            got = compiled(x, b)
            ptrs.add(got.data_ptr())
            self.assertSame(got, torch.tanh(x @ b) * 2.0, "a result at its call")
        self.assertEqual(len(ptrs), 1)
        first = compiled(x, b)
        kept = first.clone()
        compiled(torch.randn(32, 32, device=self.dev), b)
        torch.cuda.synchronize()
        self.assertFalse(torch.equal(first, kept), "the next call rewrote the buffer")
        # A result passed back in would be read while the call rewrites it: refused, named.
        last = compiled(x, b)
        with self.assertRaisesRegex(inplace.native().Error, "input '.+' is \\(a view of\\) a "
                                    "result of the previous call"):
            compiled(last, b)
        again = last.clone()
        want = torch.tanh(again @ b) * 2.0
        self.assertSame(compiled(again, b), want, "a clone of it")
        compiled.copy_outputs = True
        a1, a2 = compiled(x, b), compiled(x, b)
        self.assertNotEqual(a1.data_ptr(), a2.data_ptr())

    def test_save_load_on_the_device(self):
        mine = CachedAttention().to(self.dev).eval()
        eager = CachedAttention().to(self.dev).eval()
        eager.load_state_dict(mine.state_dict())
        compiled = inplace.compile(mine, self.decode_inputs(0))
        with tempfile.TemporaryDirectory() as d:
            path = inplace.save(compiled, os.path.join(d, "attn.inplace"))
            loaded = inplace.load(path)
        self.assertEqual(loaded.device, self.dev)
        self.assertEqual(loaded.aliased_io, compiled.aliased_io)
        for pos in (0, 1, 2):
            args = self.decode_inputs(pos)
            self.assertSame(loaded(*args), eager(*args), "loaded pos %d" % pos)
            self.assertSame(loaded.get_buffer("k_cache"), eager.k_cache, "loaded k_cache")

    def test_inputs_on_the_wrong_device_are_refused_naming_them(self):
        compiled = inplace.compile(lambda c, x: c.add_(x), (torch.zeros(4, device=self.dev),
                                                           torch.ones(4, device=self.dev)))
        with self.assertRaisesRegex(inplace.InputError, "input 'x' is on cpu.*cuda:0"):
            compiled(torch.zeros(4, device=self.dev), torch.ones(4))
        with self.assertRaisesRegex(inplace.InputError, "input 'x' is on cpu.*compiled for cuda"):
            inplace.compile(lambda c, x: c.add_(x), (torch.zeros(4, device=self.dev),
                                                     torch.ones(4)))


if __name__ == "__main__":
    unittest.main()
