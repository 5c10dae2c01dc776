#!/usr/bin/env python3
"""Writes the small .safetensors files used by the weights tests.

Pure Python (struct + json), so it runs without numpy or torch:
    python3 make_weights.py [output-dir]
The outputs are committed next to this script; rerun it after editing.
"""
import json
import struct
import sys
from pathlib import Path

SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "BOOL": 1}
PACK = {"F32": "f", "I32": "i", "I64": "q"}


def tensor_bytes(dtype, shape, start):
    count = 1
    for d in shape:
        count *= d
    if dtype in PACK:
        return struct.pack("<%d%s" % (count, PACK[dtype]),
                           *[start + i for i in range(count)])
    return bytes(count * SIZES[dtype])


def write(path, tensors):
    """tensors: list of (name, dtype, shape); data counts up from 0."""
    header, body = {}, b""
    for name, dtype, shape in tensors:
        data = tensor_bytes(dtype, shape, 0)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    # Matches Inputs/weights-ok.json: w f32[3,2], b f32[3], table i64[4].
    write(out / "weights.safetensors",
          [("w", "F32", [3, 2]), ("b", "F32", [3]), ("table", "I64", [4])])
    # A header length that runs past the end of the file.
    (out / "corrupt.safetensors").write_bytes(struct.pack("<Q", 4096) + b"{}")
    # Too short to hold the 8-byte header length.
    (out / "truncated.safetensors").write_bytes(b"\x01\x02")


if __name__ == "__main__":
    main()
