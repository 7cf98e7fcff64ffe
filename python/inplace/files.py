"""Files: ``save`` / ``load`` a compiled module as one artifact, ``export`` graph JSON + weights.

``save(compiled, path)`` writes a program file (docs/programs.md) with one method ``forward``,
built from the engine already compiled: the module's parameters (and buffers it never writes)
are its weights, every buffer it writes is runtime-owned state whose initial value is the
buffer's value at save time, and the Python call convention (user input names, output
structure) is kept in the file's metadata. ``inplace exec path --inputs`` runs it with the user
inputs alone (a mutated user input is passed too); ``load(path)`` reads it back into a callable
called as the compiled module, backed by a session that owns the state. Files of earlier
versions, an engine file with its state beside it in ``path + ".state.safetensors"``, still
load; that state file is read for them only.
"""
import json
import os

import torch

from . import _native
from .capture import _SizeSpec, capture
from .compiled import (InputError, _as_tensor, _crossing, _EngineRuntime, _from_result,
                       _graph_switch, _rebuild, _refuse_grad_leaves, _stream_of, _Text,
                       _to_capsule)
from .fx_export import _dumps, write_constants
from .safetensors_io import read_safetensors, read_safetensors_metadata

__all__ = ["LoadedProgram", "export", "load", "save"]

_STATE_SUFFIX = ".state.safetensors"  # beside an engine file of an earlier version
_PROGRAM_MAGIC = b"INPLPROG"
_METHOD = "forward"
_CALL_KEY = "python.call"  # the Python call convention, in the program's metadata


def _spec_to_json(spec):
    if isinstance(spec, int):
        return spec
    if isinstance(spec, _SizeSpec):
        return {"size": [_spec_to_json(s) for s in spec]}
    if isinstance(spec, (tuple, list)):
        return {"tuple" if isinstance(spec, tuple) else "list": [_spec_to_json(s) for s in spec]}
    return None  # a torch.export TreeSpec: saved flat


def _spec_from_json(j):
    if j is None or isinstance(j, int):
        return j
    if "tuple" in j:
        return tuple(_spec_from_json(s) for s in j["tuple"])
    if "size" in j:
        return _SizeSpec(_spec_from_json(s) for s in j["size"])
    return [_spec_from_json(s) for s in j["list"]]


def save(compiled, path):
    """Writes the program file (see the module docstring); returns ``path``."""
    path = os.fspath(path)
    native = compiled._native
    state = {t: compiled._state[t].detach().cpu().contiguous()
             for t in set(native.state_bindings.values())}
    call = {
        "user_inputs": compiled.input_names,
        "user_outputs": list(native.user_outputs),
        "out_spec": _spec_to_json(compiled._captured.out_spec),
        "scalar_outputs": sorted(compiled._captured.scalar_outputs),
    }
    C = _native.load()
    program = C.program_from_compiled(native, {t: _to_capsule(v) for t, v in state.items()},
                                      {_CALL_KEY: json.dumps(call, allow_nan=False)})
    program.save(path)
    return path


