"""inplace.save writes one artifact, a program file: the module's buffers with their values at
save time, its parameters as weights, the Python call convention in its metadata. inplace.load
runs it with the user inputs alone (equal to the module in eager PyTorch), `inplace exec` runs
it with the user inputs alone, and an engine file with its state file beside it (what save
wrote before) still loads, its state bound once as a compiled module's is.
"""
import json
import os
import subprocess
import tempfile
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import inplace
    from inplace.safetensors_io import read_safetensors, write_safetensors

    class CacheModule(nn.Module):  # issue #30's failing `inplace exec`
        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(4, 3))
            self.l = nn.Linear(3, 3)

        def forward(self, x, p):
            self.cache.index_copy_(0, p, self.l(x))
            return self.cache.sum(0)

    class TwoCaches(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("k_cache", torch.zeros(8, 4))
            self.register_buffer("v_cache", torch.zeros(8, 4))

        def forward(self, k, v, pos, idx):
            self.k_cache.index_copy_(0, pos, k)
            self.v_cache.index_copy_(0, idx, v)
            return self.k_cache.sum() + self.v_cache.sum()


def write_old_pair(compiled, path):
    """What save wrote before programs: the engine file, and its state bindings beside it."""
    native = compiled._native
    native.save(path)
    bindings = native.state_bindings
    write_safetensors(path + ".state.safetensors",
                      {b: compiled._state[t].detach().clone() for b, t in bindings.items()},
                      {"inplace.user_inputs": json.dumps(compiled.input_names),
                       "inplace.state_targets": json.dumps(bindings),
                       "inplace.out_spec": "null", "inplace.scalar_outputs": "[]"})
    return path


def inputs(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(1, 3, generator=g), torch.tensor([step % 4])


@requires_extension
class OneArtifact(CompileCase):
    def setUp(self):
        torch.manual_seed(0)
        self.module = CacheModule().eval()
        self.compiled = inplace.compile(self.module, inputs(0))
        self.compiled(*inputs(0))  # the buffer is not all zeros when saved
        self.saved_cache = self.module.cache.clone()
        self.dir = tempfile.TemporaryDirectory()
        self.path = inplace.save(self.compiled, os.path.join(self.dir.name, "m.inplace"))

    def tearDown(self):
        self.dir.cleanup()

    def eager_copy(self):
        m = CacheModule().eval()
        m.load_state_dict(self.module.state_dict())
        m.cache.copy_(self.saved_cache)
        return m

    def test_save_writes_one_program_file(self):
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(8), b"INPLPROG")
        self.assertFalse(os.path.exists(self.path + ".state.safetensors"))
        program = inplace.load_program(self.path)
        self.assertEqual(program.methods, ["forward"])
        self.assertEqual(program.state_names, ["cache"])
        self.assertEqual(program.input_names("forward"), ["x", "p"])
        self.assertEqual(program._native.num_weights, 2)  # l.weight, l.bias

    def test_load_runs_with_the_user_inputs_like_eager(self):
        loaded = inplace.load(self.path)
        self.assertIsInstance(loaded, inplace.LoadedProgram)
        self.assertEqual(loaded.input_names, ["x", "p"])
        self.assertEqual(loaded.aliased_io, self.compiled.aliased_io)
        self.assertSame(loaded.get_buffer("cache"), self.saved_cache, "cache at load", exact=True)
        eager = self.eager_copy()
        with torch.no_grad():
            for step in range(1, 6):
                x, p = inputs(step)
                self.assertSame(loaded(x, p), eager(x, p), "step %d output" % step)
                self.assertSame(loaded.get_buffer("cache"), eager.cache, "step %d cache" % step)
        loaded.reset()
        self.assertSame(loaded.get_buffer("cache"), self.saved_cache, "after reset", exact=True)

    def test_exec_runs_the_file_with_the_user_inputs_alone(self):
        binary = os.environ.get("INPLACE_BIN")
        if not binary:
            self.skipTest("INPLACE_BIN is not set")
        x, p = inputs(2)
        write_safetensors(os.path.join(self.dir.name, "in.safetensors"), {"x": x, "p": p})
        out = os.path.join(self.dir.name, "out.safetensors")
        r = subprocess.run([binary, "exec", self.path, "--inputs",
                            os.path.join(self.dir.name, "in.safetensors"), "--out", out],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = read_safetensors(out)
        eager = self.eager_copy()
        with torch.no_grad():
            want = eager(x, p)
        self.assertSame(got["output.0"], want, "exec output")
        self.assertSame(got["state.cache"], eager.cache, "exec final cache")

    def test_an_engine_file_with_its_state_file_still_loads(self):
        # What save wrote before programs: the engine file, and the state bindings beside it.
        old = write_old_pair(self.compiled, os.path.join(self.dir.name, "old.inplace"))
        loaded = inplace.load(old)
        # The state is bound once (Session::bind_state): a call passes the user inputs alone.
        self.assertEqual(list(loaded._native.user_input_names), ["x", "p"])
        self.assertEqual(set(loaded._native.state_bindings), set(self.compiled._native.state_bindings))
        cache = loaded.get_buffer("cache")
        ptr = cache.data_ptr()
        eager = self.eager_copy()
        eager.cache.copy_(self.module.cache)
        self.assertSame(cache, eager.cache, "cache at load", exact=True)
        with torch.no_grad():
            for step in range(1, 4):
                x, p = inputs(step)
                self.assertSame(loaded(x, p), eager(x, p), "old file step %d" % step)
                self.assertSame(cache, eager.cache, "old file step %d cache" % step)
        self.assertEqual(loaded.get_buffer("cache").data_ptr(), ptr, "written in place")

    def test_an_old_pair_refuses_after_a_failed_call_until_reset(self):
        # The state bound once stays refused after a failed call that partly wrote it (the
        # session's rule), until reset().
        m = TwoCaches()
        example = (torch.ones(1, 4), torch.ones(1, 4), torch.tensor([0]), torch.tensor([0]))
        old = write_old_pair(inplace.compile(m, example), os.path.join(self.dir.name, "two.inplace"))
        loaded = inplace.load(old)
        self.assertEqual(list(loaded._native.user_input_names), ["k", "v", "pos", "idx"])
        with self.assertRaisesRegex(inplace.Error, "'k_cache_1'.*partly updated"):
            loaded(torch.ones(1, 4), torch.ones(1, 4), torch.tensor([3]), torch.tensor([9]))
        args = (torch.randn(1, 4), torch.randn(1, 4), torch.tensor([5]), torch.tensor([6]))
        with self.assertRaisesRegex(inplace.Error, "partly updated.*reset"):
            loaded(*args)
        eager = TwoCaches()
        eager.k_cache.copy_(loaded.get_buffer("k_cache"))  # accepted as it is
        loaded.reset()
        with torch.no_grad():
            self.assertSame(loaded(*args), eager(*args), "after reset")
        self.assertSame(loaded.get_buffer("k_cache"), eager.k_cache, "k_cache after reset")
        self.assertSame(loaded.get_buffer("v_cache"), eager.v_cache, "v_cache after reset")

    def test_load_reads_what_the_cli_compile_writes(self):
        # `inplace compile GRAPH.json` writes the same kind of file, without the Python call
        # convention: the method's inputs are the user's, its outputs the graph's.
        binary = os.environ.get("INPLACE_BIN")
        if not binary:
            self.skipTest("INPLACE_BIN is not set")
        eager = self.eager_copy()
        self.module.cache.copy_(self.saved_cache)
        graph = inplace.export(self.module, inputs(0), os.path.join(self.dir.name, "g.json"))
        compiled = os.path.join(self.dir.name, "c.inplace")
        r = subprocess.run([binary, "compile", graph, "-o", compiled], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        program = inplace.load_program(compiled)
        self.assertEqual(program.methods, ["forward"])
        self.assertEqual(program.state_names, ["cache"])
        loaded = inplace.load(compiled)
        self.assertEqual(loaded.input_names, ["x", "p"])
        with torch.no_grad():
            for step in range(1, 4):
                x, p = inputs(step)
                got = loaded(x, p)
                want = eager(x, p)
                self.assertSame(got, want, "step %d output" % step)
                self.assertSame(loaded.get_buffer("cache"), eager.cache, "step %d cache" % step)


if __name__ == "__main__":
    unittest.main()
