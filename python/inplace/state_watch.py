"""A compiled module's state followed at every call.

The engine binds the module's parameters and buffers once, at compile, and holds their memory
(a tensor the module drops stays alive while the engine binds it). Before each call,
``StateWatch.sync`` looks at what the module holds now under each bound name: a tensor replaced
(``m.k_cache = torch.zeros(...)``, ``m.proj.weight.data = w``) with one of the same shape, dtype
and device is bound in its place; one converted or reshaped (``m.double()``), or gone, is
refused with an ``InputError`` naming it, before anything runs. Names that shared one memory at
compile (tied weights) must still share it. Per call, the check (the extension's StateCheck) is a
dict lookup and a comparison of the words torch keeps the tensor's key in, per state tensor
(tens of nanoseconds each); a change takes the full walk.
"""
import torch

__all__ = ["StateWatch"]


def _attr(obj, name):
    """getattr(obj, name) without nn.Module.__getattr__ where the module's dicts have it."""
    d = obj.__dict__
    v = d.get(name)
    if v is not None:
        return v
    for store in ("_parameters", "_buffers", "_modules"):
        s = d.get(store)
        if s is not None:
            v = s.get(name)
            if v is not None:
                return v
    return getattr(obj, name)


def _key(t):
    """What a binding depends on: a replaced storage, a view or a conversion changes it."""
    return (t.data_ptr(), t.shape, t.stride(), t.dtype)


def _same_memory(a, b):
    return _key(a) == _key(b) and a.device == b.device


def _describe(t):
    return _describe_spec((t.dtype, t.shape, t.device))


class _Entry:
    __slots__ = ("name", "atoms", "seen", "key", "spec", "tied_to")

    def __init__(self, name, t, tied_to=None):
        self.name = name
        self.atoms = tuple(name.split("."))
        self.seen = t  # the module's tensor at the last sync
        self.key = _key(t)  # and its memory then (a Parameter's .data may change under it)
        self.spec = (t.dtype, t.shape, t.device)  # what the engine was compiled for
        self.tied_to = tied_to  # another name of the same memory at compile


