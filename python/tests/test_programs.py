"""Programs against PyTorch: a decoder module with its key/value caches as buffers, traced
twice (a prefill of any prompt length up to a maximum, and a one-token decode), compiled into
one program (`inplace compile --method ...`) and replayed through `inplace run` with two
sessions: prompts of lengths 1, 5 and the maximum, decode steps, a reset in between. Every
output and every session's final state must equal the PyTorch module run the same way.

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import copy
import json
import math
import os
import subprocess
import tempfile
import unittest

from harness import BIN, torch

if torch is not None:
    import torch.nn as nn
    import torch.nn.functional as F
    import inplace

S_MAX, P_MAX, D, HEADS, HD, STEPS = 16, 12, 8, 2, 4, 3


def run(*args):
    proc = subprocess.run([BIN, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError("`inplace %s` exited %d: %s" % (" ".join(args), proc.returncode,
                                                            proc.stderr.strip()))
    return proc


if torch is not None:
    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(D, HEADS * HD)
            self.k = nn.Linear(D, HEADS * HD)
            self.v = nn.Linear(D, HEADS * HD)
            self.o = nn.Linear(HEADS * HD, D)
            self.register_buffer("k_cache", torch.zeros(1, HEADS, S_MAX, HD))
            self.register_buffer("v_cache", torch.zeros(1, HEADS, S_MAX, HD))

        def forward(self, x, positions, mask):
            t = x.size(1)
            q = self.q(x).view(1, t, HEADS, HD).transpose(1, 2)
            k = self.k(x).view(1, t, HEADS, HD).transpose(1, 2)
            v = self.v(x).view(1, t, HEADS, HD).transpose(1, 2)
            self.k_cache.index_copy_(2, positions, k)
            self.v_cache.index_copy_(2, positions, v)
            scores = torch.matmul(q, self.k_cache.transpose(-1, -2)) * (1.0 / math.sqrt(HD))
            scores = scores.masked_fill(mask, float("-inf"))
            attn = torch.matmul(F.softmax(scores, dim=-1), self.v_cache)
            return x + self.o(attn.transpose(1, 2).reshape(1, t, HEADS * HD))

    class Decoder(nn.Module):
        """forward(x [1, T, D], positions [T]): the rows of a prompt (T up to P_MAX) or one
        decode step; each layer writes its keys and values at `positions` of its caches."""

        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer(), Layer()])
            self.register_buffer("slots", torch.arange(S_MAX))
            self.head = nn.Linear(D, 5)

        def forward(self, x, positions):
            mask = self.slots.view(1, S_MAX) > positions.view(-1, 1)  # [T, S_MAX]
            for layer in self.layers:
                x = layer(x, positions, mask)
            return self.head(x)


@unittest.skipIf(torch is None and not os.environ.get("INPLACE_REQUIRE_TORCH"), "torch missing")
@unittest.skipIf(not os.path.exists(BIN), "inplace binary missing")
class ProgramAgainstPyTorch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="inplace_prog_")
        self.dir = self.tmp.name
        torch.manual_seed(0)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def compile_program(self, model):
        inplace.export_graph(model, (torch.randn(1, 5, D), torch.arange(5)),
                             self.path("prefill", "graph.json"), name="prefill")
        inplace.export_graph(model, (torch.randn(1, 1, D), torch.tensor([5])),
                             self.path("decode", "graph.json"), name="decode")
        program = self.path("decoder.inplace")
        run("compile", "--method", "prefill=" + self.path("prefill", "graph.json"),
            "--method", "decode=" + self.path("decode", "graph.json"),
            "--dynamic", "prefill.x:1:%d" % P_MAX, "--dynamic", "prefill.positions:0:%d" % P_MAX,
            "-o", program)
        return program

    def test_prefill_then_decode_in_two_sessions_equals_pytorch(self):
        model = Decoder().eval()
        program = self.compile_program(model)
        listing = run("inspect", program).stdout
        for name in ("method prefill", "method decode", "layers.0.k_cache", "layers.1.v_cache",
                     "runtime-owned"):
            self.assertIn(name, listing)
        self.assertNotIn("k_cache_1", listing)

        # The script: session a (prompt 1) and b (prompt 5) interleaved, then a reset of a and
        # a prompt of the maximum length; decode steps after every prefill.
        script, calls = [], []
        position = {}

        def call(session, method, x, positions):
            i = len(calls)
            inplace.write_inputs(self.path("in%d.safetensors" % i), {"x": x, "positions": positions})
            script.append({"session": session, "method": method, "inputs": "in%d.safetensors" % i})
            calls.append((session, x, positions))

        def prefill(session, length):
            call(session, "prefill", torch.randn(1, length, D), torch.arange(length))
            position[session] = length

        def decode(session):
            p = position[session]
            call(session, "decode", torch.randn(1, 1, D), torch.tensor([p]))
            position[session] = p + 1

        prefill("a", 1)
        prefill("b", 5)
        for _ in range(STEPS):
            decode("a")
            decode("b")
        script.append({"session": "a", "reset": True})
        calls.append(("a", None, None))
        prefill("a", P_MAX)
        for _ in range(STEPS):
            decode("a")
        with open(self.path("calls.json"), "w") as f:
            json.dump(script, f)
        run("run", program, "--calls", self.path("calls.json"), "--out", self.path("out.safetensors"))
        got = inplace.read_outputs(self.path("out.safetensors"))

        # PyTorch: one copy of the module per session, reset = a fresh copy.
        modules = {}
        with torch.no_grad():
            for i, (session, x, positions) in enumerate(calls):
                if x is None:
                    modules[session] = copy.deepcopy(model)
                    continue
                m = modules.setdefault(session, copy.deepcopy(model))
                want = m(x, positions)
                self.assertTrue(torch.allclose(got["call.%d.output.0" % i], want, atol=1e-5),
                                "call %d (session %s, %d rows)" % (i, session, x.size(1)))
        for session, m in modules.items():
            for name, buf in m.named_buffers():
                if name == "slots":
                    continue
                key = "session.%s.state.%s" % (session, name)
                self.assertIn(key, got)
                self.assertTrue(torch.allclose(got[key], buf, atol=1e-5), key)


if __name__ == "__main__":
    unittest.main()
