#!/usr/bin/env python3
"""cgc.safetensors without PyTorch: every dtype it writes reads back equal,
bfloat16 weights (BFloat16 bit patterns, which NumPy cannot hold) are
written as BF16 and read back widened to f32 with the same values, and the
header matches the safetensors layout (8-byte little-endian length, JSON,
then the data). Exit status 1 if any check fails."""
import json
import os
import struct
import sys
import tempfile

import numpy as np

from cgc.safetensors import BFloat16, read_safetensors, write_safetensors


def main():
    rng = np.random.default_rng(0)
    plain = {"f32": rng.standard_normal((3, 4)).astype(np.float32),
             "f16": rng.standard_normal(5).astype(np.float16),
             "i64": np.array([-(2 ** 63), 2 ** 53 + 1, 7], np.int64),
             "i32": np.array([[-(2 ** 31), 2 ** 31 - 1]], np.int32),
             "bool": np.array([True, False, True]),
             "scalar": np.float32(2.5)}
    # Values bfloat16 holds exactly: their bit patterns are the f32 ones' top half.
    exact = np.array([[1.5, -2.0, 3.140625], [0.0, -0.0, 65280.0]], np.float32)
    bits = (exact.view(np.uint32) >> 16).astype(np.uint16)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.safetensors")
        write_safetensors(path, {**plain, "bf16": BFloat16(bits)})
        with open(path, "rb") as f:
            raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + n])
        if header["bf16"]["dtype"] != "BF16" or header["bf16"]["shape"] != [2, 3]:
            failures.append(f"bf16 header {header['bf16']}")
        begin, end = header["bf16"]["data_offsets"]
        if raw[8 + n + begin:8 + n + end] != bits.astype("<u2").tobytes():
            failures.append("bf16 bytes are not the bit patterns, little-endian")
        back = read_safetensors(path)
        for name, want in plain.items():
            got = back[name]
            if got.dtype != np.asarray(want).dtype or not np.array_equal(got, want):
                failures.append(f"{name}: read back {got!r}, wrote {want!r}")
        if back["bf16"].dtype != np.float32 or not np.array_equal(back["bf16"], exact) or \
                not np.signbit(back["bf16"][1, 1]):
            failures.append(f"bf16: read back {back['bf16']!r}, wrote {exact!r}")
    for f in failures:
        print(f"FAIL {f}")
    print("safetensors: " + ("FAIL" if failures else "all checks passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
