"""Writes DIR/model.json (one linear layer) and its weights DIR/w.safetensors
(32 x 32 f32) with a modification time an hour ahead (--future: a file
changed just now, whatever the clock's granularity); --age puts the
modification time in the past and waits until the change time is more
than two seconds past; --rewrite writes
other bytes of the same size and puts the old modification time back."""
import json
import os
import struct
import sys
import time

folder = sys.argv[1]
weights = os.path.join(folder, "w.safetensors")
if "--age" in sys.argv:  # modified in the past; changed (ctime) now, then waited on
    past = time.time_ns() - 10 * 10**9
    os.utime(weights, ns=(past, past))
    time.sleep(max(0.0, os.stat(weights).st_ctime + 2.2 - time.time()))
    sys.exit(0)
rewrite = "--rewrite" in sys.argv
old = os.stat(weights) if rewrite else None
values = [((i * 7919) % 101 - 50) / (37.0 if rewrite else 100.0) for i in range(32 * 32)]
header = json.dumps({"w": {"dtype": "F32", "shape": [32, 32], "data_offsets": [0, 4096]}}).encode()
header += b" " * (-len(header) % 8)
with open(weights, "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + struct.pack("<1024f", *values))
if rewrite:
    os.utime(weights, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(weights).st_size == old.st_size
else:
    ahead = time.time_ns() + 3600 * 10**9
    os.utime(weights, ns=(ahead, ahead))
    model = {"format_version": 1, "name": "memo", "weights_file": "w.safetensors",
             "inputs": [{"name": "x", "dtype": "f32", "shape": [1, 32]},
                        {"name": "w", "kind": "parameter", "dtype": "f32", "shape": [32, 32],
                         "weight": "w"}],
             "nodes": [{"name": "fc", "op": "linear", "inputs": ["x", "w"]}],
             "outputs": [{"name": "y", "value": "fc"}]}
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump(model, f)
