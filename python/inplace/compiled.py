"""``inplace.compile``: a PyTorch program compiled in process and called on torch tensors.

The compiled program is called like the original. Inputs cross into the engine by DLPack with
no copy; an input the program mutates is written in place (same object, same ``data_ptr()``),
and a mutated input the program returns comes back as that very object. A module's buffers are
the module's own tensors: what ``forward`` writes into them persists, and they read as
attributes of the compiled module under their own names.
"""
import functools
import json
import operator
import os

import torch
import torch.utils.dlpack as dlpack

from . import _native
from .capture import capture, rebuild
from .prepared_watch import PreparedWatch
from .state_watch import StateWatch

__all__ = ["CompiledProgram", "InputError", "compile"]


class InputError(ValueError):
    """A call argument the engine cannot take (wrong dtype, shape, device, or a tensor that
    would need a copy where the engine writes in place); the message names the input."""


def _to_capsule(t):
    # Always an alias of its own: the capsule holds the tensor object it is given, and
    # `x.data = y` on that object would free the memory the engine (or a result viewing it)
    # still reads. detach() shares the memory, not the object.
    t = t.detach()
    if t.dtype == torch.bool:  # torch 1.13 has no DLPack bool: cross as uint8, same bytes
        return (dlpack.to_dlpack(t.view(torch.uint8)), True)
    return (dlpack.to_dlpack(t), False)


def _from_result(r):
    """A result pair as a torch tensor. A view of a device context's own output buffer (which
    its next call rewrites) becomes the caller's own tensor: torch copies it on the current
    stream (the call's), from its caching allocator, so no call waits for the device."""
    t = dlpack.from_dlpack(r[0])
    if r[1]:
        t = t.view(torch.bool)
    return t.clone() if len(r) > 2 and r[2] else t


def _as_tensor(value, name, device=None):
    """A call argument as a tensor: Python numbers become 0-dim tensors on the engine's device."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, bool):
        return torch.tensor(value, device=device)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64, device=device)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float32, device=device)
    raise InputError("input '%s': expected a tensor or a Python number, got %s"
                     % (name, type(value).__name__))


def _refuse_grad_leaves(written, tensors, names, written_state=(), state=None):
    """Eager torch refuses to write in place into a leaf that requires grad (or a view of
    one) while grad mode is on; so does the compiled program, before anything is written."""
    if not torch.is_grad_enabled():
        return
    for k in written:  # named only when refused: a call looks at requires_grad alone
        if tensors[k].requires_grad:
            _refuse_grad_leaf("input '%s'" % names[k], tensors[k])
    for target in written_state:
        if state[target].requires_grad:
            _refuse_grad_leaf("state '%s'" % target, state[target])


def _refuse_grad_leaf(name, t):
    """Raises for ``t`` (which requires grad) where it is a leaf or a view of one."""
    base = t._base if t._base is not None else t
    if base.is_leaf:
        raise InputError(
            "%s is %sa leaf tensor that requires grad, and the program writes it in place, "
            "which torch refuses (\"a leaf Variable that requires grad is being used in an "
            "in-place operation\"): pass a tensor that does not require grad, or call under "
            "torch.no_grad()" % (name, "a view of " if t is not base else ""))


def _engine_device(device, examples, names, state):
    """The device the engine runs on: ``device`` when given, else the one device of the example
    tensors and the module's state (cpu when there are none; Python numbers go where the engine
    runs). Mixed devices are refused naming the first tensor that differs."""
    tensors = [("input '%s'" % n, t) for n, t in zip(names, examples)
               if isinstance(t, torch.Tensor)]
    tensors += [("state '%s'" % k, v) for k, v in state.items() if isinstance(v, torch.Tensor)]
    if device is None:
        cuda = [(what, t.device) for what, t in tensors if t.device.type == "cuda"]
        device = cuda[0][1] if cuda else torch.device("cpu")
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if device.type not in ("cpu", "cuda"):
        raise InputError("device %s: inplace runs engines on cpu and cuda" % device)
    for what, t in tensors:
        if t.device != device:
            raise InputError("%s is on %s, but the engine is compiled for %s (move it, or pass "
                             "device=)" % (what, t.device, device))
    why = _native.load().device_unavailable(str(device))
    if why:
        raise RuntimeError("inplace cannot compile for %s: %s" % (device, why))
    return device


def _precheck_devices(module_or_fn, example_inputs, device):
    """Before capture (which runs the program on the examples, where torch itself would fail on
    mixed devices): the examples and the module's state on one device, named as the program
    names them."""
    import inspect
    try:
        names = list(inspect.signature(module_or_fn.forward if isinstance(
            module_or_fn, torch.nn.Module) else module_or_fn).parameters)
    except (TypeError, ValueError):
        names = []
    names += ["#%d" % i for i in range(len(names), len(example_inputs))]
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    state = {}
    if isinstance(module_or_fn, torch.nn.Module):
        state = dict(module_or_fn.named_parameters())
        state.update(module_or_fn.named_buffers())
    if tensors or state:
        _engine_device(device, list(example_inputs), names, state)


def _no_stream():
    return 0


def _stream_getter(device):
    """A function of no arguments giving the caller's current torch stream on ``device`` as an
    integer (0 for the cpu): the engine enqueues its kernels there, ordered with the caller's own
    work, and does not wait for them. torch's raw getter (what its inductor calls; tenths of a
    microsecond) where torch has it, else ``torch.cuda.current_stream`` (about ten)."""
    if device.type != "cuda":
        return _no_stream
    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return functools.partial(raw, index)
    device = torch.device("cuda", index)
    return lambda: torch.cuda.current_stream(device).cuda_stream


_stream_getters = {}


def _stream_of(device):
    """The caller's current torch stream on ``device`` (0 for the cpu); see _stream_getter."""
    get = _stream_getters.get(device)
    if get is None:
        get = _stream_getter(device)
        if device.type != "cuda" or device.index is not None:  # "cuda": the current device's
            _stream_getters[device] = get
    return get()


