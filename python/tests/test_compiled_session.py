"""A compiled module runs as a one-method program on one session: its parameters and buffers
are the program's caller-owned state, bound to the module's own tensors (nothing copied into
the program), so in-place writes land in the module (aliased and copy-back engines alike) and a
replaced parameter is bound anew.
"""
import unittest

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import inplace


if torch is not None:
    class Accumulator(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.full((4,), 2.0))
            self.register_buffer("acc", torch.zeros(4))

        def forward(self, x):
            self.acc.add_(x)
            return self.acc * self.w


@requires_extension
class CompiledSession(CompileCase):
    def test_the_module_state_is_the_programs_caller_owned_state(self):
        with torch.no_grad():
            m = Accumulator()
            compiled = inplace.compile(m, (torch.ones(4),))
            program = compiled._native.program  # inplace._C.Program
            self.assertEqual(list(program.methods), ["forward"])
            owners = {s[0]: s[3] for s in program.state}
            self.assertEqual(len(owners), 2, program.describe())
            self.assertEqual(set(owners.values()), {"caller"}, program.describe())
            self.assertEqual(program.weight_bytes, 0, "the module's tensors are not copied")
            inputs = program.method_inputs("forward")  # (name, shape, dtype, dynamic, is state)
            self.assertEqual([i[0] for i in inputs if not i[4]], compiled.input_names)

    def test_aliased_and_copy_back_write_the_modules_buffer(self):
        with torch.no_grad():
            for alias in (True, False):
                m, ref = Accumulator(), Accumulator()
                compiled = inplace.compile(m, (torch.ones(4),), alias=alias)
                ptr = m.acc.data_ptr()
                for step in range(3):
                    x = torch.randn(4)
                    self.assertSame(compiled(x), ref(x), "alias=%s step %d" % (alias, step))
                self.assertSame(m.acc, ref.acc, "alias=%s buffer" % alias, exact=True)
                self.assertEqual(m.acc.data_ptr(), ptr)

    def test_a_replaced_parameter_is_bound_anew(self):
        with torch.no_grad():
            m, ref = Accumulator(), Accumulator()
            compiled = inplace.compile(m, (torch.ones(4),))
            x = torch.ones(4)
            self.assertSame(compiled(x), ref(x), "before")
            m.w = torch.nn.Parameter(torch.full((4,), -3.0))
            ref.w = torch.nn.Parameter(torch.full((4,), -3.0))
            self.assertSame(compiled(x), ref(x), "after the replacement")


if __name__ == "__main__":
    unittest.main()
