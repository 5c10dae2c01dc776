"""safetensors files from NumPy arrays and back (F32, F16, I64, I32, BOOL;
BF16 is read widened to f32): the format of cgc's weights, inputs and
outputs."""
import json
import struct

import numpy as np

DTYPE_OF = {np.float32: "F32", np.float16: "F16", np.int64: "I64", np.int32: "I32",
            np.bool_: "BOOL"}
NUMPY_OF = {v: k for k, v in DTYPE_OF.items()}


def write_safetensors(path, tensors):
    """Writes the named arrays of `tensors` (a dict) to `path`."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        array = np.require(array, requirements="C")  # (keeps a 0-d array 0-d)
        if array.dtype.type not in DTYPE_OF:
            raise ValueError(f"safetensors: '{name}' has dtype {array.dtype}, which cgc has not")
        data = array.tobytes()
        header[name] = {"dtype": DTYPE_OF[array.dtype.type], "shape": list(array.shape),
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
        if entry["dtype"] == "BF16":  # NumPy has no bfloat16: widened to f32
            wide = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
            out[name] = wide.view(np.float32).reshape(entry["shape"])
            continue
        out[name] = np.frombuffer(raw, NUMPY_OF[entry["dtype"]]).reshape(entry["shape"])
    return out
