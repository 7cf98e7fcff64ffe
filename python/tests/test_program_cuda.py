"""Programs on CUDA in process (skipped without a GPU): the decoder of test_programs.py with its
caches as buffers, prefill and decode compiled into one program for cuda; sessions on two torch
streams, interleaved, equal eager copies of the module; session.state(name) is a CUDA tensor
over the session's memory (no copy) at the same address across calls and reset(); a module
already on the GPU compiles to the same program; a saved program loads on the GPU and, with
device="cpu", on the host. On any machine: the device is recorded, and one the machine lacks is
refused at compile and at load.

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import copy
import os
import tempfile
import unittest

from compile_harness import requires_extension
from harness import torch

if torch is not None:
    import inplace
    from test_programs import D, P_MAX, Decoder


def _cuda_available():
    return torch is not None and torch.cuda.is_available()


if not _cuda_available() and os.environ.get("INPLACE_REQUIRE_CUDA") == "1":
    # scripts/test-hf.sh on a GPU machine: a skip would hide the comparison.
    raise RuntimeError("INPLACE_REQUIRE_CUDA=1 but torch sees no CUDA device")


@requires_extension
@unittest.skipUnless(_cuda_available(), "no CUDA device")
class ProgramOnCuda(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.model = Decoder().eval()
        cls.methods = {
            "prefill": ((torch.randn(1, 5, D), torch.arange(5)),
                        {"x": {1: P_MAX}, "positions": {0: P_MAX}}),
            "decode": ((torch.randn(1, 1, D), torch.tensor([5])),),
        }
        cls.program = inplace.compile_program(cls.model, cls.methods, device="cuda")
        cls.caches = [n for n, _ in cls.model.named_buffers() if n != "slots"]

    def replay(self, program, on_device_inputs=True):
        """Two sessions on two streams, interleaved (prefill, decode steps, a reset of one and a
        prompt of the maximum length), against eager copies of the module on the cpu."""
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        sessions = [program.new_session(), program.new_session()]
        eager = [copy.deepcopy(self.model) for _ in sessions]
        addresses = [{n: s.state(n).data_ptr() for n in self.caches} for s in sessions]
        position = [0, 0]

        def call(k, method, x, positions):
            inputs = (x.cuda(), positions.cuda()) if on_device_inputs else (x, positions)
            with torch.cuda.stream(streams[k]):
                got = getattr(sessions[k], method)(*inputs)
                got = got.cpu()  # ordered after the call on this stream
            with torch.no_grad():
                want = eager[k](x, positions)
            self.assertTrue(torch.allclose(got, want, atol=1e-5), (k, method, tuple(x.shape)))

        def prefill(k, length):
            call(k, "prefill", torch.randn(1, length, D), torch.arange(length))
            position[k] = length

        def decode(k):
            call(k, "decode", torch.randn(1, 1, D), torch.tensor([position[k]]))
            position[k] += 1

        prefill(0, 1)
        prefill(1, 5)
        for _ in range(3):
            decode(0)
            decode(1)
        with torch.cuda.stream(streams[0]):
            sessions[0].reset()
        eager[0] = copy.deepcopy(self.model)
        for n in self.caches:
            self.assertEqual(sessions[0].state(n).abs().sum().item(), 0.0, n)
        prefill(0, P_MAX)
        decode(0)
        torch.cuda.synchronize()
        for k, s in enumerate(sessions):
            s.synchronize()
            for n, buf in eager[k].named_buffers():
                if n == "slots":
                    continue
                state = s.state(n)
                self.assertTrue(state.is_cuda, n)
                self.assertEqual(state.data_ptr(), addresses[k][n], "%s moved in session %d" % (n, k))
                self.assertTrue(torch.allclose(state.cpu(), buf, atol=1e-5), (k, n))
        return sessions

    def test_sessions_on_two_streams_equal_eager_copies(self):
        self.assertEqual(self.program.device.type, "cuda")
        self.replay(self.program)

    def test_host_inputs_are_copied_to_the_device(self):
        self.replay(self.program, on_device_inputs=False)

    def test_graphs_on_and_off_give_the_same_results(self):
        s_on, s_off = self.program.new_session(), self.program.new_session()
        s_off.set_backend_option("cuda_graph", "off")
        x = torch.randn(1, 4, D, device="cuda")
        for s in (s_on, s_off):
            s.prefill(x, torch.arange(4, device="cuda"))
        pos = torch.zeros(1, dtype=torch.int64, device="cuda")
        step = torch.randn(1, 1, D, device="cuda")
        for p in range(4, 10):  # the same input tensors every step: the graph replays
            pos.fill_(p)
            a, b = s_on.decode(step, pos), s_off.decode(step, pos)
            self.assertTrue(torch.equal(a, b), p)
        self.assertEqual(s_off.stats("decode").get("graph_captures", 0), 0)
        self.assertEqual(s_on.stats("decode")["calls"], 6)

    def test_a_module_on_the_gpu_compiles_to_the_same_program(self):
        on_gpu = copy.deepcopy(self.model).cuda()
        methods = {m: (tuple(t.cuda() for t in spec[0]),) + tuple(spec[1:])
                   for m, spec in self.methods.items()}
        program = inplace.compile_program(on_gpu, methods)
        self.assertEqual(program.device.type, "cuda")
        self.replay(program)

    def test_saved_program_loads_on_the_gpu_and_on_the_cpu(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decoder.inplace")
            self.program.save(path)
            loaded = inplace.load_program(path)
            self.assertEqual(loaded.device.type, "cuda")
            self.replay(loaded)
            on_cpu = inplace.load_program(path, device="cpu")
            self.assertEqual(on_cpu.device.type, "cpu")
            s = on_cpu.new_session()
            x, positions = torch.randn(1, 3, D), torch.arange(3)
            with torch.no_grad():
                want = copy.deepcopy(self.model)(x, positions)
            self.assertTrue(torch.allclose(s.prefill(x, positions), want, atol=1e-5))


@requires_extension
class ProgramDeviceOnAnyMachine(unittest.TestCase):
    def test_the_device_is_recorded_and_one_this_machine_lacks_is_refused(self):
        torch.manual_seed(1)
        model = Decoder().eval()
        methods = {"decode": ((torch.randn(1, 1, D), torch.tensor([5])),)}
        program = inplace.compile_program(model, methods)
        self.assertEqual(program.device, torch.device("cpu"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decoder.inplace")
            program.save(path)
            self.assertEqual(inplace.load_program(path, device="cpu").device.type, "cpu")
            if _cuda_available() and not inplace._native.load().device_unavailable("cuda:0"):
                return
            with self.assertRaisesRegex(RuntimeError, "cannot compile a program for cuda:0"):
                inplace.compile_program(model, methods, device="cuda")
            with self.assertRaisesRegex(inplace.Error, "loading for device 'cuda:0'"):
                inplace.load_program(path, device="cuda")


if __name__ == "__main__":
    unittest.main()
