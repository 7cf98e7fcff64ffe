"""Capturing a PyTorch program as a graph in the torch.export form: the caller's inputs and the
program's state (parameters, buffers, constants) as placeholders, with the graph signature.

``capture(module_or_fn, example_inputs)`` uses ``torch.export`` where the installed torch has it
(buffer and user-input mutations come from its graph signature) and torch.fx symbolic tracing
otherwise (the FullTracer: buffers are get_attr nodes, lifted here into placeholders; in-place
writes to them stay in the graph). Either way the result is a ``Captured``: the graph JSON
document with its signature, the user input names, the state tensors (the module's own, never
copies) and the structure of the outputs.
"""
import copy

import torch
import torch.fx

from .captured import Captured, _named, _same_memory
from .fx_export import (_MAX_INLINE_NUMEL, ExportError, _ShapeProp, _clone_inputs,
                        graph_to_json, trace)

__all__ = ["Captured", "capture", "has_torch_export"]


def has_torch_export():
    return hasattr(torch, "export") and hasattr(torch.export, "export")


class _SizeSpec(list):
    """The spec of a returned torch.Size: its items are ints."""


def _out_spec(value, counter):
    """The output value with every node replaced by its flat index (C++ flatten order)."""
    if isinstance(value, torch.fx.Node):
        kind, metas = value.meta.get("type"), value.meta.get("tensor_meta")
        if (isinstance(kind, type) and issubclass(kind, (tuple, list)) and kind is not torch.Size
                and isinstance(metas, (tuple, list))):
            # A multi-result op returned as it is (max.dim, sort, topk, unbind): one output per
            # result, as the C++ side flattens it.
            items = []
            for _ in metas:
                counter.append(value)
                items.append(len(counter) - 1)
            return kind(items)
        if kind is torch.Size and value.args and isinstance(value.args[0], torch.fx.Node):
            # x.size() / x.shape: one int output per dim (0-d tensors, made ints below).
            source = value.args[0].meta.get("tensor_meta")
            items = []
            for _ in range(len(source.shape) if source is not None else 0):
                counter.append(value)
                items.append(len(counter) - 1)
            return _SizeSpec(items)
        counter.append(value)
        return len(counter) - 1
    if isinstance(value, (tuple, list)):
        return type(value)(_out_spec(v, counter) for v in value)
    raise ExportError("the program returns %r (%s); only tensors, in tuples or lists, can be "
                      "returned" % (value, type(value).__name__))


def rebuild(spec, leaves):
    if isinstance(spec, int):
        return leaves[spec]
    if isinstance(spec, _SizeSpec):
        return torch.Size(int(leaves[s]) for s in spec)
    return type(spec)(rebuild(s, leaves) for s in spec)


def _state_kind(module, target):
    if module is None:
        return "constant"
    if target in dict(_named(module.named_parameters)):
        return "parameter"
    if target in dict(_named(module.named_buffers)):
        return "buffer"
    return "constant"


def _fetch(root, target):
    obj = root
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _keeps_in_graph(value):
    """A tensor the trace made (``torch.arange(s_max)``, ``torch.tensor([..])`` in the body:
    a new one each eager call) that stays a get_attr constant written into the graph, so the
    compiler sees its values (a key index it can prove, a constant it can fold): integer or
    bool, at most the inline limit. Other tensors the trace made are lifted as state."""
    return (not value.is_floating_point() and not value.is_complex()
            and value.numel() <= _MAX_INLINE_NUMEL and value.device.type == "cpu")


