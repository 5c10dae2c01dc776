"""NumPy references for the golden cases (gen_golden.py): an independent
Philox4x32-10 with cgc's uniform draw, rounding to each of cgc's dtypes as
the interpreter rounds, and a safetensors writer for those dtypes."""
import json, struct
import numpy as np

# ---------------------------------------------------------------- Philox ---
M32 = 0xFFFFFFFF


def philox4x32_10(c, k0, k1):
    """c: 4 uint64 arrays holding 32-bit words; key words as ints."""
    c0, c1, c2, c3 = c
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & np.uint64(M32),
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & np.uint64(M32))
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def check_philox():
    """Philox4x32-10's known-answer tests (Random123)."""
    one = lambda v: np.array([v], dtype=np.uint64)
    out = philox4x32_10([one(0)] * 4, 0, 0)
    assert [int(w[0]) for w in out] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], out
    out = philox4x32_10([one(M32)] * 4, M32, M32)
    assert [int(w[0]) for w in out] == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd], out


def philox_uniform(seed, offset, indices):
    idx = np.asarray(indices, dtype=np.uint64)
    block = idx // np.uint64(4)
    n = idx.shape
    c = [block & np.uint64(M32), block >> np.uint64(32),
         np.full(n, offset & M32, dtype=np.uint64), np.full(n, (offset >> 32) & M32, dtype=np.uint64)]
    words = np.stack(philox4x32_10(c, seed & M32, (seed >> 32) & M32))
    w = words[(idx % np.uint64(4)).astype(np.int64), np.arange(idx.size)] if idx.size else idx
    return ((w >> np.uint64(8)).astype(np.float64) * 2.0 ** -24)


# -------------------------------------------------------------- rounding ---
def round_bf16(x):
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    fin = np.isfinite(x) & (x != 0)
    _, e = np.frexp(x[fin])            # x = m * 2^e, 0.5 <= |m| < 1
    e = np.maximum(e - 1, -126)
    ulp = np.ldexp(1.0, e - 7)
    r = np.round(x[fin] / ulp) * ulp   # ties to even
    r = np.where(np.abs(r) > 3.3895313892515355e38, np.copysign(np.inf, r), r)
    out[fin] = r
    return out


def round_to(dtype, x):
    x = np.asarray(x, dtype=np.float64)
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        with np.errstate(over="ignore"):  # NumPy rounds double->half correctly
            return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return round_bf16(x)
    if dtype == "i64":
        return np.clip(np.where(np.isnan(x), 0, np.trunc(x)), -2.0 ** 63, 2.0 ** 63)
    if dtype == "i32":  # saturates, as cast from a float does
        return np.clip(np.where(np.isnan(x), 0, np.trunc(x)), -2.0 ** 31, 2.0 ** 31 - 1)
    if dtype == "bool":
        return (x != 0).astype(np.float64)
    raise ValueError(dtype)


def saturate(dtype, x):
    """cast float -> int/bool. For i64, +-2^63 stand for INT64_MAX/MIN."""
    if dtype == "bool":
        return (x != 0).astype(np.float64)  # NaN != 0 too
    x = np.where(np.isnan(x), 0, np.trunc(x))
    if dtype == "i32":
        return np.clip(x, -2.0 ** 31, 2.0 ** 31 - 1)
    return np.clip(x, -2.0 ** 63, 2.0 ** 63)


# ----------------------------------------------------------- safetensors ---
ST = {"f32": ("F32", "<f4"), "f16": ("F16", "<f2"), "i32": ("I32", "<i4"),
      "i64": ("I64", "<i8"), "bool": ("BOOL", "u1"), "bf16": ("BF16", None)}


def exact_ints(values):
    """int64 values given as NumPy integers, kept exact (not through float64)."""
    return np.asarray(values, dtype=np.int64)


def to_bytes(dtype, values):
    if dtype in ("i32", "i64", "bool") and np.issubdtype(np.asarray(values).dtype, np.integer):
        ints = np.asarray(values, dtype=np.int64).reshape(-1)  # exact; i32 wraps
        return ints.astype(ST[dtype][1]).tobytes()
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if dtype == "bf16":
        bits = round_bf16(v).astype(np.float32).view(np.uint32) >> np.uint32(16)
        bits = np.where(np.isnan(v), 0x7FC0, bits)
        return bits.astype("<u2").tobytes()
    if dtype == "i64":
        hi, lo = v >= 2.0 ** 63, v <= -2.0 ** 63
        ints = np.where(hi | lo, 0, v).astype(np.int64)
        ints = np.where(hi, np.iinfo(np.int64).max, np.where(lo, np.iinfo(np.int64).min, ints))
        return ints.astype("<i8").tobytes()
    if dtype in ("i32", "bool"):
        return round_to(dtype, v).astype(ST[dtype][1]).tobytes()
    return v.astype(ST[dtype][1]).tobytes()


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        dtype, arr = tensors[name]
        arr = np.asarray(arr)
        if not np.issubdtype(arr.dtype, np.integer):
            arr = np.asarray(arr, dtype=np.float64)
        b = to_bytes(dtype, arr)
        header[name] = {"dtype": ST[dtype][0], "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
