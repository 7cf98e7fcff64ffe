"""Exports a torch.fx graph to inplace's graph JSON (version 1).

``export_graph(module_or_gm, example_inputs, path)`` traces an ``nn.Module`` with torch.fx
(modules are traced through, so ``nn.Linear`` becomes ``torch._C._nn.linear`` with
``get_attr`` weights), or takes an existing ``GraphModule`` (torch level, or aten level from
``make_fx``), runs ``ShapeProp`` on copies of the example inputs to record each node's shape
and dtype, and writes:

* ``path``: the graph JSON, one node per line;
* ``constants_file`` beside it: every ``get_attr`` target's tensor, keyed by the target.

The format is described in docs/graph-json.md. Anything the format cannot express raises
``ExportError`` naming the node and the value's type.
"""
import copy
import dis
import inspect
import json
import math
import operator
import os

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.node import Node, _get_qualified_name
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from .safetensors_io import read_safetensors, read_safetensors_metadata, write_safetensors

__all__ = [
    "ExportError",
    "ExportResult",
    "FullTracer",
    "trace",
    "export_graph",
    "graph_to_json",
    "write_constants",
    "write_inputs",
    "read_outputs",
    "target_name",
]

# Largest tensor written inline into an argument ({"tensor": ...}); bigger ones are an error
# (they belong in a get_attr constant).
_MAX_INLINE_NUMEL = 4096

_DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}


class ExportError(ValueError):
    """A graph the JSON format cannot express (names the node and the value)."""


class ExportResult:
    """What export_graph wrote: the paths, the graph module and its user input names."""

    def __init__(self, path, constants_path, graph_module, input_names, doc):
        self.path = path
        self.constants_path = constants_path  # None when the graph has no get_attr
        self.graph_module = graph_module
        self.input_names = input_names  # placeholder names, in order
        self.json = doc  # the document as Python data

    def inputs_dict(self, example_inputs):
        """Maps example inputs (positional, as given to export_graph) to placeholder names."""
        return dict(zip(self.input_names, example_inputs))


class _Proxy(torch.fx.Proxy):
    """A Proxy that records ``x[i] = v`` as ``call_function _operator.setitem`` (torch 1.13's
    Proxy has no ``__setitem__``; later versions record the same node)."""

    def __setitem__(self, index, value):
        return self.tracer.create_proxy("call_function", operator.setitem, (self, index, value), {})

    def __iter__(self):
        """``a, b = x.split(2)``: the unpacking count is read from the caller's bytecode. torch
        1.13 finds the instruction by ``f_lasti // 2``, which is wrong on Python 3.11 (inline
        caches); here it is found by its offset."""
        frame = inspect.currentframe().f_back
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)


