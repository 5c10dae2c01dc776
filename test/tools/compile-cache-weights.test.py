"""Writes DIR/model.json (one linear layer) and its weights DIR/w.safetensors
(32 x 32 f32: 4096 bytes); with --rewrite, other bytes of the same size with
the file's old modification time put back."""
import json
import os
import struct
import sys

folder = sys.argv[1]
weights = os.path.join(folder, "w.safetensors")
rewrite = "--rewrite" in sys.argv
old = os.stat(weights) if rewrite else None
values = [((i * 7919) % 101 - 50) / (100.0 if not rewrite else 37.0) for i in range(32 * 32)]
header = json.dumps({"w": {"dtype": "F32", "shape": [32, 32], "data_offsets": [0, 4096]}}).encode()
header += b" " * (-len(header) % 8)
with open(weights, "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + struct.pack("<1024f", *values))
if rewrite:
    os.utime(weights, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(weights).st_size == old.st_size
else:
    model = {"format_version": 1, "name": "memo", "weights_file": "w.safetensors",
             "inputs": [{"name": "x", "dtype": "f32", "shape": [1, 32]},
                        {"name": "w", "kind": "parameter", "dtype": "f32", "shape": [32, 32],
                         "weight": "w"}],
             "nodes": [{"name": "fc", "op": "linear", "inputs": ["x", "w"]}],
             "outputs": [{"name": "y", "value": "fc"}]}
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(model, f)
