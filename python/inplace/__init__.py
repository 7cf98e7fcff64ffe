"""inplace: the Python frontend (torch.fx -> graph JSON, safetensors I/O)."""
from .safetensors_io import read_safetensors, read_safetensors_metadata, write_safetensors
from .fx_export import (ExportError, ExportResult, FullTracer, export_graph, graph_to_json,
                        read_outputs, target_name, trace, write_inputs)

__all__ = [
    "ExportError", "ExportResult", "FullTracer", "export_graph", "graph_to_json", "read_outputs",
    "target_name", "trace", "write_inputs", "read_safetensors", "read_safetensors_metadata",
    "write_safetensors",
]