_crossings = []


def _crossing():
    """The extension's TorchCrossing (torch's DLPack functions, handed over once): a call's
    inputs in and results out without a Python frame per tensor."""
    if not _crossings:
        _crossings.append(_native.load().TorchCrossing(
            dlpack.to_dlpack, getattr(torch._C, "_from_dlpack", dlpack.from_dlpack), torch.bool,
            torch.uint8))
    return _crossings[0]


_INT64 = (-2**63, 2**63 - 1)


def _input_name(key, names, what):
    """An input named by name or index, as ``what`` ("value_ranges") names it in errors."""
    if isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < len(names):
            raise InputError("%s: input index %d is out of range (%d inputs)"
                             % (what, key, len(names)))
        return names[key]
    if key not in names:
        raise InputError("%s: no input '%s' (inputs: %s)" % (what, key, ", ".join(names)))
    return key


def _int64(value, what):
    """``value`` as an int64 (the engine's integer), else an InputError saying ``what`` it is."""
    try:
        v = operator.index(value)
    except TypeError:
        raise InputError("%s is %r, not an integer" % (what, value)) from None
    if not _INT64[0] <= v <= _INT64[1]:
        raise InputError("%s is %d, outside int64 [%d, %d]" % (what, v, _INT64[0], _INT64[1]))
    return v


def _dynamic_list(dynamic, names):
    """{input: {dim: max}} or [(input, dim, max)] -> [(name, dim, max)]."""
    if not dynamic:
        return []
    out = []
    items = dynamic.items() if isinstance(dynamic, dict) else [(i, {d: m}) for i, d, m in dynamic]
    for key, dims in items:
        name = _input_name(key, names, "dynamic")
        for dim, bound in dims.items():
            out.append((name, _int64(dim, "dynamic: input '%s': the dim" % name),
                        _int64(bound, "dynamic: input '%s': the bound of dim %s" % (name, dim))))
    return out


