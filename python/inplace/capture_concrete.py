"""Capture at the example inputs' real shapes (``make_fx``), for a torch without ``torch.export``.

Symbolic tracing (torch.fx) cannot answer ``x.dim()``, ``B, T, _ = x.shape`` or ``C // n_head``
with a number, so ``BatchNorm1d``, ``LSTMCell``, ``nn.LSTM``, ``TransformerEncoderLayer`` and
ordinary shape arithmetic fail there. ``make_fx`` runs the program on the examples below
autograd and records every aten op it reaches with the sizes the examples give: sizes are
numbers, tensor values are never frozen (a tensor read as a Python number is refused, see
below), and fused modules arrive as the aten ops they run.

The module's parameters and buffers are traced as inputs (``functional_call``), on clones, so
an in-place write into a buffer (``index_copy_``, ``cache[:, pos] = k``) is recorded as the
aten in-place op on that buffer's placeholder: no functionalization, the mutation stays a
mutation of the module's own tensor. A tensor made in the body (``torch.tensor``,
``torch.arange`` of a constant) is a lifted constant.

Refused, naming the input or node: a Python number input (it would be baked into the graph:
pass a 0-dim tensor) and a tensor value read as a number (``x[:int(n)]``, ``.item()``), which
the trace would freeze at the example's value.
"""
import inspect

import torch
import torch.fx

from .capture import _lift_get_attrs, _out_spec
from .captured import Captured, _named, _same_memory
from .fx_export import ExportError, graph_to_json

__all__ = ["capture_concrete", "has_make_fx"]

# aten ops a value read as a Python number goes through: its value would be frozen.
_READS_A_NUMBER = ("aten._local_scalar_dense", "aten.item", "aten.equal", "aten.is_nonzero")


_FROZEN = ("%s reads a tensor's value as a Python number (int(t), t.item(), a tensor as a "
           "slice bound or in an if): traced at the examples' shapes it would be frozen at the "
           "example's value; use tensor ops (index_select, masks, torch.where) instead")


def has_make_fx():
    try:
        from torch.fx.experimental.proxy_tensor import make_fx  # noqa: F401
    except ImportError:
        return False
    return True


def _decompositions():
    """Composite aten ops the graph reader does not take, as the ops they are made of."""
    try:
        from torch._decomp import get_decompositions
    except ImportError:
        return {}
    aten = torch.ops.aten
    wanted = [getattr(aten, n) for n in ("native_batch_norm", "_native_batch_norm_legit",
                                         "_reshape_alias", "_unsafe_view")
              if hasattr(aten, n)]
    return get_decompositions(wanted)


def _user_names(module_or_fn, n):
    fn = module_or_fn.forward if isinstance(module_or_fn, torch.nn.Module) else module_or_fn
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = [n if n.isidentifier() else "x" for n in names[:n]]
    return names + ["input_%d" % i for i in range(len(names), n)]


def _state_of(module):
    """[(target, kind, tensor)] once per memory, and every name -> its index in that list (tied
    weights: two names, one entry)."""
    unique, index = [], {}
    for kind, fn in (("parameter", module.named_parameters), ("buffer", module.named_buffers)):
        for target, t in _named(fn):
            if t is None:
                continue
            for i, (_, _, u) in enumerate(unique):
                if _same_memory(u, t):
                    index[target] = i
                    break
            else:
                index[target] = len(unique)
                unique.append((target, kind, t))
    return unique, index


def _trace_clone(t):
    """A clone the trace may write into; a parameter that requires grad keeps requiring it,
    so modules take their general path (not the inference fast paths that run fused kernels)."""
    c = t.detach().clone()
    return c.requires_grad_(True) if t.requires_grad and c.is_floating_point() else c


def capture_concrete(module_or_fn, example_inputs):
    from torch.fx.experimental.proxy_tensor import make_fx
    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else None
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise ExportError(
                "input %d is a %s: tracing at the examples' shapes would bake its value into the "
                "graph; pass it as a tensor (torch.tensor(%r)) so every call reads its own value"
                % (i, type(x).__name__, x))
    user_names = _user_names(module_or_fn, len(example_inputs))
    unique, index = _state_of(module) if module is not None else ([], {})
    n_user = len(example_inputs)

    def program(*flat):
        user, state = flat[:n_user], flat[n_user:]
        if module is None:
            return module_or_fn(*user)
        from torch.nn.utils.stateless import functional_call
        return functional_call(module, {t: state[i] for t, i in index.items()}, tuple(user))

    args = [x.detach().clone() for x in example_inputs] + [_trace_clone(t) for _, _, t in unique]
    try:
        with torch.enable_grad():
            gm = make_fx(program, decomposition_table=_decompositions())(*args)
    except RuntimeError as e:
        if "value out of a tracing tensor" not in str(e):
            raise
        raise ExportError(_FROZEN % "the program") from None
    del args
    for node in gm.graph.nodes:
        if node.op == "call_function" and any(str(node.target).startswith(p)
                                              for p in _READS_A_NUMBER):
            raise ExportError(_FROZEN % ("node '%s' (%s)" % (node.name, node.target)))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, name in zip(placeholders[:n_user], user_names):
        node.name = node.target = gm.graph._graph_namespace.create_name(name, None)
    user_names = [n.name for n in placeholders[:n_user]]
    lifted, state = [], {}
    for node, (target, kind, tensor) in zip(placeholders[n_user:], unique):
        name = target.replace(".", "_")
        name = name if name.isidentifier() else "p_" + name
        node.name = node.target = gm.graph._graph_namespace.create_name(name, None)
        lifted.append((node.name, kind, target))
        state[target] = tensor
    # Tensors made in the body (torch.tensor, arange of a constant): lifted constants.
    constants, const_state, kept = _lift_get_attrs(gm, None, made_by_trace=True)
    for _, _, target in constants:
        if target in state:
            raise ExportError("constant '%s' shares its name with module state" % target)
    state.update(const_state)
    lifted += constants
    gm.recompile()
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    leaves = []
    spec = _out_spec(out_node.args[0], leaves)
    doc, rest = graph_to_json(gm, getattr(module_or_fn, "__name__", None)
                              or type(module_or_fn).__name__, inline=kept)
    assert set(rest) == kept, "every other get_attr was lifted"
    doc["signature"] = {
        "inputs": [{"kind": "user_input", "node": n} for n in user_names]
        + [{"kind": k, "node": n, "target": t} for n, k, t in lifted],
        "outputs": [],
    }
    return Captured(doc, user_names, state, spec, set(), "make_fx", gm)
