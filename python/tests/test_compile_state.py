"""inplace.compile and state: a streaming cache over calls writing 1, 5 and 0 rows; a slice write at a runtime
position; a module whose buffer persists on the compiled module under its own name; identity and data_ptr of
mutated inputs; declared aliasing (mutated_inputs); save -> load giving the same results and
the same aliased_io; errors naming the input.
"""
import os
import tempfile
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import inplace


@requires_extension
class Streaming(CompileCase):
    def test_one_cache_over_calls_writing_1_5_and_0_rows(self):
        # One engine, a dynamic row count (up to 8): the rows go where `idx` says.
        def step(cache, rows, idx):
            cache.index_copy_(1, idx, rows)
            return cache.sum(dim=1)

        compiled = inplace.compile(step, (torch.zeros(2, 16, 3), torch.randn(2, 1, 3),
                                          torch.tensor([0])),
                                   dynamic={"rows": {1: 8}, "idx": {0: 8}})
        cache_c = torch.zeros(2, 16, 3)
        cache_e = cache_c.clone()
        ptr = cache_c.data_ptr()
        pos = 0
        for n in (1, 5, 0):
            rows, idx = torch.randn(2, n, 3), torch.arange(pos, pos + n)
            want = step(cache_e, rows, idx)
            got = compiled(cache_c, rows.clone(), idx)
            self.assertSame(got, want, "rows=%d output" % n)
            self.assertSame(cache_c, cache_e, "rows=%d cache" % n, exact=True)
            self.assertEqual(cache_c.data_ptr(), ptr)
            pos += n
        with self.assertRaisesRegex(inplace.InputError, "input 'rows'.*up to"):
            compiled(cache_c, torch.randn(2, 9, 3), torch.arange(9))

    def test_slice_write_at_a_runtime_position_over_calls(self):
        # cache[:, pos:pos + n] = rows, pos a runtime value and n a dynamic dim: one engine for
        # every position and row count, exact against eager (cache contents included); a slice
        # running past the end is refused as eager refuses it, with the cache untouched.
        def step(cache, rows, pos):
            cache[:, pos:pos + rows.size(1)] = rows
            return cache.sum(dim=1)

        compiled = inplace.compile(step, (torch.zeros(2, 16, 3), torch.randn(2, 1, 3),
                                          torch.tensor(0)),
                                   dynamic={"rows": {1: 8}})
        cache_c = torch.zeros(2, 16, 3)
        cache_e = cache_c.clone()
        ptr = cache_c.data_ptr()
        for pos, n in ((0, 1), (1, 5), (6, 0), (6, 8), (15, 1), (3, 2)):
            rows = torch.randn(2, n, 3)
            want = step(cache_e, rows, torch.tensor(pos))
            got = compiled(cache_c, rows.clone(), torch.tensor(pos))
            self.assertSame(got, want, "pos=%d rows=%d output" % (pos, n))
            self.assertSame(cache_c, cache_e, "pos=%d rows=%d cache" % (pos, n), exact=True)
            self.assertEqual(cache_c.data_ptr(), ptr)
        before = cache_c.clone()
        with self.assertRaises(RuntimeError):
            step(cache_e.clone(), torch.randn(2, 4, 3), torch.tensor(14))  # eager refuses
        with self.assertRaises(inplace.Error):
            compiled(cache_c, torch.randn(2, 4, 3), torch.tensor(14))
        self.assertTrue(torch.equal(cache_c, before))

    def test_buffer_module_state_persists_under_its_own_names(self):
        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("k_cache", torch.zeros(1, 6, 4))

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer(), Layer()])
                self.proj = nn.Linear(4, 4)

            def forward(self, x, pos):
                y = self.proj(x)
                for i, layer in enumerate(self.layers):
                    layer.k_cache.index_copy_(1, pos, y * (i + 1))
                return self.layers[1].k_cache.sum(dim=1)

        model = Decoder()
        eager = Decoder()
        eager.load_state_dict(model.state_dict())
        compiled = inplace.compile(model, (torch.randn(1, 1, 4), torch.tensor([0])))
        buf = model.layers[0].k_cache
        for t in range(4):
            x = torch.randn(1, 1, 4)
            want = eager(x, torch.tensor([t]))
            got = compiled(x, torch.tensor([t]))
            self.assertSame(got, want, "step %d" % t)
            for i in range(2):
                self.assertSame(compiled.layers[i].k_cache, eager.layers[i].k_cache,
                                "step %d layer %d cache" % (t, i))
        self.assertIs(compiled.layers[0].k_cache, buf)
        self.assertIs(compiled.get_buffer("layers.0.k_cache"), buf)
        self.assertEqual(buf.data_ptr(), model.layers[0].k_cache.data_ptr())
        self.assertEqual(sorted(dict(compiled.named_buffers())),
                         ["layers.0.k_cache", "layers.1.k_cache"])
        self.assertTrue(any(inp == "layers.0.k_cache" for inp, _ in compiled.aliased_io.values()),
                        compiled.aliased_io)