def _ranges_list(value_ranges, names):
    """{input: (lo, hi)} -> [(name, lo, hi)]: int64 bounds, lo <= hi."""
    out = []
    for key, bounds in dict(value_ranges or {}).items():
        name = _input_name(key, names, "value_ranges")
        try:
            lo, hi = bounds
        except (TypeError, ValueError):
            raise InputError("value_ranges: input '%s': expected (lo, hi), got %r"
                             % (name, bounds)) from None
        lo = _int64(lo, "value_ranges: input '%s': the lower bound" % name)
        hi = _int64(hi, "value_ranges: input '%s': the upper bound" % name)
        if lo > hi:
            raise InputError("value_ranges: input '%s': the lower bound %d is above the upper "
                             "bound %d" % (name, lo, hi))
        out.append((name, lo, hi))
    return out


def _mutated_list(mutated, names):
    """{input name or index: output index} -> [(name, output)] (Torch-TensorRT's Tier B)."""
    if not mutated:
        return []
    out = []
    for key, output in dict(mutated).items():
        out.append((_input_name(key, names, "mutated_inputs"), int(output)))
    return out


def _copy_switch(copy_outputs):
    """``copy_outputs`` checked before anything is captured or compiled."""
    if not isinstance(copy_outputs, bool):
        raise TypeError("copy_outputs: expected True or False, got %r" % (copy_outputs,))


def _prepare_switch(prepare_weights):
    """``prepare_weights`` checked before anything is captured or compiled."""
    if prepare_weights is not None and not isinstance(prepare_weights, bool):
        raise TypeError("prepare_weights: expected None, True or False, got %r"
                        % (prepare_weights,))


def _thread_count(threads, device):
    """``threads`` checked, as the count the engine's context runs its host kernels on. None:
    on the cpu, torch.get_num_threads() (the threads eager PyTorch would use here); elsewhere 1
    (only steps without a kernel on the device run on the host)."""
    if threads is None:
        return torch.get_num_threads() if torch.device(device).type == "cpu" else 1
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 1024:
        raise ValueError("threads: expected a whole number from 1 to 1024, or None (on the cpu "
                         "torch.get_num_threads()), got %r" % (threads,))
    return threads


def _graph_switch(cuda_graph):
    """``cuda_graph`` (a bool) as the backend option; a cpu engine takes none and leaves it out."""
    if not isinstance(cuda_graph, bool):
        raise TypeError("cuda_graph: expected True or False, got %r" % (cuda_graph,))
    return {"cuda_graph": "on" if cuda_graph else "off"}


class _EngineRuntime:
    """What every Python object running an engine offers about its calls (``self._native``)."""

    def stats(self):
        """What the engine's context counted, by name: ``calls``, ``host_scalar_reads``,
        ``staged_inputs`` (inputs copied into the engine's memory at each call: strided ones, and
        on cuda small ones a loop passes as fresh tensors each call), and the
        backend's counters (on cuda: ``graph_captures``, ``graph_replays``, ``joined_steps``,
        ``scalars_on_device``, ``host_steps``, ``graph_off_for_host_steps``; docs/cuda.md)."""
        return dict(self._native.stats())

    @property
    def cuda_graph(self):
        """On a cuda engine: whether calls are captured once as a CUDA graph and replayed while
        every binding stays (default True). Assign False to run every call directly. A cpu
        engine has no graphs: it reads False and ignores an assignment."""
        if "cuda_graph" not in self._native.backend_option_keys:
            return False
        return self.__dict__.get("_cuda_graph", True)

    @cuda_graph.setter
    def cuda_graph(self, value):
        self._native.set_backend_options(_graph_switch(value))
        self.__dict__["_cuda_graph"] = value

    @property
    def host_steps(self):
        """The steps that run on the host because the engine's device has no kernel for their
        op (each also named in a warning at compile time): [(node, op, why, bytes per call)]."""
        return [tuple(h) for h in self._native.host_steps]

    @property
    def threads(self):
        """The threads a call's host kernels share, the caller's included (on the cpu every step;
        the products and attention split their rows over them, the results bit for bit those of
        one thread). Assign a count, or None for the default (``inplace.compile``'s ``threads``)."""
        return self._native.threads

    @threads.setter
    def threads(self, value):
        self._native.set_backend_options(
            {"threads": str(_thread_count(value, self._native.device))})