def _lift_get_attrs(gm, module, prefix="", made_by_trace=False):
    """Turns every get_attr tensor into a placeholder after the user inputs; get_attrs of the
    same memory (tied weights, a constant that is a buffer) share one placeholder and target.
    Small integer tensors the trace made (not the module's; every one when ``made_by_trace``)
    stay get_attr constants (``_keeps_in_graph``). Returns [(placeholder name, kind, target)],
    target -> tensor, and the targets kept in the graph."""
    user_ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    anchor = user_ph[-1] if user_ph else None
    state, lifted, by_target, kept = {}, [], {}, set()
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        target = node.target[len(prefix):] if node.target.startswith(prefix) else node.target
        owner = module if module is not None else gm
        # torch.fx's tracer names the tensors it makes _tensor_constantN (on the root module).
        made = made_by_trace or (target.startswith("_tensor_constant")
                                 and _state_kind(module, target) == "constant")
        try:
            value = _fetch(owner, target)
        except AttributeError:
            value = _fetch(gm, node.target)
        if not isinstance(value, torch.Tensor):
            raise ExportError("get_attr '%s' is a %s, not a tensor" % (node.target, type(value).__name__))
        if made and _keeps_in_graph(value):
            kept.add(node.target)
            continue
        for t, v in state.items():
            if _same_memory(v, value):
                target = t
                break
        if target not in by_target:
            if anchor is None:
                first = next(iter(gm.graph.nodes))
                ctx = gm.graph.inserting_before(first)
            else:
                ctx = gm.graph.inserting_after(anchor)
            with ctx:
                name = target.replace(".", "_")
                # nn.Sequential's "0.weight": a placeholder is a Python argument name.
                ph = gm.graph.placeholder(name if name.isidentifier() else "p_" + name)
            ph.meta = copy.copy(node.meta)
            anchor = ph
            by_target[target] = ph
            state[target] = value
            lifted.append((ph.name, _state_kind(module, target), target))
        node.replace_all_uses_with(by_target[target])
        gm.graph.erase_node(node)
    gm.recompile()
    return lifted, state, kept


def _capture_fx(module_or_fn, example_inputs):
    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else None
    prefix = ""
    if isinstance(module_or_fn, torch.fx.GraphModule):
        gm = module_or_fn
    elif module is not None:
        from .module_decomp import ROOTS, ROOT_PREFIX
        root = ROOTS[type(module)](module) if type(module) in ROOTS else module
        gm = trace(root, example_inputs=example_inputs)
        if root is not module:
            prefix = ROOT_PREFIX
    else:
        from .fx_export import trace_graph
        graph = trace_graph(module_or_fn, example_inputs)
        gm = torch.fx.GraphModule(torch.nn.Module(), graph, getattr(module_or_fn, "__name__", "fn"))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise ExportError("the program takes %d inputs (%s) but %d example inputs were given"
                          % (len(placeholders), ", ".join(p.name for p in placeholders),
                             len(example_inputs)))
    with torch.no_grad():
        _ShapeProp(gm).propagate(*_clone_inputs(example_inputs))
    user_names = [p.name for p in placeholders]
    lifted, state, kept = _lift_get_attrs(gm, module, prefix)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = []
    spec = _out_spec(out_node.args[0], leaves)
    scalars = {i for i, n in enumerate(leaves) if n.meta.get("type") in (int, float, bool)}
    doc, constants = graph_to_json(gm, getattr(module_or_fn, "__name__", None)
                                   or type(module_or_fn).__name__, inline=kept)
    assert set(constants) == kept, "every other get_attr was lifted"
    doc["signature"] = {
        "inputs": [{"kind": "user_input", "node": n} for n in user_names]
        + [{"kind": k, "node": n, "target": t} for n, k, t in lifted],
        "outputs": [],
    }
    return Captured(doc, user_names, state, spec, scalars, "torch.fx", gm)


def capture(module_or_fn, example_inputs, prefer_export=True):
    """Captures the program; see the module docstring."""
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    if has_torch_export() and isinstance(module_or_fn, torch.export.ExportedProgram):
        from .export_capture import capture_exported
        return capture_exported(module_or_fn, example_inputs)
    if prefer_export and has_torch_export() and isinstance(module_or_fn, torch.nn.Module) \
            and not isinstance(module_or_fn, torch.fx.GraphModule):
        from .export_capture import capture_exported
        try:
            return capture_exported(module_or_fn, example_inputs)
        except ExportError:
            raise
        except Exception as e:  # noqa: BLE001 - torch.export refused: try symbolic tracing
            import warnings
            warnings.warn("inplace: torch.export failed (%s: %s); capturing with torch.fx"
                          % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    return _capture_fx(module_or_fn, example_inputs)
