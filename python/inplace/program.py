"""Programs and sessions in process: several methods (``prefill``, ``decode``) of one PyTorch
module compiled into one program over shared state, run by sessions.

``inplace.compile_program(module, methods={"prefill": (examples, dynamic), "decode": (examples,)})``
captures each method (the module's method of that name when its class defines one, else its
``forward`` at those example shapes), compiles them together and returns a ``Program``: the
module's parameters are its weights, held once (the module's own tensors, never copied); every
buffer a method writes (a key/value cache) is state, named by its dotted name
(``layers.0.k_cache``), whose initial value is the buffer's value at compile time (a copy).
``program.new_session()`` gives a ``Session`` holding its own state at fixed addresses;
``session.run("decode", ids, pos)`` (or ``session.decode(ids, pos)``) calls a method on torch
tensors, ``session.state(name)`` is the live state as a torch tensor over the session's memory
(no copy), ``session.reset()`` restores the initial values in place, and ``session.generate``
runs prefill and a decode loop with no Python in it. ``program.save(path)`` writes a program
file (weights once, the state's initial values); ``inplace.load_program(path)`` reads one.
On CUDA (``device="cuda"``, or a module on the GPU) the weights are uploaded once for every
method, each session holds its state on the GPU, and a call is enqueued on torch's current
stream without waiting for it. docs/programs.md describes the model.
"""
import json
import os

import torch

from . import _native
from .compiled import (InputError, _as_tensor, _capture_with, _concrete_applies, _dynamic_list,
                       _from_result, _ranges_list, _rebuild, _stream_of, _Text, _thread_count,
                       _to_capsule)

