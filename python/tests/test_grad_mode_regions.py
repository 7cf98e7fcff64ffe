"""torch.export's grad-mode regions (``wrap_with_set_grad_enabled(enabled, submodule, *args)``,
what a ``torch.no_grad()`` block in forward becomes when exported with grad enabled) are
inlined before the graph is read: the graph computes what it did, with no submodule left. The
region is built by hand here (torch 1.13 has no torch.export), in the form torch 2.x records.

Run: /usr/bin/python3 -m unittest discover -s python/tests
"""
import operator
import unittest

from compile_harness import requires_extension
from harness import torch

if torch is not None:
    from inplace.export_capture import inline_grad_mode_regions


def wrap_with_set_grad_enabled(enabled, sub, *args):  # the higher-order op's name and form
    with torch.set_grad_enabled(enabled):
        return sub(*args)


@requires_extension
class GradModeRegions(unittest.TestCase):
    def test_region_is_inlined_and_computes_the_same(self):
        sub_graph = torch.fx.Graph()
        a = sub_graph.placeholder("a")
        b = sub_graph.placeholder("b")
        w = sub_graph.get_attr("w")
        m = sub_graph.call_function(torch.mul, (a, w))
        s = sub_graph.call_function(torch.add, (m, b))
        sub_graph.output((s, m))
        holder = torch.nn.Module()
        holder.w = torch.nn.Parameter(torch.randn(3), requires_grad=False)
        sub = torch.fx.GraphModule(holder, sub_graph)

        g = torch.fx.Graph()
        x = g.placeholder("x")
        y = g.call_function(torch.neg, (x,))
        sub_attr = g.get_attr("submod_1")
        region = g.call_function(wrap_with_set_grad_enabled, (False, sub_attr, y, x))
        first = g.call_function(operator.getitem, (region, 0))
        second = g.call_function(operator.getitem, (region, 1))
        g.output(g.call_function(torch.sub, (first, second)))
        root = torch.nn.Module()
        root.submod_1 = sub
        gm = torch.fx.GraphModule(root, g)

        inp = torch.randn(3)
        want = gm(inp)
        inline_grad_mode_regions(gm)
        self.assertTrue(torch.equal(gm(inp), want))
        ops = [n.op for n in gm.graph.nodes]
        self.assertNotIn("call_module", ops)
        for n in gm.graph.nodes:
            self.assertNotIn("wrap_with_set_grad_enabled", str(n.target))
            if n.op == "get_attr":
                self.assertIsInstance(getattr(gm, n.target), torch.Tensor)


if __name__ == "__main__":
    unittest.main()