class FullTracer(torch.fx.Tracer):
    """Traces through every module, so nn.Linear/LayerNorm/Embedding become F.* calls whose
    weights are get_attr nodes. Buffers are proxied too (``self.cache.add_(x)`` must become a
    node, not run on the real buffer at trace time), and ``x[i] = v`` is recorded."""

    proxy_buffer_attributes = True

    def __init__(self, example_inputs=None):
        super().__init__()
        # With example inputs, each node's rank is recorded as it is traced (run on clones), so
        # the module decompositions (module_decomp.py) can branch on it as PyTorch does.
        self._examples = list(example_inputs) if example_inputs is not None else None
        self._values = {}
        self._state = {}

    def is_leaf_module(self, m, module_qualified_name):
        return False

    def release_examples(self):
        self._values.clear()
        self._state.clear()
        self._examples = None

    def call_module(self, m, forward, args, kwargs):
        from .module_decomp import DECOMPOSITIONS
        decomp = DECOMPOSITIONS.get(type(m))
        if decomp is not None:
            return decomp(m, *args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def proxy(self, node):
        if self._examples is not None:
            self._record_example(node)
        return _Proxy(node, self)

    def _record_example(self, node):
        """The node's value on clones of the examples (None when it cannot be computed)."""
        def val(a):
            return torch.fx.node.map_arg(a, lambda n: self._values.get(n))
        try:
            with torch.no_grad():
                if node.op == "placeholder":
                    i = sum(1 for n in self._values if n.op == "placeholder")
                    x = self._examples[i]
                    v = x.clone() if isinstance(x, torch.Tensor) else x
                elif node.op == "get_attr":
                    if node.target not in self._state:
                        obj = self.root
                        for atom in node.target.split("."):
                            # not getattr: the tracer patches Module.__getattr__ to proxy
                            obj = _raw_attr(obj, atom)
                        self._state[node.target] = obj.detach().clone()
                    v = self._state[node.target]
                elif node.op == "call_function":
                    v = node.target(*val(node.args), **val(node.kwargs))
                elif node.op == "call_method":
                    args = val(node.args)
                    v = getattr(args[0], node.target)(*args[1:], **val(node.kwargs))
                else:
                    v = None
        except Exception:  # noqa: BLE001 - an op the examples cannot run: no rank recorded
            v = None
        self._values[node] = v
        if isinstance(v, torch.Tensor):
            node.meta["example_rank"] = v.dim()
            node.meta["example_dtype"] = v.dtype


def _raw_attr(obj, name):
    if isinstance(obj, torch.nn.Module):
        for table in ("_parameters", "_buffers", "_modules"):
            d = obj.__dict__.get(table, {})
            if name in d:
                return d[name]
    return obj.__dict__[name] if name in getattr(obj, "__dict__", {}) else object.__getattribute__(obj, name)


def trace_graph(root, example_inputs=None, concrete_args=None):
    """FullTracer's graph of ``root``. The tracer's example values (clones of the module's
    state, one copy of every weight) are dropped here: the tracer sits in reference cycles
    (its proxies point back at it), so they would otherwise live until the next garbage
    collection, a second copy of the weights next to the one shape propagation makes."""
    tracer = FullTracer(example_inputs)
    try:
        return tracer.trace(root, concrete_args=concrete_args)
    finally:
        tracer.release_examples()


def trace(module, concrete_args=None, example_inputs=None):
    """Traces ``module`` with FullTracer and returns the GraphModule."""
    graph = trace_graph(module, example_inputs, concrete_args)
    name = module.__class__.__name__
    return torch.fx.GraphModule(module, graph, name)


def _dtype_name(dtype, where):
    if dtype not in _DTYPE_NAMES:
        raise ExportError("%s: dtype %s is not supported by graph JSON" % (where, dtype))
    return _DTYPE_NAMES[dtype]


def target_name(target):
    """The name FX prints for a call_function target, as the inplace reader expects it.

    OpOverloads print as ``aten.add_.Tensor``; builtins of ``torch._C._nn`` (F.linear,
    F.gelu, ...) and the Python wrappers in ``torch.functional`` (torch.einsum, torch.split)
    are spelled by their public names (``torch.nn.functional.linear``, ``torch.einsum``).
    """
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(target)  # aten.add_.Tensor / aten.add
    name = _get_qualified_name(target)
    for private, public, mod in (
        ("torch._C._nn.", "torch.nn.functional.", F),
        ("torch._C._VariableFunctions.", "torch.", torch),
        ("torch.functional.", "torch.", torch),  # torch.einsum, torch.split, ... (Python wrappers)
        ("torch._C._linalg.", "torch.linalg.", getattr(torch, "linalg", None)),
        ("torch._C._special.", "torch.special.", getattr(torch, "special", None)),
        ("torch._C._fft.", "torch.fft.", getattr(torch, "fft", None)),
    ):
        if name.startswith(private):
            short = name[len(private):]
            if mod is not None and getattr(mod, short, None) is target:
                return public + short
            if private == "torch._C._nn." and getattr(torch, short, None) is not None:
                return "torch." + short
    return name


def _float_value(x):
    if math.isnan(x):
        return {"float": "nan"}
    if math.isinf(x):
        return {"float": "inf" if x > 0 else "-inf"}
    return float(x)  # json writes repr(): always with a '.' or an exponent


def _tensor_literal(t, where):
    t = t.detach().to("cpu")
    dtype = _dtype_name(t.dtype, where)
    if t.numel() > _MAX_INLINE_NUMEL:
        raise ExportError(
            "%s: a tensor argument of shape %s (%d elements) is too large to write inline "
            "(max %d); make it a module buffer so it becomes a get_attr constant"
            % (where, list(t.shape), t.numel(), _MAX_INLINE_NUMEL))
    flat = t.reshape(-1)
    if t.is_floating_point():
        data = [_float_value(v) for v in flat.double().tolist()]
    elif t.dtype == torch.bool:
        data = [bool(v) for v in flat.tolist()]
    else:
        data = [int(v) for v in flat.tolist()]
    return {"dtype": dtype, "shape": list(t.shape), "data": data}


def _value(v, where):
    """Converts one FX argument to a graph JSON VALUE."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, Node):
        return {"node": v.name}
    if isinstance(v, int):
        if not -(2 ** 63) <= v < 2 ** 63:
            raise ExportError("%s: integer %d does not fit int64" % (where, v))
        return int(v)
    if isinstance(v, float):
        return _float_value(v)
    if isinstance(v, str):
        return v
    if isinstance(v, torch.Size):
        return [int(s) for s in v]
    if isinstance(v, tuple):
        return {"tuple": [_value(x, "%s[%d]" % (where, i)) for i, x in enumerate(v)]}
    if isinstance(v, list):
        return [_value(x, "%s[%d]" % (where, i)) for i, x in enumerate(v)]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise ExportError("%s: dict key %r of type %s is not a str" % (where, k, type(k).__name__))
            out[k] = _value(x, "%s[%r]" % (where, k))
        return {"dict": out}
    if isinstance(v, slice):
        return {"slice": [_value(x, "%s.%s" % (where, part))
                          for x, part in ((v.start, "start"), (v.stop, "stop"), (v.step, "step"))]}
    if v is Ellipsis:
        return {"ellipsis": True}
    if isinstance(v, torch.dtype):
        return {"dtype": _dtype_name(v, where)}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    if isinstance(v, (torch.layout, torch.memory_format)):
        # Not in the VALUE grammar; the reader's schemas take any value for Layout and
        # MemoryFormat, so the torch spelling goes through as a string.
        return str(v)
    if isinstance(v, torch.Tensor):
        return {"tensor": _tensor_literal(v, where)}
    raise ExportError("%s: cannot express a value of type %s (%r) in graph JSON"
                      % (where, type(v).__module__ + "." + type(v).__qualname__, v))


def _meta(node):
    tm = node.meta.get("tensor_meta")
    if isinstance(tm, TensorMetadata) and tm.dtype in _DTYPE_NAMES:
        return {"shape": [int(s) for s in tm.shape], "dtype": _DTYPE_NAMES[tm.dtype]}
    val = node.meta.get("val")  # torch.export / make_fx: a fake tensor
    if isinstance(val, torch.Tensor) and val.dtype in _DTYPE_NAMES:
        try:
            return {"shape": [int(s) for s in val.shape], "dtype": _DTYPE_NAMES[val.dtype]}
        except (TypeError, ValueError, RuntimeError):  # a symbolic size: no static meta
            return None
    return None


def _fetch_attr(gm, target):
    obj = gm
    for atom in target.split("."):
        if not hasattr(obj, atom):
            raise ExportError("get_attr '%s': the module has no attribute '%s'" % (target, atom))
        obj = getattr(obj, atom)
    return obj


def graph_to_json(gm, name=None, constants_file="weights.safetensors", inline=()):
    """Returns (document, constants): the graph JSON as Python data and the get_attr tensors
    (target -> tensor, detached, as they are now). The targets in ``inline`` are written with
    their values into the document's constants; the others name ``constants_file``."""
    nodes = []
    constants = {}
    const_json = {}
    for node in gm.graph.nodes:
        where = "node '%s' (%s %s)" % (node.name, node.op, node.target)
        entry = {"name": node.name, "op": node.op}
        if node.op == "placeholder":
            entry["target"] = str(node.target)
            if node.target.startswith("*"):
                raise ExportError("%s: *args placeholders are not supported; pass a "
                                  "fixed argument list" % where)
        elif node.op == "get_attr":
            entry["target"] = node.target
            if node.target not in constants:
                value = _fetch_attr(gm, node.target)
                if not isinstance(value, torch.Tensor):
                    raise ExportError("%s: attribute is a %s, not a tensor"
                                      % (where, type(value).__name__))
                constants[node.target] = value.detach()
                const_json[node.target] = _tensor_literal(value, where) if node.target in inline \
                    else {"dtype": _dtype_name(value.dtype, where), "shape": list(value.shape),
                          "file": constants_file, "key": node.target}
        elif node.op == "call_function":
            entry["target"] = target_name(node.target)
        elif node.op == "call_method":
            entry["target"] = node.target
        elif node.op == "output":
            entry["target"] = "output"
        else:
            raise ExportError("%s: op '%s' is not supported (trace with FullTracer so no module "
                              "is a leaf)" % (where, node.op))
        entry["args"] = [_value(a, "%s: args[%d]" % (where, i)) for i, a in enumerate(node.args)]
        entry["kwargs"] = {k: _value(v, "%s: kwargs[%r]" % (where, k)) for k, v in node.kwargs.items()}
        meta = _meta(node)
        if meta is not None and node.op != "output":
            entry["meta"] = meta
        nodes.append(entry)
    doc = {
        "format": "inplace.graph",
        "version": 1,
        "name": name or gm.__class__.__name__,
        "nodes": nodes,
        "constants": const_json,
    }
    return doc, constants


def _dumps(doc):
    """The document with one node (and one constant) per line."""
    def j(x):
        return json.dumps(x, allow_nan=False, separators=(", ", ": "))

    lines = ['{', '  "format": %s, "version": %d, "name": %s,' % (j(doc["format"]), doc["version"], j(doc["name"]))]
    lines.append('  "nodes": [')
    lines.append(",\n".join("    " + j(n) for n in doc["nodes"]))
    lines.append("  ],")
    if doc["constants"]:
        lines.append('  "constants": {')
        lines.append(",\n".join("    %s: %s" % (j(k), j(v)) for k, v in doc["constants"].items()))
        lines.append("  }")
    else:
        lines.append('  "constants": {}')
    lines.append("}")
    return "\n".join(lines) + "\n"


class _ShapeProp(ShapeProp):
    """ShapeProp that reads every get_attr tensor from a private clone (one per target, so the
    graph's in-place writes to its state still reach later reads of the same target)."""

    def __init__(self, gm):
        super().__init__(gm)
        self._state = {}

    def propagate(self, *args):
        try:
            return super().propagate(*args)
        finally:  # the clones of the state go now, not at the next garbage collection
            self._state.clear()
            self.env.clear()

    def fetch_attr(self, target):
        if target not in self._state:
            value = super().fetch_attr(target)
            self._state[target] = value.detach().clone() if isinstance(value, torch.Tensor) else value
        return self._state[target]


def _clone_inputs(inputs):
    return tuple(x.clone() if isinstance(x, torch.Tensor) else copy.deepcopy(x) for x in inputs)


def export_graph(module_or_gm, example_inputs, path, name=None,
                 constants_file="weights.safetensors"):
    """Traces (unless given a GraphModule), propagates shapes and writes graph JSON to ``path``.

    ``example_inputs`` is the tuple of positional arguments; it is not modified (the shape
    propagation runs on clones of the inputs and of the module's tensors, so buffers are not
    mutated either).
    The constants (get_attr tensors, as they are before the call) go to ``constants_file``
    beside ``path``. Returns an ExportResult.
    """
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    if isinstance(module_or_gm, torch.fx.GraphModule):
        gm = module_or_gm
    elif isinstance(module_or_gm, torch.nn.Module):
        gm = trace(module_or_gm)
    else:
        raise TypeError("export_graph takes an nn.Module or a torch.fx.GraphModule, got %s"
                        % type(module_or_gm).__name__)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(example_inputs) != len(placeholders):
        raise ExportError("the graph has %d placeholders (%s) but %d example inputs were given"
                          % (len(placeholders), ", ".join(p.name for p in placeholders),
                             len(example_inputs)))

    # Shape propagation runs on clones of the inputs and of the get_attr tensors, so neither
    # the module's state nor the caller's tensors change: the constants written are the state
    # before the call. (No deepcopy of the module: torch 1.13's make_fx leaves tensors it
    # mutated impossible to deepcopy.)
    for node in gm.graph.nodes:
        if node.op == "call_module":
            raise ExportError("node '%s' (call_module %s) is not supported; trace with FullTracer "
                              "so no module is a leaf" % (node.name, node.target))
    with torch.no_grad():  # in-place writes to parameters would be refused under autograd
        _ShapeProp(gm).propagate(*_clone_inputs(example_inputs))
    doc, constants = graph_to_json(gm, name, constants_file)

    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    constants_path = None
    if constants:
        constants_path = write_constants(path, constants_file, constants)
    with open(path, "w") as f:
        f.write(_dumps(doc))
    return ExportResult(path, constants_path, gm, [p.name for p in placeholders], doc)


_GRAPHS_KEY = "inplace.graphs"  # constants file metadata: the graph files that read it


def write_constants(graph_path, constants_file, tensors):
    """Writes ``tensors`` into ``constants_file`` beside ``graph_path`` and returns its path.

    Several graphs may share one constants file (two methods of one module). The file lists
    the graphs that read it (metadata ``inplace.graphs``): when another graph listed there
    still exists, the file keeps that graph's tensors and gains this one's, and a key it holds
    with other values is refused (``ExportError`` naming the key and the graph), never
    overwritten under that graph. A file only this graph read, or one without the list, is
    rewritten."""
    folder = os.path.dirname(os.path.abspath(graph_path))
    path = os.path.join(folder, constants_file)
    mine = os.path.basename(graph_path)
    merged, graphs = {}, []
    if os.path.exists(path):
        listed = json.loads(read_safetensors_metadata(path).get(_GRAPHS_KEY, "[]"))
        graphs = [g for g in listed if g != mine and os.path.exists(os.path.join(folder, g))]
    if graphs:
        merged = read_safetensors(path)
        for key, t in tensors.items():
            old = merged.get(key)
            if old is not None and not (old.dtype == t.dtype and old.shape == t.shape
                                        and torch.equal(old, t.detach().cpu())):
                raise ExportError(
                    "%s already holds '%s' with other values, read by %s: export into another "
                    "folder or pass another constants_file" % (path, key, ", ".join(graphs)))
    merged.update(tensors)
    write_safetensors(path, merged, {_GRAPHS_KEY: json.dumps(graphs + [mine])})
    return path


def write_inputs(path, tensors, metadata=None):
    """Writes an ``inplace exec --inputs`` file: one tensor per placeholder name.

    Python ints/floats/bools become 0-d int64/float32/bool tensors."""
    out = {}
    for k, v in tensors.items():
        if isinstance(v, bool):
            v = torch.tensor(v)
        elif isinstance(v, int):
            v = torch.tensor(v, dtype=torch.int64)
        elif isinstance(v, float):
            v = torch.tensor(v, dtype=torch.float32)
        out[k] = v
    write_safetensors(os.fspath(path), out, metadata)


def read_outputs(path):
    """Reads an ``inplace exec --out`` file: {"output.0": ..., "input.x": ..., "buffer.b": ...}."""
    return read_safetensors(os.fspath(path))
