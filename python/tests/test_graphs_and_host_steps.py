"""The CUDA graph switch and counters of a compiled program, and steps on the host.

Everywhere: ``inplace.compile(..., cuda_graph=)`` takes a bool (a cpu engine has no graphs and
ignores it), so does ``copy_outputs=`` (the cpu's results are fresh either way),
``compiled.stats()`` counts the calls, ``strict_device`` compiles what the cpu runs.
On the GPU machine (skipped elsewhere, saying why): a module called on the same tensors replays
the graph captured at its second call from its third call on, with the results of graphs off and
of eager PyTorch; an op with no CUDA kernel (cumsum) runs on the host with a warning naming it,
equals eager, and turns graphs off (counted); strict_device refuses it.
"""
import unittest

from compile_harness import CompileCase, requires_extension, torch
from test_compile_cuda import skip_message

if torch is not None:
    import inplace
    import torch.nn as nn

    class Decoder(nn.Module):
        """A cache written at a position tensor, then attention-like reads of the whole cache."""

        def __init__(self, d=16, s_max=32):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.register_buffer("cache", torch.zeros(s_max, d))

        def forward(self, x, pos):
            self.cache.index_copy_(0, pos, self.proj(x))
            w = torch.softmax(self.cache @ x.t(), dim=0)
            return (w * self.cache).sum(dim=0, keepdim=True)


def scan(x):
    return torch.cumsum(x * 2.0, 0) + 1.0


@requires_extension
class GraphSwitchOnTheCpu(CompileCase):
    def test_the_switch_takes_a_bool_and_a_cpu_engine_ignores_it(self):
        x = torch.randn(4, 4)
        for graph in (True, False):
            compiled = self.check(lambda a: torch.relu(a) * 2, (x,), calls=((x,),),
                                  cuda_graph=graph)
            self.assertFalse(compiled.cuda_graph)  # no graphs on the cpu
            compiled.cuda_graph = True  # ignored, not refused
            self.assertEqual(compiled.stats(), {"calls": 2, "host_scalar_reads": 0,
                                                "prepared_inputs": 0, "staged_inputs": 0})
            self.assertEqual(compiled.host_steps, [])
        with self.assertRaisesRegex(TypeError, "cuda_graph: expected True or False, got 'on'"):
            inplace.compile(lambda a: a + 1, (x,), cuda_graph="on")

    def test_copy_outputs_takes_a_bool_and_cpu_results_stay_fresh(self):
        # The cpu's results are fresh tensors whatever copy_outputs says (on cuda, False hands
        # out the engine's own buffers: test_compile_cuda.py).
        x = torch.randn(4, 4)
        compiled = self.check(lambda a: torch.relu(a) * 2, (x,), calls=((x,),),
                              copy_outputs=False)
        self.assertFalse(compiled.copy_outputs)
        a, b = compiled(x), compiled(torch.randn(4, 4))
        self.assertNotEqual(a.data_ptr(), b.data_ptr())
        self.assertSame(a, torch.relu(x) * 2, "a result")
        compiled.copy_outputs = True
        self.assertTrue(compiled.copy_outputs)
        with self.assertRaisesRegex(TypeError, "copy_outputs: expected True or False, got 1"):
            inplace.compile(lambda a: a + 1, (x,), copy_outputs=1)
        with self.assertRaisesRegex(TypeError, "copy_outputs: expected True or False"):
            compiled.copy_outputs = "no"

    def test_strict_device_compiles_what_the_cpu_runs(self):
        self.check(scan, (torch.randn(5),), calls=((torch.randn(5),),), strict_device=True)


@skip_message
class GraphsAndHostStepsOnCuda(CompileCase):
    rtol = 1e-4
    atol = 1e-5

    def setUp(self):
        torch.manual_seed(0)
        torch.backends.cuda.matmul.allow_tf32 = False
        self.dev = torch.device("cuda:0")

    def run_decoder(self, graph):
        torch.manual_seed(0)  # each switch setting on the same weights and inputs
        eager = Decoder().to(self.dev).eval()
        mine = Decoder().to(self.dev).eval()
        mine.load_state_dict(eager.state_dict())
        x = torch.randn(1, 16, device=self.dev)
        pos = torch.zeros(1, dtype=torch.int64, device=self.dev)
        compiled = inplace.compile(mine, (x, pos), cuda_graph=graph)
        self.assertEqual(compiled.cuda_graph, graph)
        outs = []
        for p in range(6):  # the same tensors, new values: the bound addresses stay
            x.copy_(torch.randn(1, 16, device=self.dev))
            pos.fill_(p)
            with torch.no_grad():
                want = eager(x.clone(), pos.clone())
            got = compiled(x, pos).clone()
            self.assertSame(got, want, "graph=%s call %d" % (graph, p))
            self.assertSame(mine.cache, eager.cache, "graph=%s call %d cache" % (graph, p))
            outs.append(got)
        return compiled, outs

    def test_a_decoder_replays_its_graph_from_the_third_call(self):
        on, outs_on = self.run_decoder(True)
        off, outs_off = self.run_decoder(False)
        stats = on.stats()
        self.assertEqual(stats["calls"], 6)
        self.assertEqual(stats["graph_captures"], 1, stats)
        self.assertEqual(stats["graph_replays"], 4, stats)  # calls 3 to 6
        self.assertEqual(off.stats()["graph_captures"], 0)
        self.assertEqual(off.stats()["graph_replays"], 0)
        for k, (a, b) in enumerate(zip(outs_on, outs_off)):
            self.assertSame(a, b, "call %d: graphs on vs off" % k, exact=True)
        # Turned off on the compiled object: calls run directly from then on.
        on.cuda_graph = False
        x = torch.randn(1, 16, device=self.dev)
        on(x, torch.zeros(1, dtype=torch.int64, device=self.dev))
        self.assertEqual(on.stats()["graph_replays"], 4)

    def test_an_op_without_a_cuda_kernel_runs_on_the_host(self):
        x = torch.randn(7, device=self.dev)
        compiled = inplace.compile(scan, (x,))
        [(node, op, why, nbytes)] = compiled.host_steps
        self.assertEqual(op, "cumsum")
        self.assertIn("has no kernel for device 'cuda:0'", why)
        self.assertEqual(nbytes, 2 * 7 * 4)
        for _ in range(4):
            x.copy_(torch.randn(7, device=self.dev))
            self.assertSame(compiled(x), scan(x), "cumsum on the host")
        stats = compiled.stats()
        self.assertEqual(stats["host_steps"], 1)
        self.assertEqual(stats["graph_off_for_host_steps"], 1)
        self.assertEqual(stats["graph_captures"], 0)
        with self.assertRaisesRegex(inplace.native().Error, "op 'cumsum' has no kernel for device"):
            inplace.compile(scan, (x,), strict_device=True)


if __name__ == "__main__":
    unittest.main()
