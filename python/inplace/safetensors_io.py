"""A small safetensors reader/writer for torch tensors (no `safetensors` package needed).

The format: an 8-byte little-endian header length, a JSON header
``{"<key>": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}}``
and then the data, each tensor row-major and little-endian. The writer pads the header with
spaces so the data starts 8-byte aligned (as the reference implementation does).
"""
import json
import struct
import sys

import torch

__all__ = ["read_safetensors", "write_safetensors", "read_safetensors_metadata"]

_CODE_OF = {
    torch.float32: "F32",
    torch.float64: "F64",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
_DTYPE_OF = {code: dtype for dtype, code in _CODE_OF.items()}

if sys.byteorder != "little":  # the format is little-endian; torch's buffers are native
    raise ImportError("inplace.safetensors_io supports little-endian hosts only")


def _tensor_bytes(t):
    t = t.detach().to("cpu").contiguous().reshape(-1)
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: same bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Writes ``tensors`` (a dict name -> torch.Tensor, in insertion order) to ``path``.

    ``metadata`` is an optional dict of str -> str stored as ``__metadata__``.
    Non-contiguous tensors are written in logical row-major order.
    """
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("safetensors metadata must map str to str, got %r: %r" % (k, v))
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, t in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError("bad safetensors key %r" % (name,))
        if not isinstance(t, torch.Tensor):
            raise TypeError("safetensors value for %r is a %s, not a torch.Tensor" % (name, type(t).__name__))
        if t.dtype not in _CODE_OF:
            raise TypeError("safetensors: tensor %r has unsupported dtype %s" % (name, t.dtype))
        blob = _tensor_bytes(t)
        header[name] = {
            "dtype": _CODE_OF[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def _read_header(data, path):
    if len(data) < 8:
        raise ValueError("%s: not a safetensors file (shorter than 8 bytes)" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("%s: header length %d runs past the end of the file" % (path, n))
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except ValueError as e:
        raise ValueError("%s: bad safetensors header: %s" % (path, e))
    if not isinstance(header, dict):
        raise ValueError("%s: safetensors header is not a JSON object" % path)
    return header, 8 + n


def read_safetensors_metadata(path):
    """Returns the ``__metadata__`` dict of a safetensors file ({} when absent)."""
    with open(path, "rb") as f:
        data = f.read()
    header, _ = _read_header(data, path)
    return dict(header.get("__metadata__", {}))


def read_safetensors(path):
    """Reads ``path`` into a dict name -> torch.Tensor (each tensor owns its memory)."""
    with open(path, "rb") as f:
        data = f.read()
    header, start = _read_header(data, path)
    body = memoryview(data)[start:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        code = info.get("dtype")
        if code not in _DTYPE_OF:
            raise ValueError("%s: tensor %r has unknown dtype %r" % (path, name, code))
        dtype = _DTYPE_OF[code]
        shape = [int(s) for s in info["shape"]]
        begin, end = (int(x) for x in info["data_offsets"])
        numel = 1
        for s in shape:
            numel *= s
        itemsize = torch.empty((), dtype=dtype).element_size()
        if not (0 <= begin <= end <= len(body)) or end - begin != numel * itemsize:
            raise ValueError(
                "%s: tensor %r: data_offsets [%d, %d] do not hold %d x %d bytes inside the data"
                % (path, name, begin, end, numel, itemsize))
        if numel == 0:
            out[name] = torch.empty(shape, dtype=dtype)
            continue
        raw = bytearray(body[begin:end])  # a private, writable copy
        t = torch.frombuffer(raw, dtype=dtype).reshape(shape).clone()
        out[name] = t
    return out
