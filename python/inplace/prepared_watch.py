"""The module state an engine prepares copies from, followed at every call.

A compiled module's products over weights stored [in, out] (GPT-2's Conv1D) read copies of them
in [out, in] rows that the engine makes when it binds a weight (``prepare_weights``). A weight
written in place afterwards must be copied again: torch counts every in-place write to a tensor
(or a view of it) in its version counter, and ``PreparedWatch.check`` compares each prepared
weight's counter with the one it saw, at every call, before the engine runs (the extension's
VersionWatch reads the counter's word raw where it knows torch's layout: a few loads a weight;
else ``t._version``). A moved counter makes the engine copy that weight again; a replaced weight
was bound anew by StateWatch, which copied it. Writes torch does not count (through ``.data``, a
NumPy or DLPack view) need ``CompiledProgram.weights_written``.
"""
import torch

__all__ = ["PreparedWatch"]

_layout = []  # [(the extension or None, its VersionLayout)], calibrated at the first watch


def _native_versions():
    """The extension and where this torch keeps a tensor's version, or (None, None)."""
    if not _layout:
        try:
            from .state_watch import _native_layout
            native, tensors = _native_layout()
            probe = torch.zeros(4)
            for _ in range(7):
                probe.add_(0)
            data_a, data_b = probe.data, probe.data
            layout = native.calibrate_versions(tensors, probe, probe.detach(), data_a, data_b)
            _layout.append((native, layout))
        except Exception:  # no extension, or one without VersionWatch: the check in Python
            _layout.append((None, None))
    return _layout[0]


class PreparedWatch:
    """``state`` (target -> the module's tensor, kept current by StateWatch), ``targets`` the
    entries the engine prepares copies from, ``written(target)`` what tells the engine."""

    def __init__(self, state, targets, written):
        self._state = state
        self._targets = list(targets)
        self._written = written
        self._moved = self._watch()

    def _watch(self):
        native, layout = _native_versions()
        if native is not None and layout is not None:
            return native.VersionWatch(layout, self._state, self._targets).moved
        state = self._state
        seen = {t: (state[t], state[t]._version) for t in self._targets}

        def moved():
            out = []
            for t, (tensor, version) in seen.items():
                now = state.get(t)
                if now is not tensor:
                    out.append((t, True))
                elif now._version != version:
                    seen[t] = (now, now._version)
                    out.append((t, False))
            return out
        return moved

    def check(self):
        moved = self._moved()
        if not moved:
            return
        replaced = False
        for target, was_replaced in moved:
            if was_replaced:
                replaced = True  # bound anew by StateWatch.sync, which made the copy again
            else:
                self._written(target)
        if replaced:
            self._moved = self._watch()

    def raw_tensors(self):
        """How many weights the extension reads raw (tests); None on the Python path."""
        native, layout = _native_versions()
        if native is None or layout is None:
            return None
        return native.VersionWatch(layout, self._state, self._targets).raw_tensors
