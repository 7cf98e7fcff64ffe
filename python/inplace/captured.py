"""What a capture gives (``Captured``) and the helpers both capture paths share: capture.py
(torch.fx, and the entry point) and export_capture.py (torch.export) import it, never each
other."""

__all__ = ["Captured"]


class Captured:
    """A captured program: ``doc`` (graph JSON with signature), ``user_names`` (placeholders the
    caller feeds, in order), ``state`` (target -> the module's tensor), ``out_spec`` (the output
    structure with leaf indices), ``scalar_outputs`` (leaf indices that are Python numbers),
    ``how`` ("torch.export" or "torch.fx")."""

    def __init__(self, doc, user_names, state, out_spec, scalar_outputs, how, graph_module):
        self.doc = doc
        self.user_names = user_names
        self.state = state
        self.out_spec = out_spec
        self.scalar_outputs = scalar_outputs
        self.how = how
        self.graph_module = graph_module


def _named(fn):
    """Every name of every tensor (tied weights under each name), on any torch version."""
    try:
        return fn(remove_duplicate=False)
    except TypeError:  # torch 1.13: no remove_duplicate; named_modules lists each name
        return fn()


def _same_memory(a, b):
    return (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
            and a.dtype == b.dtype)