class LoadedProgram:
    """A saved compiled module: called with the user inputs as the compiled module was, on a
    session of the program file that holds its state (``get_buffer(target)`` is that state,
    live; ``reset()`` restores the saved values). ``stats()``, ``cuda_graph`` and
    ``host_steps`` as for a compiled module; ``program`` and ``session`` are the
    ``inplace.Program`` and its ``Session``."""

    def __init__(self, program, call):
        from .program import Program
        self._native = program
        self.program = Program(program, {}, {})
        self.session = self.program.new_session()
        self.device = torch.device(program.device)
        inputs = program.method_inputs(_METHOD)  # (name, shape, dtype, dynamic, is state)
        self._names = list(call.get("user_inputs") or [i[0] for i in inputs])
        self._outputs = call.get("user_outputs")
        self._spec = _spec_from_json(call.get("out_spec"))
        self._scalars = call.get("scalar_outputs", [])
        self._aliased = {o: name for o, name, _ in program.aliased_io(_METHOD)}
        self._runtime = {s[0] for s in program.state if s[3] == "runtime"}
        self._state = {}  # runtime-owned state name -> its torch tensor (one object each)
        written = {s[0] for s in program.state if s[3] == "caller"}
        self._written = [k for k, n in enumerate(self._names) if n in written]

    @property
    def input_names(self):
        return list(self._names)

    @property
    def threads(self):
        """The threads a call's host kernels share (``Session.threads``)."""
        return self.session.threads

    @threads.setter
    def threads(self, value):
        self.session.threads = value

    @property
    def aliased_io(self):
        """{engine output index: (input name or state target, kind)}."""
        return {o: (name, kind) for o, name, kind in self._native.aliased_io(_METHOD)}

    @property
    def plan(self):
        return _Text(self._native.plan_text(_METHOD))

    @property
    def state(self):
        """The runtime-owned state by name: the session's live tensors."""
        return {n: self.get_buffer(n) for n in sorted(self._runtime)}

    def get_buffer(self, target):
        if target not in self._runtime:
            raise KeyError("'%s' is no state of the program; its state is %s" % (
                target, ", ".join("'%s'" % n for n in sorted(self._runtime)) or "(none)"))
        if target not in self._state:
            self._state[target] = self.session.state(target)
        return self._state[target]

    def reset(self):
        """Restores the state to the values saved in the file (in place) and accepts a session
        that a failed call left partly updated."""
        self.session.reset()

    def stats(self):
        return self.session.stats(_METHOD)

    @property
    def cuda_graph(self):
        if "cuda_graph" not in self._native.backend_option_keys:
            return False
        return self.__dict__.get("_cuda_graph", True)

    @cuda_graph.setter
    def cuda_graph(self, value):
        for key, v in _graph_switch(value).items():
            self.session.set_backend_option(key, v)
        self.__dict__["_cuda_graph"] = value

    @property
    def host_steps(self):
        return [tuple(h) for h in self._native.host_steps(_METHOD)]

    def __call__(self, *args):
        if len(args) != len(self._names):
            raise TypeError("the program takes %d inputs (%s), got %d"
                            % (len(self._names), ", ".join(self._names), len(args)))
        given = {n: _as_tensor(a, n, self.device) for a, n in zip(args, self._names)}
        _refuse_grad_leaves(self._written, [given[n] for n in self._names], self._names)
        refused = self.session._native.refused_reason
        if refused:
            raise _native.load().Error("[call] the state is partly updated: %s" % refused)
        results = self.session._native.run(_METHOD, {n: _to_capsule(t) for n, t in given.items()},
                                           _stream_of(self.device))
        picked = range(len(results)) if self._outputs is None else self._outputs
        leaves = [self._leaf(j, results[j], args, given) for j in picked]
        for i in self._scalars:
            leaves[i] = leaves[i].item()
        return _rebuild(self._spec, leaves)

    def _leaf(self, j, result, args, given):
        """Output ``j`` as eager returns it: the caller's tensor (or the state) it writes or
        is, else a tensor of its own."""
        name = self._aliased.get(j)
        if name in self._runtime:
            return self.get_buffer(name)
        t = _from_result(result)
        for a, n in zip(args, self._names):
            g = given[n]
            if n == name or (t.data_ptr() == g.data_ptr() and t.shape == g.shape
                             and t.stride() == g.stride() and t.dtype == g.dtype):
                return a if isinstance(a, torch.Tensor) else g
        return t