class CompiledProgram(_EngineRuntime, torch.nn.Module):
    """What ``inplace.compile`` returns. Attributes the compiled module does not have itself are
    read from the original module (``compiled.layers[0].k_cache``, ``get_buffer``)."""

    def __init__(self, native, module, captured, dynamic, example_metas):
        super().__init__()
        self.__dict__["_wrapped"] = module
        self._native = native
        self._captured = captured
        self._names = list(native.user_input_names)
        self._device = torch.device(native.device)
        self._state = dict(captured.state)  # target -> the module's own tensor
        kinds = {e.get("target"): e.get("kind") for e in
                 (captured.doc.get("signature") or {}).get("inputs", []) if e.get("target")}
        self._watch = StateWatch(module, self._state, kinds,
                                 list(dict.fromkeys(native.state_bindings.values())), InputError)
        self._written = list(native.written_user_inputs)
        self._written_state = [t for t in native.written_state if t in self._state]
        self._expected = {}  # name -> (shape, dtype, dynamic dims)
        dyn = {}
        for name, dim, bound in dynamic:
            dyn.setdefault(name, {})[dim % max(len(dict(zip(self._names, example_metas))[name][0]), 1)] = bound
        for name, (shape, dtype) in zip(self._names, example_metas):
            bounds = dyn.get(name, {})
            shape = tuple(bounds.get(d, s) for d, s in enumerate(shape))
            self._expected[name] = (shape, dtype, set(bounds))
        # What a call checks inline, per input: the dtype, and the shape where no dim is dynamic
        # (None: _check compares). Anything else takes _check, which also words every refusal.
        self._exact = [(dtype, None if dyn else shape)
                       for shape, dtype, dyn in (self._expected[n] for n in self._names)]
        self._on_cpu = self._device.type == "cpu"
        self._device_index = self._device.index
        self._stream = _stream_getter(self._device)
        self._run = functools.partial(_crossing().call, native)
        self._scalars = sorted(captured.scalar_outputs)
        self._rebuild_out = _rebuilder(captured.out_spec, native.num_outputs_user)
        self._grad_watch = bool(self._written or self._written_state)
        # State the engine keeps a prepared copy of (a Conv1D weight transposed into the rows its
        # product streams, made when bound), followed by torch's version counters.
        prepared = [t for t in native.prepared_state if t in self._state]
        self._prepared = PreparedWatch(self._state, prepared, native.state_written) \
            if prepared else None

    def weights_written(self, *targets):
        """Says that module state was written in place where torch's version counter does not
        see it (through ``.data``, a NumPy or DLPack view, another library's kernel): what the
        engine prepared from it (see ``compile``'s ``prepare_weights``) is made again before the
        next call. Without targets, every prepared entry; writes torch counts are seen unasked."""
        prepared = self._native.prepared_state
        for target in targets or prepared:
            if target in prepared:
                self._native.state_written(target)
            elif target not in self._state:
                raise InputError("no state '%s' in this program; its state: %s"
                                 % (target, ", ".join(sorted(self._state))))

    # ---- the module's attributes and state
    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            wrapped = self.__dict__.get("_wrapped")
            if wrapped is None:
                raise
            return getattr(wrapped, name)

    def named_buffers(self, *args, **kwargs):
        wrapped = self.__dict__.get("_wrapped")
        return wrapped.named_buffers(*args, **kwargs) if wrapped is not None else iter(())

    def named_parameters(self, *args, **kwargs):
        wrapped = self.__dict__.get("_wrapped")
        return wrapped.named_parameters(*args, **kwargs) if wrapped is not None else iter(())

    def get_buffer(self, target):
        wrapped = self.__dict__.get("_wrapped")
        return wrapped.get_buffer(target) if wrapped is not None else super().get_buffer(target)

    def get_parameter(self, target):
        wrapped = self.__dict__.get("_wrapped")
        return wrapped.get_parameter(target) if wrapped is not None else super().get_parameter(target)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def state_dict(self, *args, **kwargs):
        wrapped = self.__dict__.get("_wrapped")
        return wrapped.state_dict(*args, **kwargs) if wrapped is not None else {}

    # ---- calling
    def _check(self, index, value):
        name = self._names[index]
        t = _as_tensor(value, name, self._device)
        shape, dtype, dyn = self._expected[name]
        if t.device != self._device:
            raise InputError("input '%s' is on %s, but the engine runs on %s"
                             % (name, t.device, self._device))
        if t.dtype != dtype:
            raise InputError("input '%s': expected dtype %s, got %s" % (name, dtype, t.dtype))
        if t.dim() != len(shape) or any(
                (s > e if d in dyn else s != e) for d, (s, e) in enumerate(zip(t.shape, shape))):
            raise InputError("input '%s': expected shape %s%s, got %s"
                             % (name, list(shape), " (dims %s up to that)" % sorted(dyn) if dyn else "",
                                list(t.shape)))
        return t

    def forward(self, *args, **kwargs):
        if kwargs or len(args) != len(self._names):
            args = self._arranged(args, kwargs)
        self._watch.sync(self._state, self._rebind)  # replaced state: bound, or refused
        if self._prepared is not None:
            self._prepared.check()  # written in place since: copied again
        tensors = self._inputs(args)
        if self._grad_watch and torch.is_grad_enabled():
            _refuse_grad_leaves(self._written, tensors, self._names, self._written_state,
                                self._state)
        try:
            leaves = self._run(tensors, self._stream())
        except _native.load().Error as e:
            state = [t for t in self._native.partly_updated if t in self._state]
            if not state:
                raise
            raise type(e)("%s [python: the module's %s; restore it in place and call "
                          "compiled.reset(), or assign a restored tensor to the module, which "
                          "the next call binds]" % (e, ", ".join("'%s'" % t for t in state))
                          ) from None
        return self._outputs(leaves, args, tensors)

    def _arranged(self, args, kwargs):
        """The positional and keyword arguments as one argument per input, in order."""
        if kwargs:
            args = list(args)
            for name in self._names[len(args):]:
                if name not in kwargs:
                    raise TypeError("missing input '%s'" % name)
                args.append(kwargs.pop(name))
            if kwargs:
                raise TypeError("unexpected inputs %s" % ", ".join(sorted(kwargs)))
        if len(args) != len(self._names):
            raise TypeError("the program takes %d inputs (%s), got %d"
                            % (len(self._names), ", ".join(self._names), len(args)))
        return args

    def _inputs(self, args):
        """The arguments as the engine's input tensors. An input that is a plain tensor of the
        engine's device, the dtype and (no dim dynamic) the shape it was compiled for is taken as
        it is, after a few attribute reads; any other goes through _check, which converts a
        Python number and words a refusal exactly as before, the first input that fails first."""
        cpu, index, exact = self._on_cpu, self._device_index, self._exact
        tensors = args
        for i, a in enumerate(args):
            dtype, shape = exact[i]
            if (type(a) is torch.Tensor and a.dtype is dtype and a.shape == shape
                    and (a.is_cpu if cpu else a.is_cuda and a.get_device() == index)):
                continue
            if tensors is args:
                tensors = list(args)
            tensors[i] = self._check(i, a)
        return tensors

    def _outputs(self, leaves, args, tensors):
        """The engine's results (a torch tensor, or the input index / state target a result is)
        as the program returns them."""
        for j, r in enumerate(leaves):
            if type(r) is int:  # the caller's own object, as eager returns it
                leaves[j] = args[r] if isinstance(args[r], torch.Tensor) else tensors[r]
            elif type(r) is str:
                leaves[j] = self._state[r]
        for i in self._scalars:
            leaves[i] = leaves[i].item()
        return self._rebuild_out(leaves)

    def _call_parts(self, args):
        """[(part, function of no arguments)]: each part of a call with ``args`` on its own, as
        forward runs it (bench/call_overhead.py times them)."""
        tensors = self._inputs(args)
        stream = self._stream()
        leaves = self._run(tensors, stream)
        done = list(leaves)

        def grad():
            if self._grad_watch and torch.is_grad_enabled():
                _refuse_grad_leaves(self._written, tensors, self._names, self._written_state,
                                    self._state)
        return [("forward", lambda: self.forward(*args)),
                ("sync", lambda: self._watch.sync(self._state, self._rebind)),
                ("inputs", lambda: self._inputs(args)),
                ("grad", grad),
                ("stream", self._stream),
                ("native", lambda: self._run(tensors, stream)),
                ("outputs", lambda: self._outputs(list(done), args, tensors))]

    def _rebind(self, target, tensor):
        self._native.rebind_state(target, _to_capsule(tensor))

    # ---- recovery
    @property
    def copy_outputs(self):
        """On a cuda engine: whether each call's results are the caller's own tensors, copied by
        torch on the call's stream from the engine's output buffers (default True). Assign False
        to receive the buffers themselves, as torch.compile's CUDA graphs return theirs: no copy
        and no allocation a call, but a result is rewritten by the engine's next call (clone what
        must outlive it). A cpu engine's results are fresh tensors either way."""
        return self._native.copy_outputs

    @copy_outputs.setter
    def copy_outputs(self, value):
        _copy_switch(value)
        self._native.copy_outputs = value

    def reset(self):
        """Accepts the module state a failed call left partly updated (the call's error names
        it): restore it in place first (``m.k_cache.zero_()``), or assign a restored tensor to
        the module attribute instead, which the next call binds. Until one of the two, every
        call is refused naming the partly updated state."""
        self._native.reset()

    @property
    def partly_updated(self):
        """The inputs (names) and module state (targets) a failed call left partly updated,
        until they are bound anew (an input at every call, the module's state when replaced)
        or ``reset()`` is called."""
        return list(self._native.partly_updated)

    # ---- introspection
    @property
    def aliased_io(self):
        """{engine output index: (input name or state target, kind)}: the outputs whose value is
        written into an input's memory."""
        out = {}
        for output, user_input, target, kind in self._native.aliased_io:
            out[output] = (self._names[user_input] if user_input >= 0 else target, kind)
        return out

    @property
    def graph(self):
        """The captured graph (FX-like listing; ``print(compiled.graph)``)."""
        return _Text(self._native.graph_text())

    @property
    def lowered_graph(self):
        return _Text(self._native.lowered_text())

    @property
    def plan(self):
        return _Text(self._native.plan_text())

    @property
    def input_names(self):
        return list(self._names)

    @property
    def device(self):
        """The torch.device the engine runs on (its inputs and state live there)."""
        return self._device

    @property
    def captured_by(self):
        return self._captured.how


