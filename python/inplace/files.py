"""Files: ``save`` / ``load`` an engine for the C++ runtime, ``export`` graph JSON + weights.

``save(compiled, path)`` writes the engine file (docs/engine-format.md) at ``path`` and, beside
it, ``path + ".state.safetensors"``: the tensors of the engine's state bindings (parameters,
buffers, constants) keyed by binding name, as they are now, with the user input names and the
output structure in its metadata. ``inplace exec path --inputs`` takes user inputs and state
from one safetensors file keyed by binding name; ``load(path)`` reads both files back into a
callable that owns the state (a buffer the engine mutates persists in it across calls).
"""
import json
import os

import torch

from . import _native
from .capture import _SizeSpec, capture
from .compiled import (InputError, _as_tensor, _EngineRuntime, _from_result, _rebuild,
                       _refuse_grad_leaves, _stream_of, _Text, _to_capsule)
from .fx_export import _dumps
from .safetensors_io import read_safetensors, read_safetensors_metadata, write_safetensors

__all__ = ["LoadedProgram", "export", "load", "save"]

_STATE_SUFFIX = ".state.safetensors"


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
    """Writes the engine (and its state file beside it); see the module docstring."""
    path = os.fspath(path)
    compiled._native.save(path)
    bindings = compiled._native.state_bindings  # binding name -> state target
    state = {b: compiled._state[t].detach().cpu().contiguous() for b, t in bindings.items()}
    meta = {
        "inplace.user_inputs": json.dumps(compiled.input_names),
        "inplace.state_targets": json.dumps(bindings),
        "inplace.out_spec": json.dumps(_spec_to_json(compiled._captured.out_spec)),
        "inplace.scalar_outputs": json.dumps(sorted(compiled._captured.scalar_outputs)),
    }
    write_safetensors(path + _STATE_SUFFIX, state, meta)
    return path


class LoadedProgram(_EngineRuntime):
    """An engine loaded from a file with its state: called with the user inputs (``stats()``,
    ``cuda_graph`` and ``host_steps`` as for a compiled program)."""

    def __init__(self, native, state, state_targets, user_inputs, out_spec, scalar_outputs):
        self._native = native
        self.state = state  # binding name -> tensor (owned here; mutated in place by calls)
        self._targets = state_targets
        self._names = user_inputs
        self._spec = out_spec
        self._scalars = scalar_outputs
        self._bindings = list(native.user_input_names)
        self.device = torch.device(native.device)
        self._state_by_target = {t: state[b] for b, t in state_targets.items()}
        self._written = [k for k in native.written_user_inputs if self._bindings[k] not in state]
        self._partly = []  # state bindings a failed call left partly updated, until reset()

    @property
    def input_names(self):
        return list(self._names)

    @property
    def aliased_io(self):
        out = {}
        for output, binding, _, kind in self._native.aliased_io:
            name = self._bindings[binding]
            out[output] = (self._targets.get(name, name), kind)
        return out

    @property
    def plan(self):
        return _Text(self._native.plan_text())

    def get_buffer(self, target):
        return self._state_by_target[target]

    def reset(self):
        """Accepts the state a failed call left partly updated (restored in place, or not)."""
        self._partly = []
        self._native.reset()

    def __call__(self, *args):
        if len(args) != len(self._names):
            raise TypeError("the program takes %d inputs (%s), got %d"
                            % (len(self._names), ", ".join(self._names), len(args)))
        given = {n: _as_tensor(a, n, self.device) for a, n in zip(args, self._names)}
        tensors = []
        for b in self._bindings:
            tensors.append(self.state[b] if b in self.state else given[b])
        _refuse_grad_leaves(self._written, tensors, self._bindings)
        if self._partly:
            # The state is bound anew at every call: the refusal the engine keeps for a
            # context's own bindings is kept here.
            raise _native.load().Error(
                "[call] a failed call left the state %s partly updated; restore it (.state) "
                "and call reset()" % ", ".join("'%s'" % b for b in self._partly))
        try:
            results = self._native.call([_to_capsule(t) for t in tensors],
                                        _stream_of(self.device))
        except _native.load().Error:
            self._partly = [b for b in self._native.partly_updated if b in self.state]
            raise
        leaves = []
        for r in results:
            if type(r) is int:
                b = self._bindings[r]
                leaves.append(self.state[b] if b in self.state else
                              (args[self._names.index(b)] if isinstance(args[self._names.index(b)], torch.Tensor) else given[b]))
            else:
                leaves.append(_from_result(r))
        for i in self._scalars:
            leaves[i] = leaves[i].item()
        return _rebuild(self._spec, leaves)


def load(path):
    """Loads an engine saved by ``save`` (with its state file) as a LoadedProgram."""
    path = os.fspath(path)
    native = _native.load().load_engine(path)
    state_path = path + _STATE_SUFFIX
    if os.path.exists(state_path):
        state = read_safetensors(state_path)
        meta = read_safetensors_metadata(state_path)
        targets = json.loads(meta.get("inplace.state_targets", "{}"))
        users = json.loads(meta["inplace.user_inputs"])
        spec = _spec_from_json(json.loads(meta.get("inplace.out_spec", "null")))
        scalars = json.loads(meta.get("inplace.scalar_outputs", "[]"))
        if native.device != "cpu":  # the state lives where the engine runs
            state = {b: t.to(native.device) for b, t in state.items()}
    else:  # an engine alone: every binding is an input
        state, targets, users, spec, scalars = {}, {}, list(native.user_input_names), None, []
    return LoadedProgram(native, state, targets, users, spec, scalars)


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
        write_safetensors(os.path.join(folder, constants_file),
                          {t: v.detach() for t, v in captured.state.items()})
    text = _dumps(doc)
    if "signature" in doc:  # _dumps writes the fixed fields; the signature goes last
        text = text.rstrip().rstrip("}").rstrip() + ',\n  "signature": ' + json.dumps(doc["signature"]) + "\n}\n"
    with open(path, "w") as f:
        f.write(text)
    return path