__all__ = ["GenerateResult", "Program", "Session", "compile_program", "load_program"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
           "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
           "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}


def _is_exported(x):
    export = getattr(torch, "export", None)
    return export is not None and isinstance(x, getattr(export, "ExportedProgram", ()))


def _method_spec(name, spec):
    """(examples, dynamic, value_ranges, entry) from a tuple ``(examples[, dynamic])`` or a dict
    with the keys examples, dynamic, value_ranges and entry (the module method to capture, or
    under ``exported`` a ``torch.export`` ExportedProgram of the method)."""
    if isinstance(spec, dict):
        unknown = set(spec) - {"examples", "dynamic", "value_ranges", "entry", "exported"}
        if unknown or "examples" not in spec:
            raise InputError("method '%s': expected the keys examples (required), dynamic, "
                             "value_ranges, entry or exported; got %s" % (name, sorted(spec)))
        if "exported" in spec:
            if not _is_exported(spec["exported"]):
                raise InputError("method '%s': 'exported' takes a torch.export ExportedProgram, "
                                 "got %s" % (name, type(spec["exported"]).__name__))
            if "entry" in spec:
                raise InputError("method '%s': give 'entry' or 'exported', not both" % name)
            return (spec["examples"], spec.get("dynamic"), spec.get("value_ranges"),
                    spec["exported"])
        return (spec["examples"], spec.get("dynamic"), spec.get("value_ranges"),
                spec.get("entry"))
    if not isinstance(spec, (tuple, list)) or not 1 <= len(spec) <= 2:
        raise InputError("method '%s': expected (examples,) or (examples, dynamic), got %r"
                         % (name, type(spec).__name__))
    return spec[0], spec[1] if len(spec) > 1 else None, None, None


def _entry_root(module, name, entry):
    """The module to capture for method ``name``: the module itself when it runs ``forward``,
    else a shallow copy (the same parameters and buffers, so the same dotted names) whose
    forward is the named method of its class."""
    target = entry or (name if name != "forward" and callable(getattr(type(module), name, None))
                       and not hasattr(torch.nn.Module, name) else "forward")
    if target == "forward":
        return module
    fn = getattr(type(module), target, None)
    if not callable(fn):
        raise InputError("method '%s': %s has no method '%s'" % (name, type(module).__name__, target))
    import copy
    root = copy.copy(module)
    root.__class__ = type(type(module).__name__, (type(module),), {"forward": fn})
    return root


def _capture_method(root, examples, dynamic):
    try:
        return _capture_with("default", root, examples)
    except InputError:
        raise
    except Exception:  # noqa: BLE001 - symbolic tracing failed: at the examples' shapes
        if not _concrete_applies(examples, dynamic):
            raise
        return _capture_with("make_fx", root, examples)


def _exported_state(ep):
    """An ExportedProgram's parameters and buffers, and the ids of its buffers."""
    sig = ep.graph_signature
    tensors = dict(ep.state_dict)
    tensors.update(getattr(ep, "constants", None) or {})
    buffers = {id(tensors[b]) for b in sig.buffers if b in tensors}
    return list(tensors.values()), buffers


def _program_device(module, methods, device):
    """Where the program runs: ``device``, else cuda when the module's tensors (or the exported
    programs') or an example are there, else the cpu; refused naming the reason where this
    machine cannot run it."""
    if device is None:
        tensors = [] if module is None else list(module.parameters()) + list(module.buffers())
        for spec in methods.values():
            if isinstance(spec, dict) and _is_exported(spec.get("exported")):
                tensors += _exported_state(spec["exported"])[0]
            examples = spec.get("examples") if isinstance(spec, dict) else spec[0]
            if isinstance(examples, torch.Tensor):
                examples = (examples,)
            tensors += [x for x in examples if isinstance(x, torch.Tensor)]
        cuda = [t.device for t in tensors if t.device.type == "cuda"]
        device = cuda[0] if cuda else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    if dev.type not in ("cpu", "cuda"):
        raise InputError("device %s: inplace runs programs on cpu and cuda" % dev)
    why = _native.load().device_unavailable(str(dev))
    if why:
        raise RuntimeError("inplace cannot compile a program for %s: %s" % (dev, why))
    return dev


def _host(t):
    """``t`` on the host: the compiler reads weights and initial values there (a GPU program
    uploads them once)."""
    return t if t.device.type == "cpu" else t.detach().cpu()


def compile_program(module, methods, *, name=None, caller_owned=(), device=None):
    """Compiles the methods of ``module`` into one Program (see the module docstring).

    ``methods``: {method name: (examples,) | (examples, dynamic) | {"examples", "dynamic",
    "value_ranges", "entry" | "exported"}}; ``dynamic`` as for ``inplace.compile`` ({input:
    {dim: max}}: one prefill for every prompt length up to max). ``exported``: the method as a
    ``torch.export`` ExportedProgram (exported from one module, so its parameters and buffers
    have the same names in every method: one weight each, one state entry each); ``module`` may
    then be None. ``caller_owned``: buffers (dotted names) the
    caller passes by name on every call instead of the session holding them. ``device``: "cpu"
    or "cuda[:N]" (default: cuda when the module or an example is there, else the cpu): every
    method runs there and sessions hold their state there. A module on the GPU is copied to the
    host once for compiling (the program keeps that copy for ``save``).
    """
    if not methods:
        raise InputError("compile_program: no methods")
    parsed = {m: _method_spec(m, spec) for m, spec in methods.items()}
    if module is None:
        missing = [m for m, p in parsed.items() if not _is_exported(p[3])]
        if missing:
            raise InputError("compile_program without a module: method%s %s need%s "
                             "'exported' (a torch.export ExportedProgram)"
                             % ("s" if len(missing) > 1 else "", ", ".join(repr(m) for m in missing),
                                "" if len(missing) > 1 else "s"))
    elif not isinstance(module, torch.nn.Module):
        raise InputError("compile_program takes an nn.Module (or None with exported methods), "
                         "got %s" % type(module).__name__)
    C = _native.load()
    dev = _program_device(module, methods, device)
    snapshots = {}  # buffer memory -> one copy: the initial value every method shares
    hosted = {}  # a GPU tensor of the module -> its one host copy
    native_methods, specs, names = [], {}, {}
    buffers = set() if module is None else {id(b) for _, b in module.named_buffers()}
    for _, _, _, entry in parsed.values():
        if _is_exported(entry):
            buffers |= _exported_state(entry)[1]
    for mname, (examples, dynamic, ranges, entry) in parsed.items():
        if isinstance(examples, (torch.Tensor, int, float)):
            examples = (examples,)
        examples = tuple(examples)
        root = entry if _is_exported(entry) else _entry_root(module, mname, entry)
        captured = _capture_method(root, examples, dynamic)
        user = captured.user_names
        tensors = [_host(_as_tensor(x, n)) for x, n in zip(examples, user)]
        state = {}
        for target, t in captured.state.items():
            if id(t) in buffers:  # a buffer: its value now, not what the module does later
                t = snapshots.setdefault(id(t), _host(t).detach().clone())
            elif t.device.type != "cpu":
                t = hosted.setdefault(id(t), _host(t))
            state[target] = _to_capsule(t)
        native_methods.append((mname, json.dumps(captured.doc, allow_nan=False), os.getcwd(),
                               [_to_capsule(t) for t in tensors], state,
                               _dynamic_list(dynamic, user), _ranges_list(ranges, user)))
        specs[mname] = (captured.out_spec, captured.scalar_outputs)
        names[mname] = user
    native = C.compile_program(name or (type(module).__name__ if module is not None else "exported"),
                               native_methods,
                               list(caller_owned), str(dev))
    return Program(native, specs, names)


def load_program(path, device=None):
    """A program file (``Program.save``), or an engine file as a one-method program
    ``forward``. Loaded methods return their outputs flat: one tensor, or a tuple. ``device``
    ("cpu", "cuda[:N]"): run there instead of the device the program was compiled for (a
    program compiled for cuda runs on a machine without a GPU with ``device="cpu"``)."""
    dev = "" if device is None else str(torch.device(device))
    return Program(_native.load().load_program(os.fspath(path), dev), {}, {})


class Program:
    """Methods over one state table and one copy of the weights; immutable, shared by sessions."""

    def __init__(self, native, specs, user_names):
        self._native = native
        self._specs = specs
        self._inputs = {m: native.method_inputs(m) for m in native.methods}
        # Positional order: the captured user inputs (the method's own argument order).
        self._order = {m: list(user_names.get(m) or [i[0] for i in self._inputs[m] if not i[4]])
                       for m in native.methods}

    @property
    def name(self):
        return self._native.name

    @property
    def device(self):
        """Where every method runs and sessions hold their state (a torch.device)."""
        return torch.device(self._native.device)

    @property
    def methods(self):
        return list(self._native.methods)

    @property
    def state_names(self):
        return [s[0] for s in self._native.state]

    def input_names(self, method):
        """The inputs a call of ``method`` takes: positional ones first, then caller-owned state."""
        return [i[0] for i in self._inputs[self._method(method)]]

    @property
    def weight_bytes(self):
        return self._native.weight_bytes

    def describe(self):
        return _Text(self._native.describe())

    def save(self, path):
        self._native.save(os.fspath(path))

    def new_session(self, threads=None):
        """A new Session. ``threads``: the threads its calls' host kernels share (default None:
        on the cpu ``torch.get_num_threads()``, as eager PyTorch; 1 elsewhere)."""
        session = Session(self, self._native.new_session())
        session.threads = threads
        return session

    def _method(self, method):
        if method not in self._inputs:
            raise InputError("program '%s' has no method '%s'; its methods are %s"
                             % (self.name, method, ", ".join("'%s'" % m for m in self._inputs)))
        return method

    def __repr__(self):
        return "<inplace.Program %s: methods %s, state %s>" % (
            self.name, ", ".join(self.methods), ", ".join(self.state_names) or "(none)")


class Session:
    """One conversation: its own state (fixed addresses, across calls and ``reset()``), one
    call at a time. ``session.<method>(...)`` is ``session.run("<method>", ...)``. On CUDA, a
    call is enqueued on torch's current stream (after the session's previous call, whatever
    stream that was on) and returns without waiting; its outputs are tensors of their own, or
    views of the session's state."""

    def __init__(self, program, native):
        self.program = program
        self._native = native
        self._device = program.device

    def run(self, method, *args, **kwargs):
        p = self.program
        method = p._method(method)
        order, inputs = p._order[method], p._inputs[method]
        if len(args) > len(order):
            raise TypeError("method '%s' takes %d positional inputs (%s), got %d"
                            % (method, len(order), ", ".join(order), len(args)))
        given = dict(zip(order, args))
        for k, v in kwargs.items():
            if k in given:
                raise TypeError("method '%s': input '%s' given twice" % (method, k))
            given[k] = v
        dtypes = {i[0]: _DTYPES.get(i[2]) for i in inputs}
        tensors = {}
        for k, v in given.items():
            if not isinstance(v, torch.Tensor) and k in dtypes and dtypes[k] is not None:
                v = torch.tensor(v, dtype=dtypes[k])
            tensors[k] = _to_capsule(_as_tensor(v, k))
        leaves = [_from_result(r) for r in self._native.run(method, tensors,
                                                              _stream_of(self._device))]
        spec = p._specs.get(method)
        if spec is None:
            return leaves[0] if len(leaves) == 1 else tuple(leaves)
        out_spec, scalars = spec
        for i in scalars:
            leaves[i] = leaves[i].item()
        return _rebuild(out_spec, leaves)

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.program._inputs:
            raise AttributeError(name)
        return lambda *args, **kwargs: self.run(name, *args, **kwargs)

    def reset(self):
        """Every runtime-owned state back to its initial value, in place (addresses kept, so
        captured CUDA graphs stay valid). On CUDA it waits for the session's calls and for the
        work already on torch's current stream, then copies the initial values there."""
        self._native.reset(_stream_of(self._device))

    def state(self, name):
        """The live state ``name`` as a torch tensor over the session's memory (no copy, on the
        program's device): it sees every later call, and keeps the memory alive."""
        return _from_result(self._native.state(name))

    def synchronize(self):
        """Waits for the session's calls on the device and raises an error their kernels
        flagged (a position outside the cache)."""
        self._native.synchronize()

    def set_backend_option(self, key, value):
        """A backend option for every method: ``set_backend_option("cuda_graph", "off")``."""
        self._native.set_backend_option(key, value)

    @property
    def threads(self):
        """The threads every method's host kernels share, the caller's included (results do not
        depend on it). Assign a count, or None for the default (``Program.new_session``)."""
        return self._native.threads

    @threads.setter
    def threads(self, value):
        self._native.set_backend_option("threads", str(_thread_count(value, self._device)))

    def stats(self, method):
        """What the method's context counts: calls, and on CUDA graph_captures and
        graph_replays."""
        return dict(self._native.stats(self.program._method(method)))

    def states(self):
        return {n: self.state(n) for n, _, _, owner in self.program._native.state
                if owner == "runtime"}

    def generate(self, prompt_ids, max_new_tokens, *, temperature=0.0, top_k=0, top_p=1.0,
                 seed=0, stop_tokens=(), callback=None, start_position=0):
        """Prefill ``prompt_ids`` then decode up to ``max_new_tokens`` tokens in C++ (the GIL
        released; ``callback(token)`` called with it held as each token comes, returning False
        to stop). Greedy at temperature 0 or top_k 1, else sampled (top_k, top_p) from a
        generator seeded by ``seed``. Returns a GenerateResult: tokens, stopped_by,
        time_to_first_token_s, tokens_per_second. The methods' convention: docs/programs.md."""
        if isinstance(prompt_ids, torch.Tensor):
            prompt_ids = prompt_ids.reshape(-1).tolist()
        r = self._native.generate([int(t) for t in prompt_ids], int(max_new_tokens),
                                  float(temperature), int(top_k), float(top_p), int(seed),
                                  [int(t) for t in stop_tokens], callback, int(start_position))
        return GenerateResult(**r)


class GenerateResult:
    """What ``Session.generate`` returns."""

    def __init__(self, tokens, stopped_by, prompt_tokens, time_to_first_token_s,
                 tokens_per_second):
        self.tokens = list(tokens)
        self.stopped_by = stopped_by
        self.prompt_tokens = prompt_tokens
        self.time_to_first_token_s = time_to_first_token_s
        self.tokens_per_second = tokens_per_second

    def __repr__(self):
        return ("GenerateResult(tokens=%s, stopped_by=%r, time_to_first_token_s=%.4f, "
                "tokens_per_second=%.1f)" % (self.tokens, self.stopped_by,
                                             self.time_to_first_token_s, self.tokens_per_second))