class StateWatch:
    """The module's state tensors the engine binds, as ``sync`` last saw them."""

    def __init__(self, module, state, kinds, bound, error):
        """``state``: target -> the tensor bound at compile; ``kinds``: target -> "parameter",
        "buffer" or "constant"; ``bound``: the targets the engine binds (a state entry of the
        same memory as a bound one is read through it); ``error``: the exception to raise."""
        self._module = module
        self._kinds = kinds
        self._error = error
        self._entries = []
        self._fast = None
        if module is None:
            return
        for target in bound:
            try:
                cur = self._fetch(tuple(target.split(".")))
            except AttributeError:
                continue  # not the module's (a constant of the graph)
            if isinstance(cur, torch.Tensor) and _same_memory(cur, state[target]):
                self._entries.append(_Entry(target, cur))
        # Other names of a bound memory (tied weights, a state entry merged into another's
        # binding) must keep sharing it.
        primaries = list(self._entries)
        names = [(t, v) for t, v in state.items() if t not in bound]
        self._kinds = dict(kinds)
        for prefix, mod in module.named_modules(remove_duplicate=False):
            for kind, store in (("parameter", mod._parameters), ("buffer", mod._buffers)):
                for n, v in store.items():
                    if v is not None:
                        names.append((prefix + "." + n if prefix else n, v))
                        self._kinds.setdefault(names[-1][0], kind)
        seen = set(bound)
        for name, t in names:
            if name in seen:
                continue
            seen.add(name)
            tied = next((e.name for e in primaries if _same_memory(t, e.seen)), None)
            if tied is not None:
                try:
                    self._fetch(tuple(name.split(".")))
                except AttributeError:
                    continue
                self._entries.append(_Entry(name, t, tied))

        self._fast = self._index()

    def _index(self):
        """The fast check, over records of each module on the way to a state tensor as its
        parent holds it and each tensor in its owner's dict: true while all are unchanged. None
        where a name is held elsewhere (a plain attribute): every call then takes the full
        walk. The extension's StateCheck where it loads (a few loads per tensor), else Python."""
        links, tensors = {}, []
        for e in self._entries:
            parent = self._module
            for a in e.atoms[:-1]:
                modules = parent.__dict__.get("_modules")
                child = modules.get(a) if modules is not None else None
                if child is None or a in parent.__dict__:
                    return None
                links[(id(parent), a)] = (modules, a, child)
                parent = child
            leaf, d = e.atoms[-1], parent.__dict__
            stores = [d.get(k) for k in ("_parameters", "_buffers")]
            store = next((x for x in stores if x is not None and leaf in x), None)
            if store is None or leaf in d:
                return None
            tensors.append((store, leaf, e.seen) + e.key)
        links = list(links.values())
        native, layout = _native_layout()
        if native is not None:
            return native.StateCheck(layout, links, tensors).unchanged
        return lambda: _unchanged(links, tensors)

    def _fetch(self, atoms):
        obj = self._module
        for a in atoms:
            obj = _attr(obj, a)
        return obj

    def _what(self, name):
        return "%s '%s'" % (self._kinds.get(name, "state"), name)

    def sync(self, state, rebind):
        """Follows every replaced tensor: ``state[target]`` becomes the module's tensor and
        ``rebind(target, tensor)`` binds it. Raises before binding anything it refuses."""
        fast = self._fast
        if fast is not None and fast():
            return
        changed = []
        for e in self._entries:
            try:
                cur = self._fetch(e.atoms)
            except AttributeError:
                cur = None
            if cur is not e.seen or _key(cur) != e.key:
                changed.append((e, cur))
        if not changed:
            self._fast = self._index()
            return
        # A name tied to a replaced tensor must follow it, whether or not it changed itself.
        moved = {e.name for e, _ in changed}
        listed = {id(e) for e, _ in changed}
        for e in self._entries:
            if e.tied_to in moved and id(e) not in listed:
                changed.append((e, e.seen))
        refused = [why for why in (self._refusal(e, cur) for e, cur in changed) if why]
        if refused:  # everything checked before anything is bound
            raise self._error("; ".join(refused))
        for e, cur in changed:
            if e.tied_to is None:
                if _key(cur) != e.key or cur.device != e.spec[2]:
                    rebind(e.name, cur)
                state[e.name] = cur
            e.seen, e.key = cur, _key(cur)
        self._fast = self._index()

    def _refusal(self, e, cur):
        """Why the module's tensor `cur` under e's name cannot be bound, or None."""
        what = self._what(e.name)
        if not isinstance(cur, torch.Tensor):
            return ("%s is gone from the module (now %s), but the compiled program binds it: "
                    "compile again" % (what, type(cur).__name__))
        if e.tied_to is not None:
            try:
                now = self._fetch(tuple(e.tied_to.split(".")))
            except AttributeError:
                now = None
            if not (isinstance(now, torch.Tensor) and _same_memory(cur, now)):
                return ("%s was one tensor with '%s' at compile (the engine reads one memory "
                        "for both) and is now another: compile again" % (what, e.tied_to))
            return None
        if (cur.dtype, cur.shape, cur.device) != e.spec:
            return ("%s is now %s, but the engine was compiled for %s: compile again after "
                    "converting or resizing the module"
                    % (what, _describe(cur), _describe_spec(e.spec)))
        return None


def _unchanged(links, tensors):
    """The fast check in Python (no extension): every record where the last sync saw it."""
    for modules, name, child in links:
        if modules.get(name) is not child:
            return False
    for store, name, seen, ptr, shape, stride, dtype in tensors:
        t = store.get(name)
        if (t is not seen or t.data_ptr() != ptr or t.shape != shape or t.dtype is not dtype
                or t.stride() != stride):
            return False
    return True


_layout = []  # [(the extension or None, its TensorLayout)], calibrated at the first index


def _native_layout():
    """The extension and where this torch keeps a tensor's key (calibrated once on a probe of
    known sizes, strides and offset), or (None, None) without the extension."""
    if not _layout:
        try:
            from . import _native
            native = _native.load()
            probe = torch.empty(1000).as_strided((3, 5, 7), (211, 37, 3), 101)
            _layout.append((native, native.calibrate_tensor_layout(
                probe, probe.view(torch.int32), (torch.Tensor, torch.nn.Parameter))))
        except Exception:  # no extension, or one without StateCheck: the check in Python
            _layout.append((None, None))
    return _layout[0]


def _describe_spec(spec):
    dtype, shape, device = spec
    return "%s %s on %s" % (str(dtype).replace("torch.", ""), list(shape), device)
