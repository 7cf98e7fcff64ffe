"""Session.generate (prefill, then a decode loop in C++ with no Python in it) against a Python
loop of eager steps of the same module: greedy token for token (a prompt longer than the prefill
bound is prefilled in chunks), seeded sampling reproducible, sampled tokens in torch.softmax's
proportions (every token, a nucleus), top_k 1 greedy, stop tokens, the
streaming callback (called with the GIL; returning False stops; an exception in it is raised).

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import copy
import unittest

from compile_harness import requires_extension
from harness import torch

if torch is not None:
    import torch.nn as nn
    import inplace
    from test_programs import D, P_MAX, S_MAX, Decoder

    VOCAB = 11

    class TokenDecoder(nn.Module):
        """forward(ids [1, T], positions [T]) -> logits [1, T, VOCAB]: the generation convention."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, D)
            self.body = Decoder()
            self.body.head = nn.Linear(D, VOCAB)

        def forward(self, ids, positions):
            return self.body(self.embed(ids), positions)



@requires_extension
class GenerateAgainstEager(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(1)
        cls.model = TokenDecoder().eval()
        cls.program = inplace.compile_program(cls.model, {
            "prefill": ((torch.tensor([[1, 2, 3]]), torch.arange(3)),
                        {"ids": {1: P_MAX}, "positions": {0: P_MAX}}),
            "decode": ((torch.tensor([[4]]), torch.tensor([3])),),
        })

    def eager_greedy(self, prompt, n):
        m = copy.deepcopy(self.model)
        out, pos = [], len(prompt)
        with torch.no_grad():
            logits = m(torch.tensor([prompt]), torch.arange(len(prompt)))
            for k in range(n):
                if k:
                    logits = m(torch.tensor([[out[-1]]]), torch.tensor([pos]))
                    pos += 1
                out.append(int(logits[0, -1].argmax()))
        return out

    def generate(self, prompt, n, **kw):
        return self.program.new_session().generate(prompt, n, **kw)

    def test_greedy_equals_eager_steps(self):
        prompt = [3, 1, 4, 1, 5]
        want = self.eager_greedy(prompt, S_MAX - len(prompt))
        streamed = []
        r = self.generate(prompt, S_MAX - len(prompt), callback=streamed.append)
        self.assertEqual(r.tokens, want)
        self.assertEqual(streamed, want)
        self.assertEqual(r.stopped_by, "max_new_tokens")
        self.assertGreater(r.time_to_first_token_s, 0)
        self.assertGreater(r.tokens_per_second, 0)
        self.assertGreater(len(set(want)), 1)  # not one token repeated

    def test_prompt_longer_than_prefill_bound(self):
        prompt = [(i * 7) % VOCAB for i in range(P_MAX + 1)]
        self.assertEqual(self.generate(torch.tensor(prompt), 3).tokens,
                         self.eager_greedy(prompt, 3))

    def test_seeded_sampling_reproducible_and_top_k_1_greedy(self):
        prompt, n = [2, 7, 1], 10
        kw = dict(temperature=2.0, top_k=8, top_p=0.95)
        a = self.generate(prompt, n, seed=5, **kw).tokens
        self.assertEqual(a, self.generate(prompt, n, seed=5, **kw).tokens)
        others = [self.generate(prompt, n, seed=s, **kw).tokens for s in range(6, 10)]
        self.assertTrue(any(o != a for o in others))
        greedy = self.eager_greedy(prompt, n)
        self.assertEqual(self.generate(prompt, n, temperature=2.0, top_k=1, seed=5).tokens, greedy)

    def test_sampled_first_tokens_follow_torch_softmax(self):
        # The first token after the prompt, over many seeds, against torch.softmax of the eager
        # model's logits at the temperature: every token (top_p 1), and the nucleus of 0.6 (the
        # tokens past it never drawn, the others in proportion).
        prompt, temperature, draws = [3, 1, 4], 1.5, 1500
        with torch.no_grad():
            logits = copy.deepcopy(self.model)(torch.tensor([prompt]), torch.arange(3))[0, -1]
        p = torch.softmax(logits.double() / temperature, 0)
        order = torch.argsort(p, descending=True)
        for top_p in (1.0, 0.6):
            keep = int((torch.cumsum(p[order], 0) < top_p).sum()) + 1 if top_p < 1 else VOCAB
            want = torch.zeros(VOCAB, dtype=torch.float64)
            want[order[:keep]] = p[order[:keep]] / p[order[:keep]].sum()
            counts = torch.zeros(VOCAB, dtype=torch.float64)
            for seed in range(draws):
                counts[self.generate(prompt, 1, temperature=temperature, top_p=top_p,
                                     seed=seed).tokens[0]] += 1
            freq = counts / draws
            for t in range(VOCAB):
                sigma = float((want[t] * (1 - want[t]) / draws).sqrt())
                self.assertLessEqual(abs(float(freq[t] - want[t])), 5 * sigma + 1e-9,
                                     f"token {t} top_p {top_p}: {freq.tolist()} vs {want.tolist()}")
            self.assertGreater(int((counts > 0).sum()), 1)

    def test_stop_tokens_and_callback_stop(self):
        prompt = [3, 1, 4, 1, 5]
        greedy = self.eager_greedy(prompt, 8)
        r = self.generate(prompt, 8, stop_tokens=[greedy[2]])
        self.assertEqual(r.tokens, greedy[:greedy.index(greedy[2]) + 1])
        self.assertEqual(r.stopped_by, "stop_token")
        seen = []
        r = self.generate(prompt, 8, callback=lambda t: seen.append(t) or len(seen) < 3)
        self.assertEqual(r.tokens, greedy[:3])
        self.assertEqual(r.stopped_by, "callback")

        def boom(token):
            raise KeyError("from the callback")
        with self.assertRaisesRegex(KeyError, "from the callback"):
            self.generate(prompt, 8, callback=boom)

    def test_program_off_the_convention_is_refused(self):
        m = Decoder().eval()
        program = inplace.compile_program(m, {"decode": ((torch.randn(1, 1, D), torch.tensor([0])),)})
        with self.assertRaisesRegex(inplace.Error, "method 'decode' takes ids 'x'"):
            program.new_session().generate([1], 2)


if __name__ == "__main__":
    unittest.main()