def _is_leaf_spec(spec):
    is_leaf = getattr(spec, "is_leaf", None)  # a TreeSpec method in torch 2
    if callable(is_leaf):
        return is_leaf()
    import torch.utils._pytree as pytree
    return isinstance(spec, getattr(pytree, "LeafSpec", ()))


def _rebuilder(spec, count):
    """``_rebuild`` for ``spec`` as a function of the leaves: one tensor, or a flat tuple of
    ``count`` of them (a TreeSpec's included), without walking the spec at each call. Checked
    once against ``_rebuild`` on stand-in leaves; any other structure takes ``_rebuild``."""
    general = functools.partial(_rebuild, spec)
    fast = None
    if spec is None:
        fast = operator.itemgetter(0) if count == 1 else tuple
    elif isinstance(spec, int) and not isinstance(spec, bool):
        fast = operator.itemgetter(spec)
    elif type(spec) is tuple and len(spec) > 1 and all(type(i) is int for i in spec):
        fast = operator.itemgetter(*spec)
    elif spec is not None and not isinstance(spec, (list, tuple)):
        try:
            children = getattr(spec, "children_specs", None)
            if _is_leaf_spec(spec):
                fast = operator.itemgetter(0)
            elif (getattr(spec, "type", None) is tuple and children
                  and all(_is_leaf_spec(c) for c in children)):
                fast = tuple
        except Exception:  # noqa: BLE001 - a spec of another form: the general walk
            fast = None
    if fast is None:
        return general
    probe = [object() for _ in range(count)]
    try:
        want, got = general(list(probe)), fast(list(probe))
    except Exception:  # noqa: BLE001
        return general
    same = want is got or (type(want) is type(got) is tuple and len(want) == len(got)
                           and all(a is b for a, b in zip(want, got)))
    return fast if same else general