@requires_extension
class Identity(CompileCase):
    def test_mutated_input_returned_is_the_same_object(self):
        def f(x, y):
            x.add_(y)
            return x, y * 2

        compiled = inplace.compile(f, (torch.randn(3), torch.randn(3)))
        for _ in range(3):
            x, y = torch.randn(3), torch.randn(3)
            ptr, want = x.data_ptr(), x + y
            out, doubled = compiled(x, y)
            self.assertIs(out, x)
            self.assertEqual(x.data_ptr(), ptr)
            self.assertTrue(torch.allclose(x, want))
            self.assertTrue(torch.allclose(doubled, y * 2))

    def test_two_threads_share_one_compiled_program(self):
        import threading

        def f(x, y):
            x.mul_(y)
            return x.sum()

        compiled = inplace.compile(f, (torch.randn(64), torch.randn(64)))
        failures = []

        def worker(seed):
            g = torch.Generator().manual_seed(seed)
            for _ in range(50):
                x, y = torch.randn(64, generator=g), torch.randn(64, generator=g)
                want_x = x * y
                s = compiled(x, y)
                if not (torch.allclose(x, want_x) and torch.allclose(s, want_x.sum(), atol=1e-4)):
                    failures.append(seed)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])

    def test_declared_mutation_writes_the_input(self):
        def f(state, x):
            return state * 0.5 + x, x.sum()

        compiled = inplace.compile(f, (torch.randn(4), torch.randn(4)), mutated_inputs={"state": 0})
        state, x = torch.randn(4), torch.randn(4)
        want = state * 0.5 + x
        ptr = state.data_ptr()
        out, s = compiled(state, x)
        self.assertIs(out, state)
        self.assertEqual(state.data_ptr(), ptr)
        self.assertTrue(torch.allclose(state, want))
        self.assertEqual(compiled.aliased_io, {0: ("state", "user")})


@requires_extension
class SaveLoad(CompileCase):
    def test_save_load_same_results_and_aliased_io(self):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
                self.register_buffer("ring", torch.zeros(8, 4))

            def forward(self, x, cache, pos):
                self.ring[pos % 8] = self.lin(x)
                cache[pos] = x
                return self.ring.mean(dim=0), cache

        model = M()
        compiled = inplace.compile(model, (torch.randn(4), torch.zeros(8, 4), torch.tensor(0)))
        with tempfile.TemporaryDirectory() as d:
            path = inplace.save(compiled, os.path.join(d, "m.inplace"))
            loaded = inplace.load(path)
            self.assertEqual(loaded.aliased_io, compiled.aliased_io)
            self.assertEqual(loaded.input_names, compiled.input_names)
            cache_a, cache_b = torch.zeros(8, 4), torch.zeros(8, 4)
            for t in range(5):
                x = torch.randn(4)
                a = compiled(x, cache_a, torch.tensor(t))
                b = loaded(x, cache_b, torch.tensor(t))
                self.assertSame(b[0], a[0], "step %d output" % t, exact=True)
                self.assertIs(b[1], cache_b)
                self.assertSame(cache_b, cache_a, "step %d cache" % t, exact=True)
                self.assertSame(loaded.get_buffer("ring"), model.ring, "step %d ring" % t,
                                exact=True)
            self.assertIs(compiled.get_buffer("ring"), model.ring)
            self.assertIs(compiled.ring, model.ring)


@requires_extension
class Errors(CompileCase):
    def setUp(self):
        def f(cache, k):
            cache[:, 0] = k
            return cache

        self.compiled = inplace.compile(f, (torch.zeros(2, 4), torch.randn(2)))

    def test_wrong_dtype_names_the_input(self):
        with self.assertRaisesRegex(inplace.InputError, "input 'k'.*float32.*float64"):
            self.compiled(torch.zeros(2, 4), torch.randn(2, dtype=torch.float64))

    def test_wrong_shape_names_the_input(self):
        with self.assertRaisesRegex(inplace.InputError, r"input 'cache'.*\[2, 4\].*\[3, 4\]"):
            self.compiled(torch.zeros(3, 4), torch.randn(2))

    def test_wrong_device_names_the_input(self):
        with self.assertRaisesRegex(inplace.InputError, "input 'cache' is on meta"):
            self.compiled(torch.zeros(2, 4, device="meta"), torch.randn(2))

    def test_aliased_input_that_needs_a_copy_is_refused(self):
        cache = torch.zeros(4, 2).t()  # non-contiguous: writing a copy would lose the write
        before = cache.clone()
        with self.assertRaisesRegex(inplace.Error, "cache"):
            self.compiled(cache, torch.randn(2))
        self.assertTrue(torch.equal(cache, before))

    def test_wrong_input_count(self):
        with self.assertRaisesRegex(TypeError, "takes 2 inputs"):
            self.compiled(torch.zeros(2, 4))


if __name__ == "__main__":
    unittest.main()


@requires_extension
class ExportedFileRunsInTheCli(CompileCase):
    def test_export_then_inplace_exec_compiled_equals_eager(self):
        import subprocess
        from harness import BIN
        if not os.path.exists(BIN):
            self.skipTest("inplace binary missing")

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
                self.register_buffer("cache", torch.zeros(3, 4))

            def forward(self, x, pos):
                self.cache[pos] = self.lin(x)
                return self.cache.sum(dim=0)

        model = M()
        x, pos = torch.randn(4), torch.tensor(1)
        with tempfile.TemporaryDirectory() as d:
            path = inplace.export(model, (x, pos), os.path.join(d, "g.json"))
            inplace.write_inputs(os.path.join(d, "in.safetensors"), {"x": x, "pos": pos})
            proc = subprocess.run([BIN, "exec", path, "--inputs", os.path.join(d, "in.safetensors"),
                                   "--out", os.path.join(d, "out.safetensors"), "--mode", "compiled"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            out = inplace.read_outputs(os.path.join(d, "out.safetensors"))
        with torch.no_grad():
            want = model(x, pos)
        self.assertSame(out["output.0"], want, "output")
        self.assertSame(out["buffer.cache"], model.cache, "buffer")
