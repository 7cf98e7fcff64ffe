"""The extension's StateCheck, the per-call check of a compiled module's state: unchanged exactly
while every recorded tensor is its dict's with the same data pointer, shape, strides and dtype,
whether it reads the tensor's words (the raw path) or calls its accessors (the fallback)."""
import gc
import unittest
import weakref

from compile_harness import CompileCase, requires_extension, torch

if torch is not None:
    import torch.nn as nn
    import inplace
    from inplace import state_watch


class Sub(torch.Tensor if torch is not None else object):
    pass


def key(t):
    return (t.data_ptr(), t.shape, t.stride(), t.dtype)


# Each changes a tensor (of 8 elements in a storage of 64) in place or replaces it in its dict.
MUTATIONS = {
    "data replaced": lambda d: setattr(d["w"], "data", torch.zeros_like(d["w"])),
    "set_ to another storage": lambda d: d["w"].set_(torch.zeros_like(d["w"])),
    "storage resized": lambda d: d["w"].storage().resize_(4096),
    "resize_ to one dim": lambda d: d["w"].resize_(8),
    "resize_ to more dims": lambda d: d["w"].resize_((1,) * 7 + (8,)),
    "as_strided_ to other strides": lambda d: d["w"].as_strided_(d["w"].shape,
                                                                (0,) * d["w"].dim()),
    "as_strided_ to another offset": lambda d: d["w"].as_strided_(
        d["w"].shape, d["w"].stride(), d["w"].storage_offset() + 1),
    "transpose_": lambda d: d["w"].transpose_(0, -1),
    "unsqueeze_": lambda d: d["w"].unsqueeze_(0),
    "viewed as int32": lambda d: setattr(d["w"], "data", d["w"].view(torch.int32)),
    "replaced in the dict": lambda d: d.__setitem__("w", d["w"].clone()),
    "deleted from the dict": lambda d: d.pop("w"),
}


@requires_extension
class StateCheckFollowsEveryKeyChange(CompileCase):
    def check(self, d, links=(), name="w"):
        native, layout = state_watch._native_layout()
        t = d[name]
        return native.StateCheck(layout, list(links), [(d, name, t) + key(t)])

    def tensors(self):
        return {
            "raw: a parameter": lambda: nn.Parameter(torch.randn(64)[:8].view(2, 4),
                                                   requires_grad=False),
            "raw: a tensor at an offset": lambda: torch.randn(64)[8:16].view(2, 4),
            "accessors: six dims": lambda: torch.randn(64)[:8].view(1, 1, 1, 1, 2, 4),
            "accessors: a subclass": lambda: torch.randn(64)[:8].view(2, 4).as_subclass(Sub),
        }

    def test_the_layout_is_found_for_this_torch(self):
        native, layout = state_watch._native_layout()
        self.assertTrue(layout.ok)

    def test_unchanged_until_the_key_changes(self):
        for kind, make in self.tensors().items():
            for what, mutate in MUTATIONS.items():
                with self.subTest(kind=kind, mutation=what):
                    t = make()
                    d = {"w": t}
                    before = key(t)
                    check = self.check(d)
                    self.assertEqual(check.raw_tensors, 1 if kind.startswith("raw") else 0)
                    self.assertTrue(check.unchanged())
                    with torch.no_grad():
                        t.add_(1.0)  # a write in place is no change
                    self.assertTrue(check.unchanged())
                    with torch.no_grad():
                        mutate(d)
                    now = d.get("w")
                    changed = now is not t or key(now) != before
                    self.assertTrue(changed, "the mutation changes the key")
                    self.assertFalse(check.unchanged())

    def test_a_module_on_the_way_replaced_is_a_change(self):
        parent = nn.Module()
        parent.child = nn.Linear(2, 2)
        d = parent.child._parameters
        check = self.check(d, [(parent._modules, "child", parent.child)], "weight")
        self.assertTrue(check.unchanged())
        parent.child = nn.Linear(2, 2)
        self.assertFalse(check.unchanged())

    def test_a_module_holding_its_compiled_self_is_collected(self):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = nn.Linear(4, 4)

            def forward(self, x):
                return self.inner(x)

        m = M()
        m.compiled = inplace.compile(m, (torch.ones(1, 4),))  # m -> compiled -> check -> m
        m.compiled(torch.ones(1, 4))
        gone = weakref.ref(m)
        del m
        gc.collect()
        self.assertIsNone(gone())


if __name__ == "__main__":
    unittest.main()