def _rebuild(spec, leaves):
    if spec is None:
        return leaves[0] if len(leaves) == 1 else tuple(leaves)
    if isinstance(spec, (int, tuple, list)):
        return rebuild(spec, leaves)
    import torch.utils._pytree as pytree  # a torch.export TreeSpec
    return pytree.tree_unflatten(leaves, spec)


class _Text(str):
    """A string that prints as itself (so ``compiled.graph`` shows the listing in a REPL)."""

    def __repr__(self):
        return str(self)


def _capture_with(how, module_or_fn, example_inputs):
    if how == "make_fx":
        from .capture_concrete import capture_concrete
        return capture_concrete(module_or_fn, example_inputs)
    if how not in ("default", "torch.export", "torch.fx"):
        raise ValueError("capture_with: expected 'torch.export', 'torch.fx' or 'make_fx', got %r"
                         % (how,))
    return capture(module_or_fn, example_inputs, prefer_export=how != "torch.fx")


def _concrete_applies(example_inputs, dynamic):
    """Tracing at the examples' shapes (make_fx) is the fallback where it changes nothing the
    caller asked for: every input a tensor (a number would be baked in) and no dynamic dim (a
    size would be)."""
    from .capture_concrete import has_make_fx
    return (has_make_fx() and not dynamic
            and all(isinstance(x, torch.Tensor) for x in example_inputs))


