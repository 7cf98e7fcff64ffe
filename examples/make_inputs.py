#!/usr/bin/env python3
"""Writes each example's inputs.safetensors (deterministic values, standard library only)."""
import json, os, struct

def write_safetensors(path, tensors):
    codes = {"float32": ("F32", "f"), "int64": ("I64", "q")}
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, values) in tensors.items():
        code, fmt = codes[dtype]
        blob = struct.pack("<%d%s" % (len(values), fmt), *values)
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))

def seq(n, scale=0.25, shift=0.0):
    return [((i * 7919) % 23 - 11) * scale + shift for i in range(n)]

here = os.path.dirname(os.path.abspath(__file__))
examples = {
    "kv_cache_write": {"cache": ("float32", [1, 2, 8, 4], seq(64, 0.1)),
                       "k": ("float32", [1, 2, 1, 4], [1.0] * 8),
                       "q": ("float32", [1, 2, 1, 4], seq(8, 0.5)),
                       "pos": ("int64", [], [5])},
    "setitem_forms": {"x": ("float32", [4, 5], seq(20)),
                      "y": ("float32", [4, 2], seq(8, 1.0)),
                      "idx": ("int64", [2], [1, 3])},
    "inplace_chain": {"state": ("float32", [3, 4], seq(12)),
                      "x": ("float32", [3, 4], seq(12, 0.5, 0.25))},
    "aten_buffer_update": {"k": ("float32", [1, 2, 1, 4], seq(8, 1.0))},
}
for name, tensors in examples.items():
    write_safetensors(os.path.join(here, name, "inputs.safetensors"), tensors)
    print("wrote", name)
