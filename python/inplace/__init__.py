"""inplace: compile PyTorch programs with in-place state and run them in process.

``inplace.compile(module_or_fn, example_inputs)`` captures the program (torch.export where
torch has it, else torch.fx), compiles it in process and returns a callable that updates the
caller's tensors in place. The graph JSON frontend (``export_graph``, safetensors I/O) works
without the extension module.
"""
from .safetensors_io import read_safetensors, read_safetensors_metadata, write_safetensors
from .fx_export import (ExportError, ExportResult, FullTracer, export_graph, graph_to_json,
                        read_outputs, target_name, trace, write_inputs)
from .compiled import CompiledProgram, InputError, compile, compile_graph
from .files import LoadedProgram, export, load, save
from .program import GenerateResult, Program, Session, compile_program, load_program
from . import _native


def native():
    """The extension module (raises ImportError saying how to build it when it is missing)."""
    return _native.load()


def __getattr__(name):
    if name == "Error":  # the extension's exception type: errors raised by the C++ library
        return _native.load().Error
    raise AttributeError(name)


__all__ = [
    "CompiledProgram", "ExportError", "GenerateResult", "Program", "Session", "compile_program",
    "load_program", "ExportResult", "FullTracer", "InputError", "LoadedProgram",
    "compile", "compile_graph", "export", "export_graph", "graph_to_json", "load", "native", "read_outputs",
    "save", "target_name", "trace", "write_inputs", "read_safetensors",
    "read_safetensors_metadata", "write_safetensors",
]
