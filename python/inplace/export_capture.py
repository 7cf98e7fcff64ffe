"""Capture by ``torch.export`` (torch 2.x): the ExportedProgram's graph with its signature.

Parameters and buffers bind to the module's own tensors (so a buffer the program mutates is
updated on the module, as eager would); lifted tensor constants come from the program's
constants, and a constant that is the memory of a buffer (torch.export lifts some buffers as
constants) is merged into that buffer's placeholder, so one tensor is one binding.
"""
import torch
import torch.fx

from .captured import Captured, _named, _same_memory
from .fx_export import ExportError, graph_to_json

__all__ = ["capture_exported", "signature_of"]


def signature_of(ep, module=None):
    """[(placeholder, kind, target, tensor or None)] for the inputs and [(kind, target)] for the
    outputs of an ExportedProgram's graph signature, in graph JSON's spelling."""
    from torch.export.graph_signature import InputKind, OutputKind
    params = dict(_named(module.named_parameters)) if module is not None else {}
    buffers = dict(_named(module.named_buffers)) if module is not None else {}
    consts = getattr(ep, "constants", {}) or {}
    sd = ep.state_dict
    ins = []
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if spec.kind == InputKind.USER_INPUT:
            # A non-tensor user input (a None or number kwarg) is baked into the graph.
            kind = "user_input" if type(spec.arg).__name__ == "TensorArgument" else "constant_input"
            ins.append((name, kind, None, None))
        elif spec.kind == InputKind.PARAMETER:
            ins.append((name, "parameter", spec.target, params.get(spec.target, sd.get(spec.target))))
        elif spec.kind == InputKind.BUFFER:
            t = buffers.get(spec.target)
            if t is None:
                t = sd.get(spec.target, consts.get(spec.target))
            ins.append((name, "buffer", spec.target, t))
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            ins.append((name, "constant", spec.target, consts.get(spec.target)))
        else:
            raise ExportError("torch.export input '%s' is of kind %s, which inplace does not take"
                              % (name, spec.kind))
    outs = []
    for spec in ep.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT:
            outs.append(("user_output", None))
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            outs.append(("buffer_mutation", spec.target))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            outs.append(("user_input_mutation", spec.target))
        else:
            raise ExportError("torch.export output of kind %s is not supported" % spec.kind)
    return ins, outs


def _is_grad_mode_region(node):
    t = node.target
    name = getattr(t, "_name", None) or getattr(t, "__name__", None) or str(t)
    return node.op == "call_function" and name.endswith("wrap_with_set_grad_enabled")


def inline_grad_mode_regions(gm):
    """torch.export records a region run under another grad mode (a ``torch.no_grad()`` block in
    forward, exported with grad enabled) as ``wrap_with_set_grad_enabled(enabled, submodule,
    *args)``. Grad mode changes no value an inference engine computes: the submodule's nodes
    are copied in its place, and its results replace the region's (``getitem`` of a tuple)."""
    import operator
    regions = [n for n in gm.graph.nodes if _is_grad_mode_region(n)]
    for node in regions:
        sub_node = node.args[1]
        sub = getattr(gm, sub_node.target)
        env = {}
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        for p, a in zip(placeholders, node.args[2:]):
            env[p] = a
        out = None
        with gm.graph.inserting_before(node):
            for n in sub.graph.nodes:
                if n.op == "placeholder":
                    continue
                if n.op == "output":
                    out = n.args[0]
                    continue
                if n.op == "get_attr":  # the submodule's own attribute, moved to the parent
                    name = "%s_%s" % (sub_node.target, n.target.replace(".", "_"))
                    setattr(gm, name, getattr(sub, n.target))
                    env[n] = gm.graph.get_attr(name)
                    env[n].meta = dict(n.meta)
                    continue
                env[n] = gm.graph.node_copy(n, lambda x: env[x])
        result = torch.fx.node.map_arg(out, lambda x: env[x])
        for user in list(node.users):
            if user.op == "call_function" and user.target is operator.getitem:
                user.replace_all_uses_with(result[user.args[1]])
                gm.graph.erase_node(user)
        if node.users:
            node.replace_all_uses_with(result)
        gm.graph.erase_node(node)
        if not sub_node.users:
            gm.graph.erase_node(sub_node)
    if regions:
        gm.recompile()


def capture_exported(module, example_inputs):
    """``module``: an nn.Module (exported here) or an ExportedProgram (its state is then the
    program's own tensors)."""
    if isinstance(module, torch.export.ExportedProgram):
        ep, module = module, None
    else:
        # An engine computes values, never gradients: exported without grad mode, a
        # `torch.no_grad()` region inside forward is no region at all.
        with torch.no_grad():
            ep = torch.export.export(module, tuple(example_inputs))
    # A copy of the graph (the nodes and their meta; attributes shared): the edits below must
    # leave the ExportedProgram as it was.
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(ep.graph_module.graph, {}))
    gm = torch.fx.GraphModule(ep.graph_module, graph)
    inline_grad_mode_regions(gm)
    for node in list(gm.graph.nodes):  # runtime guard checks some releases add: no data work
        if node.op == "call_module" and str(node.target).startswith("_guards") and not node.users:
            gm.graph.erase_node(node)
    ins, outs = signature_of(ep, module)
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    state, sig_inputs, user_names = {}, [], []
    for name, kind, target, tensor in ins:
        if kind == "constant_input":
            node = placeholders.get(name)
            if node is not None:
                if node.users:
                    raise ExportError("torch.export input '%s' is a constant the graph reads; "
                                      "pass it as a tensor" % name)
                gm.graph.erase_node(node)
            continue
        if kind == "user_input":
            user_names.append(name)
            sig_inputs.append({"kind": kind, "node": name})
            continue
        if tensor is None:
            raise ExportError("torch.export %s '%s' has no tensor in the program" % (kind, target))
        merged = None
        for t_name, t in state.items():
            if _same_memory(t, tensor):
                merged = t_name
                break
        if merged is not None:  # a lifted constant that is a buffer's memory: one binding
            keep = next(e["node"] for e in sig_inputs if e.get("target") == merged)
            placeholders[name].replace_all_uses_with(placeholders[keep])
            gm.graph.erase_node(placeholders[name])
            continue
        state[target] = tensor
        sig_inputs.append({"kind": kind, "node": name, "target": target})
    gm.recompile()
    doc, constants = graph_to_json(gm, type(module).__name__ if module is not None else "exported")
    if constants:
        raise ExportError("the exported graph reads attributes %s outside its signature"
                          % ", ".join(sorted(constants)))
    doc["signature"] = {
        "inputs": sig_inputs,
        "outputs": [{"kind": k, "target": t} if t is not None else {"kind": k} for k, t in outs],
    }
    out_spec = None
    try:
        out_spec = ep.module_call_graph[0].signature.out_spec
    except (AttributeError, IndexError):
        call_spec = getattr(ep, "call_spec", None)
        out_spec = getattr(call_spec, "out_spec", None)
    return Captured(doc, user_names, state, out_spec, set(), "torch.export", gm)
