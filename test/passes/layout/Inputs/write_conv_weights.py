"""Writes DIR/conv_weights.safetensors (w: f16 [8, 4, 3, 3]) and
DIR/in.safetensors (x: f16 [1, 4, 6, 6]) for weights.test."""
import json, struct, sys
import numpy as np


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        b = a.tobytes()
        header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


out = sys.argv[1]
write(out + "/conv_weights.safetensors",
      {"w": (np.arange(288, dtype=np.float16) / 64).reshape(8, 4, 3, 3)})
write(out + "/in.safetensors",
      {"x": (np.arange(144, dtype=np.float16) / 32 - 2).reshape(1, 4, 6, 6)})
