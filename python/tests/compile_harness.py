"""Shared by the in-process tests: compile a program with inplace.compile, call it and eager
PyTorch on clones of the same values, and compare every output, every input after the call,
every buffer of the module, and the identity of what the compiled program returns."""
import copy
import os
import unittest

from harness import torch

EXT_ERROR = None
if torch is not None:
    import inplace
    try:
        inplace.native()
    except ImportError as e:  # pragma: no cover - the extension is not built
        EXT_ERROR = str(e)


def requires_extension(cls):
    if torch is None and not os.environ.get("INPLACE_REQUIRE_TORCH"):
        return unittest.skip("torch missing")(cls)
    if EXT_ERROR and not os.environ.get("INPLACE_REQUIRE_EXT"):
        return unittest.skip(EXT_ERROR)(cls)
    return cls


def clone_args(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def leaves(v):
    if isinstance(v, (tuple, list)):
        out = []
        for x in v:
            out.extend(leaves(x))
        return out
    return [v]


class CompileCase(unittest.TestCase):
    rtol = 1e-5
    atol = 1e-6

    def setUp(self):
        torch.manual_seed(0)

    def assertSame(self, got, want, what, exact=False):
        if isinstance(want, torch.Tensor):
            self.assertIsInstance(got, torch.Tensor, what)
            self.assertEqual(got.dtype, want.dtype, what)
            self.assertEqual(tuple(got.shape), tuple(want.shape), what)
            if exact or not want.is_floating_point():
                self.assertTrue(torch.equal(got, want), "%s: %s != %s" % (what, got, want))
            else:
                self.assertTrue(torch.allclose(got, want, rtol=self.rtol, atol=self.atol,
                                               equal_nan=True),
                                "%s: max diff %s" % (what, (got - want).abs().max()))
        else:
            self.assertEqual(got, want, what)

    def check(self, program, example, calls=(), exact=False, **compile_kwargs):
        """Compiles `program` (module or function) once on `example`, then calls it on the
        example and on each of `calls` next to eager PyTorch on clones. Returns the compiled
        program (its module state then equals the eager module's)."""
        is_module = isinstance(program, torch.nn.Module)
        eager = copy.deepcopy(program) if is_module else program
        target = program
        compiled = inplace.compile(target, clone_args(example), **compile_kwargs)
        for n, args in enumerate((example,) + tuple(calls)):
            e_args, c_args = clone_args(args), clone_args(args)
            ptrs = [a.data_ptr() if isinstance(a, torch.Tensor) else None for a in c_args]
            with torch.no_grad():
                want = eager(*e_args)
            got = compiled(*c_args)
            where = "call %d" % n
            wl, gl = leaves(want), leaves(got)
            self.assertEqual(len(wl), len(gl), where + ": output count")
            for i, (g, w) in enumerate(zip(gl, wl)):
                self.assertSame(g, w, "%s: output %d" % (where, i), exact)
                # A returned input is returned as that very object, as eager returns it.
                for k, a in enumerate(e_args):
                    if w is a:
                        self.assertIs(g, c_args[k], "%s: output %d is input %d" % (where, i, k))
            for k, (g, w) in enumerate(zip(c_args, e_args)):
                if isinstance(w, torch.Tensor):
                    self.assertSame(g, w, "%s: input %d after the call" % (where, k), exact)
                    self.assertEqual(g.data_ptr(), ptrs[k], "%s: input %d moved" % (where, k))
            if is_module:
                eb = dict(eager.named_buffers())
                for name, b in program.named_buffers():
                    self.assertSame(b, eb[name], "%s: buffer %s" % (where, name), exact)
        return compiled