def _symbolic_then_concrete(build):
    """Symbolic capture first (it keeps sizes and integer inputs as runtime values); where it
    cannot capture the program, or the engine refuses what it captured (shape arithmetic on
    traced sizes), the program is traced again at the examples' shapes."""
    try:
        return build("default")
    except InputError:  # the caller's arguments: the same under any capture
        raise
    except Exception as first:  # noqa: BLE001 - any refusal: try the concrete trace
        try:
            return build("make_fx")
        except Exception as second:  # noqa: BLE001
            if isinstance(first, _native.load().Error):  # the engine refused: its words first
                first.add_note("inplace: tracing at the examples' shapes failed too: %s: %s"
                               % (type(second).__name__, second))
                raise first
            second.add_note("inplace: symbolic tracing failed first: %s: %s"
                            % (type(first).__name__, first))
            raise second from None


def compile(module_or_fn, example_inputs, *, mutated_inputs=None, dynamic=None, value_ranges=None,
            alias=True, capture_with=None, device=None, cuda_graph=True, strict_device=False,
            copy_outputs=True, threads=None, prepare_weights=None):
    """Compiles ``module_or_fn`` for inputs like ``example_inputs`` and returns a
    CompiledProgram (an nn.Module) called like the original.

    ``mutated_inputs``: {input name or index: output index}, declaring that an output is the new
    value of an input (written into its memory). ``dynamic``: {input name or index: {dim: max}},
    bounded dynamic dims (memory planned at max). ``value_ranges``: {input: (lo, hi)}, the values
    an integer input may take. ``alias=False`` builds the copy-back engine. ``capture_with``:
    "torch.export", "torch.fx" or "make_fx" (default: torch.export where torch has it, else
    torch.fx, then make_fx at the examples' shapes where that fails; see capture_concrete.py). ``device``: "cpu"
    or "cuda[:N]" (default: where the example inputs and the module's state are; they must all
    be there). On cuda, calls enqueue the kernels on torch's current stream without waiting.
    ``cuda_graph``: on cuda, capture a call's work once as a CUDA graph and replay it while every
    binding stays (from the third call with the same inputs; ``compiled.stats()`` counts
    captures and replays); False runs every call directly; ignored on the cpu.
    ``strict_device``: refuse an op with no kernel on ``device`` instead of running it on the
    host with the copies it needs (named in a warning on stderr at compile time).
    ``copy_outputs=False``: on cuda, a call returns the engine's own output buffers, rewritten by
    its next call, instead of copies (``CompiledProgram.copy_outputs``).
    ``threads``: the threads a call's host kernels share (default None: on the cpu
    ``torch.get_num_threads()``, as eager PyTorch; 1 elsewhere). Results do not depend on it.
    ``prepare_weights``: a decode product over a weight stored [in, out] (GPT-2's Conv1D) reads a
    copy of the weight in [out, in] rows that the engine makes when it binds the weight, and again
    after the weight is written in place (torch's version counter, checked each call; writes it
    does not count: ``compiled.weights_written()``). It costs the weight's bytes once more.
    Default None: as the device's backend prefers (on for the cpu and CUDA); False reads the
    weights as they lie.
    """
    C = _native.load()
    _graph_switch(cuda_graph)  # a bad value is refused before the capture
    _copy_switch(copy_outputs)
    _prepare_switch(prepare_weights)
    _thread_count(threads, "cpu")
    if isinstance(example_inputs, (torch.Tensor, int, float)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    _precheck_devices(module_or_fn, example_inputs, device)

    def build(how):
        captured = _capture_with(how, module_or_fn, example_inputs)
        names = captured.user_names
        dev = _engine_device(device, example_inputs, names, captured.state)
        examples = [_as_tensor(x, n, dev) for x, n in zip(example_inputs, names)]
        dyn = _dynamic_list(dynamic, names)
        ranges = _ranges_list(value_ranges, names)
        native = C.compile_graph(
            json.dumps(captured.doc, allow_nan=False), os.getcwd(),
            [_to_capsule(t) for t in examples],
            {t: _to_capsule(v) for t, v in captured.state.items()},
            alias, _mutated_list(mutated_inputs, names), dyn, ranges, str(dev), strict_device,
            prepare_weights)
        return captured, native, examples, dyn

    if capture_with is not None or not _concrete_applies(example_inputs, dynamic):
        captured, native, examples, dyn = build(capture_with or "default")
    else:
        captured, native, examples, dyn = _symbolic_then_concrete(build)
    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else None
    metas = [(tuple(t.shape), t.dtype) for t in examples]
    compiled = CompiledProgram(native, module, captured, dyn, metas)
    compiled.cuda_graph = cuda_graph
    compiled.threads = threads
    if not copy_outputs:
        compiled.copy_outputs = False
    return compiled


def compile_graph(graph, example_inputs, state=None, *, mutated_inputs=None, dynamic=None,
                  value_ranges=None, alias=True, device=None, cuda_graph=True,
                  strict_device=False, copy_outputs=True, threads=None, prepare_weights=None):
    """Compiles a graph JSON document (a dict, or a path) as written, e.g. a torch.export graph
    with its signature: ``state`` maps each parameter/buffer/constant target to its tensor (the
    caller's, written in place when the program mutates it). Returns a CompiledProgram whose
    call returns the user outputs as a tuple. ``cuda_graph``, ``strict_device``,
    ``copy_outputs``, ``threads`` and ``prepare_weights`` as for ``compile``."""
    from .capture import Captured
    C = _native.load()
    _graph_switch(cuda_graph)
    _copy_switch(copy_outputs)
    _prepare_switch(prepare_weights)
    _thread_count(threads, "cpu")
    base_dir = os.getcwd()
    if not isinstance(graph, dict):
        base_dir = os.path.dirname(os.path.abspath(os.fspath(graph)))
        with open(graph) as f:
            graph = json.load(f)
    sig_inputs = (graph.get("signature") or {}).get("inputs") or []
    lifted = {e["node"] for e in sig_inputs if e.get("kind") != "user_input"}
    names = [n["name"] for n in graph["nodes"]
             if n.get("op") == "placeholder" and n["name"] not in lifted]
    state = dict(state or {})
    dev = _engine_device(device, example_inputs, names, state)
    examples = [_as_tensor(x, n, dev) for x, n in zip(example_inputs, names)]
    dyn = _dynamic_list(dynamic, names)
    ranges = _ranges_list(value_ranges, names)
    native = C.compile_graph(json.dumps(graph, allow_nan=False), base_dir,
                             [_to_capsule(t) for t in examples],
                             {t: _to_capsule(v) for t, v in state.items()}, alias,
                             _mutated_list(mutated_inputs, names), dyn, ranges, str(dev),
                             strict_device, prepare_weights)
    captured = Captured(graph, names, state, tuple(range(native.num_outputs_user)), set(),
                        "graph JSON", None)
    compiled = CompiledProgram(native, None, captured, dyn,
                               [(tuple(t.shape), t.dtype) for t in examples])
    compiled.cuda_graph = cuda_graph
    compiled.threads = threads
    if not copy_outputs:
        compiled.copy_outputs = False
    return compiled
