"""Threads on the cpu: a compiled module, a program's session and a loaded file share their host
kernels over ``threads`` threads (the products split their output rows, decode attention its
KV-head groups), so a call's results and the state it writes are bit for bit those of one
thread, on every position a decode loop passes; the count is checked and reported."""
import copy
import os
import tempfile
import unittest

from compile_harness import requires_extension, torch

if torch is not None:
    import torch.nn.functional as F

    import inplace

    S_MAX, HEADS, KV_HEADS, HEAD_DIM = 1024, 4, 2, 64
    DIM = HEADS * HEAD_DIM

    class Decode(torch.nn.Module):
        """One attention layer over a static cache prefix and an MLP: products large enough to
        be split (256 x 768, 256 x 1024) and a prefix long enough that attention is split."""

        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(DIM, (HEADS + 2 * KV_HEADS) * HEAD_DIM)
            self.up = torch.nn.Linear(DIM, 4 * DIM)
            self.down = torch.nn.Linear(4 * DIM, DIM)
            self.register_buffer("k_cache", torch.zeros(1, KV_HEADS, S_MAX, HEAD_DIM))
            self.register_buffer("v_cache", torch.zeros(1, KV_HEADS, S_MAX, HEAD_DIM))

        def forward(self, x, pos):
            q, k, v = self.qkv(x).split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM,
                                         KV_HEADS * HEAD_DIM], dim=-1)
            q = q.view(1, 1, HEADS, HEAD_DIM).transpose(1, 2)
            k = k.view(1, 1, KV_HEADS, HEAD_DIM).transpose(1, 2)
            v = v.view(1, 1, KV_HEADS, HEAD_DIM).transpose(1, 2)
            self.k_cache.index_copy_(2, pos, k)
            self.v_cache.index_copy_(2, pos, v)
            # As Hugging Face writes a static-cache decoder: repeat_kv, then attention over the
            # whole cache under the mask of the filled prefix (the engine attends the prefix).
            rep = HEADS // KV_HEADS
            keys = self.k_cache[:, :, None].expand(1, KV_HEADS, rep, S_MAX, HEAD_DIM).reshape(
                1, HEADS, S_MAX, HEAD_DIM)
            values = self.v_cache[:, :, None].expand(1, KV_HEADS, rep, S_MAX, HEAD_DIM).reshape(
                1, HEADS, S_MAX, HEAD_DIM)
            mask = (torch.arange(S_MAX) <= pos[:, None])[None, None]
            scores = (q @ keys.transpose(2, 3)) * HEAD_DIM ** -0.5
            scores = scores.masked_fill(~mask, float("-inf"))
            a = torch.softmax(scores, dim=-1) @ values
            h = x + a.transpose(1, 2).reshape(1, 1, DIM)
            return h + self.down(F.silu(self.up(h)))


def _filled(model, seed):
    """The model with every cache slot holding a value (a long prefix to attend over)."""
    g = torch.Generator().manual_seed(seed)
    model.k_cache.copy_(torch.randn(model.k_cache.shape, generator=g))
    model.v_cache.copy_(torch.randn(model.v_cache.shape, generator=g))
    return model


@requires_extension
class Threads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.model = _filled(Decode().eval(), 1)
        cls.example = (torch.randn(1, 1, DIM), torch.tensor([3]))

    def positions(self):
        g = torch.Generator().manual_seed(5)
        return [0, S_MAX - 1] + torch.randint(0, S_MAX, (10,), generator=g).tolist()

    def test_two_and_three_threads_give_one_threads_bits_at_every_position(self):
        models = {t: copy.deepcopy(self.model) for t in (1, 2, 3)}
        eager = copy.deepcopy(self.model)
        with torch.no_grad():
            compiled = {t: inplace.compile(m, self.example, threads=t) for t, m in models.items()}
            for t, c in compiled.items():
                self.assertEqual(c.threads, t)
            g = torch.Generator().manual_seed(7)
            for pos in self.positions():
                x = torch.randn(1, 1, DIM, generator=g)
                p = torch.tensor([pos])
                out = {t: c(x, p) for t, c in compiled.items()}
                want = eager(x, p)
                for t in (2, 3):
                    self.assertTrue(torch.equal(out[t], out[1]), "threads %d at %d" % (t, pos))
                    for name in ("k_cache", "v_cache"):
                        self.assertTrue(torch.equal(getattr(models[t], name),
                                                    getattr(models[1], name)), name)
                torch.testing.assert_close(out[1], want, rtol=1e-4, atol=1e-4)
                for name in ("k_cache", "v_cache"):  # the new rows are products: not bitwise
                    torch.testing.assert_close(getattr(models[1], name), getattr(eager, name),
                                               rtol=1e-4, atol=1e-5)

    def test_the_count_can_change_between_calls(self):
        m = copy.deepcopy(self.model)
        with torch.no_grad():
            c = inplace.compile(m, self.example, threads=1)
            x, p = torch.randn(1, 1, DIM), torch.tensor([900])
            first = c(x, p)
            c.threads = 4
            self.assertEqual(c.threads, 4)
            self.assertTrue(torch.equal(c(x, p), first))
            c.threads = None  # the default: torch's count
            self.assertEqual(c.threads, torch.get_num_threads())

    def test_a_bad_count_is_refused_naming_threads(self):
        for bad in (0, -2, 1.5, "2", True, 5000):
            with self.assertRaisesRegex(ValueError, "threads"):
                inplace.compile(copy.deepcopy(self.model), self.example, threads=bad)
        c = inplace.compile(copy.deepcopy(self.model), self.example, threads=2)
        with self.assertRaisesRegex(ValueError, "threads"):
            c.threads = 0
        self.assertEqual(c.threads, 2, "a refused count leaves the old one")
        with self.assertRaisesRegex(inplace.native().Error, "threads"):
            c._native.set_backend_options({"threads": "two"})

    def test_the_default_is_torchs_count(self):
        before = torch.get_num_threads()
        try:
            torch.set_num_threads(3)
            c = inplace.compile(copy.deepcopy(self.model), self.example)
            self.assertEqual(c.threads, 3)
        finally:
            torch.set_num_threads(before)

    def test_sessions_and_loaded_files_take_threads(self):
        with torch.no_grad():
            program = inplace.compile_program(copy.deepcopy(self.model),
                                              {"forward": (self.example,)})
            one, two = program.new_session(threads=1), program.new_session(threads=2)
            self.assertEqual((one.threads, two.threads), (1, 2))
            x, p = torch.randn(1, 1, DIM), torch.tensor([700])
            self.assertTrue(torch.equal(one.forward(x, p), two.forward(x, p)))
            self.assertTrue(torch.equal(one.state("k_cache"), two.state("k_cache")))
            two.threads = 3
            self.assertEqual(two.threads, 3)
            compiled = inplace.compile(copy.deepcopy(self.model), self.example, threads=1)
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "m.inplace")
                inplace.save(compiled, path)
                loaded = inplace.load(path)
                loaded.threads = 2
                self.assertEqual(loaded.threads, 2)
                torch.testing.assert_close(loaded(x, p), compiled(x, p), rtol=0, atol=0)


if __name__ == "__main__":
    unittest.main()