class _EngineWithStateFile(_EngineRuntime):
    """An engine file of an earlier version with its state file beside it (or alone: every
    binding is then an input), called as LoadedProgram is. The state is bound once, as a
    compiled module's is (``Session::bind_state``): a call passes the user inputs alone."""
    def __init__(self, path, state, state_targets, user_inputs, out_spec, scalar_outputs):
        self._native = _native.load().load_engine(
            path, {b: _to_capsule(t) for b, t in state.items()})
        # binding name -> the bound tensor (on the engine's device; mutated in place by calls)
        self.state = {b: _from_result(self._native.state_tensor(b)) for b in state}
        self._targets = state_targets
        self._bindings = list(self._native.user_input_names)  # the engine's order, state left out
        self._names = self._bindings if user_inputs is None else user_inputs  # the call's order
        self._spec = out_spec
        self._scalars = scalar_outputs
        self.device = torch.device(self._native.device)
        self._state_by_target = {t: state[b] for b, t in state_targets.items()}
        self._written = list(self._native.written_user_inputs)

    @property
    def input_names(self):
        return list(self._names)

    @property
    def aliased_io(self):
        out = {}
        for output, user_input, binding, kind in self._native.aliased_io:
            name = self._bindings[user_input] if user_input >= 0 else binding
            out[output] = (self._targets.get(name, name), kind)
        return out

    @property
    def plan(self):
        return _Text(self._native.plan_text())

    def get_buffer(self, target):
        return self._state_by_target[target]

    def reset(self):
        """Accepts the state a failed call left partly updated (restored in place, or not)."""
        self._native.reset()

    def __call__(self, *args):
        if len(args) != len(self._names):
            raise TypeError("the program takes %d inputs (%s), got %d"
                            % (len(self._names), ", ".join(self._names), len(args)))
        given = {n: _as_tensor(a, n, self.device) for a, n in zip(args, self._names)}
        tensors = [given[b] for b in self._bindings]
        _refuse_grad_leaves(self._written, tensors, self._bindings)
        leaves = _crossing().call(self._native, tensors, _stream_of(self.device))
        for j, r in enumerate(leaves):
            if type(r) is int:  # user input r (the engine's order) is the output
                a = args[self._names.index(self._bindings[r])]
                leaves[j] = a if isinstance(a, torch.Tensor) else tensors[r]
            elif isinstance(r, str):  # a state binding is the output
                leaves[j] = self.state[r]
        for i in self._scalars:
            leaves[i] = leaves[i].item()
        return _rebuild(self._spec, leaves)


def load(path):
    """Loads a file ``save`` wrote as a LoadedProgram (an engine file of an earlier version,
    with its state file, as an object called the same way)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        magic = f.read(8)
    if magic == _PROGRAM_MAGIC:
        native = _native.load().load_program(path, "")
        methods = list(native.methods)
        if methods != [_METHOD]:
            raise InputError("%s is a program of methods %s: load it with inplace.load_program"
                             % (path, ", ".join(methods)))
        meta = dict(native.metadata)
        return LoadedProgram(native, json.loads(meta.get(_CALL_KEY, "{}")))
    state_path = path + _STATE_SUFFIX
    if not os.path.exists(state_path):  # an engine alone: every binding is an input
        return _EngineWithStateFile(path, {}, {}, None, None, [])
    meta = read_safetensors_metadata(state_path)
    return _EngineWithStateFile(path, read_safetensors(state_path),
                                json.loads(meta.get("inplace.state_targets", "{}")),
                                json.loads(meta["inplace.user_inputs"]),
                                _spec_from_json(json.loads(meta.get("inplace.out_spec", "null"))),
                                json.loads(meta.get("inplace.scalar_outputs", "[]")))


def export(module_or_fn, example_inputs, path, constants_file="weights.safetensors"):
    """Writes the captured program as graph JSON at ``path`` (with its torch.export signature)
    and its state (parameters, buffers, constants, as they are now) into ``constants_file``
    beside it: the input of ``inplace compile`` / ``inplace exec``. Returns the path."""
    if isinstance(example_inputs, (torch.Tensor, int, float)):
        example_inputs = (example_inputs,)
    captured = capture(module_or_fn, tuple(example_inputs))
    doc = dict(captured.doc)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if captured.state:
        doc["constants"] = {
            t: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape),
                "file": constants_file, "key": t}
            for t, v in captured.state.items()}
        write_constants(path, constants_file, {t: v.detach() for t, v in captured.state.items()})
    text = _dumps(doc)
    if "signature" in doc:  # _dumps writes the fixed fields; the signature goes last
        text = text.rstrip().rstrip("}").rstrip() + ',\n  "signature": ' + json.dumps(doc["signature"]) + "\n}\n"
    with open(path, "w") as f:
        f.write(text)
    return path
