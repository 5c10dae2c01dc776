"""safetensors files from NumPy arrays and back (F32, F16, I64, I32, BOOL;
BF16, which NumPy has not, written from BFloat16 bit patterns or
ml_dtypes' bfloat16 arrays and read widened to f32): the format of cgc's
weights, inputs and outputs."""
import json
import struct

import numpy as np

from .dtypes import BY_IR, DTYPES, is_bfloat16

# safetensors' name of each NumPy type cgc has (cgc.dtypes), and back.
DTYPE_OF = {d.numpy: d.safetensors for d in DTYPES if d.numpy is not None}
NUMPY_OF = {v: k for k, v in DTYPE_OF.items()}
BF16 = BY_IR["bf16"].safetensors


class BFloat16:
    """A bfloat16 tensor, which NumPy cannot hold: its 16-bit patterns
    (`bits`, a uint16 array of the tensor's shape), little-endian on disk
    as safetensors' BF16."""
    __slots__ = ("bits",)

    def __init__(self, bits):
        self.bits = np.require(np.asarray(bits, dtype=np.uint16), requirements="C")

    @property
    def shape(self):
        return self.bits.shape


def encoded(name, array):
    """(safetensors dtype, shape, little-endian bytes) of an array or BFloat16."""
    if isinstance(array, BFloat16):
        return BF16, list(array.shape), array.bits.astype("<u2").tobytes()
    array = np.require(array, requirements="C")  # (keeps a 0-d array 0-d)
    if is_bfloat16(array.dtype):  # ml_dtypes' bfloat16 (onnx's numpy_helper)
        return BF16, list(array.shape), array.view(np.uint16).astype("<u2").tobytes()
    if array.dtype.type not in DTYPE_OF:
        raise ValueError(f"safetensors: '{name}' has dtype {array.dtype}, which cgc has not")
    return DTYPE_OF[array.dtype.type], list(array.shape), \
        array.astype(array.dtype.newbyteorder("<")).tobytes()


def write_safetensors(path, tensors):
    """Writes the named arrays (or BFloat16s) of `tensors` (a dict) to `path`."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        dtype, shape, data = encoded(name, array)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """The named arrays of the safetensors file at `path`."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        if entry["dtype"] == BF16:  # NumPy has no bfloat16: widened to f32
            wide = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
            out[name] = wide.view(np.float32).reshape(entry["shape"])
            continue
        out[name] = np.frombuffer(raw, NUMPY_OF[entry["dtype"]]).reshape(entry["shape"])
    return out
