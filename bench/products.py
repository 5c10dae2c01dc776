"""The matrix-product workloads of bench/run_bench.py: the models, their
weights, the PyTorch peers and the correctness check.

Every model here is a chain of `linear`, `gelu`, `layernorm` and `relu`
nodes read from its example JSON, so the PyTorch peer (nn.Sequential of the
matching nn modules) and the float64 NumPy reference are built from the
same file that cgc compiles.

Correctness: the bench draws its own weights and input with NumPy (seeded,
the same distributions as the JSON's `init`: uniform in +-1/sqrt(fan_in),
LayerNorm ones/zeros), rounds them to the model's dtype, writes them all to
one safetensors file and runs `cgc run ART --inputs FILE`: `cgc run` writes
every tensor of that file that names a state tensor (the parameters) into
the engine before the run (runtime/tools/RunCommands.cpp), so the artifact
that was timed runs with exactly the weights that PyTorch gets.
"""
import json
import math
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name: example, stage (small enough to stage on the CPU machine), iters for
# cgc and PyTorch graphs, iters for PyTorch eager.
PRODUCTS = {
    "mlp8_infer_b1": dict(example="mlp8_infer_b1.json", stage=True, iters=2000, iters_eager=500),
    "linear_pair_f32": dict(example="linear_pair_f32.json", stage=False, iters=200,
                            iters_eager=100),
    "linear_pair_bf16": dict(example="linear_pair_bf16.json", stage=False, iters=1000,
                             iters_eager=500),
    "linear_b1_8192_bf16": dict(example="linear_b1_8192_bf16.json", stage=False, iters=500,
                                iters_eager=200),
    "linear_b1_bf16": dict(example="linear_b1_bf16.json", stage=False, iters=2000,
                           iters_eager=1000),
}

# Tolerance of cgc against PyTorch, per element:
#   |cgc - torch| <= rtol * |torch| + atol,  atol = c * sqrt(K) * rms(torch)
# K: the model's largest reduction length (a linear's in_features, a
# layernorm's width); rms over the whole output. f32 (TF32 off): cuBLASLt /
# generated kernels and PyTorch's kernels accumulate in different orders,
# about u * sqrt(K) (u = 2^-24) of the output's scale, so c = 1e-6 is ~16x
# that. bf16 (f32 accumulation, bf16 storage): a result may round to the
# neighbouring bf16 (2^-8 relative, 2^-7 at most), and one rounded
# differently in an intermediate moves the next layer's output by about
# 2^-8 * rms; rtol = 2e-2 and c = 2.5e-4 (0.016 * rms at K = 4096) cover
# that with a margin of about 4.
TOLERANCE = {"f32": (1e-4, 1e-6), "bf16": (2e-2, 2.5e-4)}

SAFETENSORS_DTYPE = {"f32": "F32", "bf16": "BF16", "f16": "F16"}


# ---------------------------------------------------------------- models

def load_model(name):
    """The example JSON of workload \\p name, with its chain of layers."""
    path = os.path.join(ROOT, "examples", PRODUCTS[name]["example"])
    with open(path) as f:
        m = json.load(f)
    inputs = {i["name"]: i for i in m["inputs"]}
    users = [i for i in m["inputs"] if i.get("kind", "user_input") == "user_input"]
    if len(users) != 1:
        raise ValueError(f"{path}: want one user input, have {len(users)}")
    x = users[0]
    layers, prev, maxk = [], x["name"], 1
    for n in m["nodes"]:
        ins = n.get("inputs", [])
        if not ins or ins[0] != prev:
            raise ValueError(f"{path}: node {n['name']} does not continue the chain from {prev}")
        op = n["op"]
        width = None
        if op == "linear":
            w = inputs[ins[1]]
            width = w["shape"][0]
            maxk = max(maxk, w["shape"][1])
        elif op == "layernorm":
            if n.get("attrs", {}).get("axis", -1) not in (-1, len(x["shape"]) - 1):
                raise ValueError(f"{path}: node {n['name']}: layernorm over the last axis only")
            maxk = max(maxk, layers[-1]["width"] if layers else x["shape"][-1])
        elif op not in ("gelu", "relu"):
            raise ValueError(f"{path}: node {n['name']}: op {op} not supported by the bench")
        layers.append(dict(op=op, name=n["name"], params=ins[1:], attrs=n.get("attrs", {}),
                           width=width if width is not None else
                           (layers[-1]["width"] if layers else x["shape"][-1])))
        prev = n["name"]
    outs = m["outputs"]
    out = outs[0] if isinstance(outs[0], str) else outs[0]["value"]
    if len(outs) != 1 or out != prev:
        raise ValueError(f"{path}: want one output, the chain's last node")
    dtype = x["dtype"]
    flops = 0
    weight_bytes = 0
    rows = int(np.prod(x["shape"][:-1]))
    esize = {"f32": 4, "bf16": 2, "f16": 2}[dtype]
    for l in layers:
        if l["op"] == "linear":
            n_, k_ = inputs[l["params"][0]]["shape"]
            flops += 2 * rows * n_ * k_
            weight_bytes += n_ * k_ * esize
    oname = outs[0] if isinstance(outs[0], str) else outs[0]["name"]
    return dict(name=name, path=path, json=m, inputs=inputs, x=x, layers=layers,
                dtype=dtype, k=maxk, flops=flops, weight_bytes=weight_bytes,
                output=oname, rows=rows)


# ---------------------------------------------------------------- dtypes

def bf16_bits(a):
    """float -> bf16 bit patterns (uint16), round to nearest even."""
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >>
            np.uint32(16)).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_dtype(a, dtype):
    """(storage array, float64 value) of \\p a rounded to \\p dtype."""
    if dtype == "f32":
        s = np.ascontiguousarray(a, dtype=np.float32)
        return s, s.astype(np.float64)
    if dtype == "bf16":
        s = bf16_bits(a)
        return s, bf16_value(s).astype(np.float64)
    if dtype == "f16":
        s = np.ascontiguousarray(a, dtype=np.float16)
        return s, s.astype(np.float64)
    raise ValueError(f"dtype {dtype} not supported by the bench")


def round_to(a, dtype):
    return to_dtype(a, dtype)[1]


# ---------------------------------------------------------------- safetensors

def write_safetensors(path, tensors):
    """tensors: name -> (dtype, storage array from to_dtype)."""
    header, off, blobs = {}, 0, []
    for name, (dtype, arr) in tensors.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": SAFETENSORS_DTYPE[dtype], "shape": list(arr.shape),
                        "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> float64 array (F32, F16, BF16 tensors)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = body[b:end]
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype=np.float32)
        elif e["dtype"] == "F16":
            a = np.frombuffer(raw, dtype=np.float16)
        elif e["dtype"] == "BF16":
            a = bf16_value(np.frombuffer(raw, dtype=np.uint16))
        else:
            raise ValueError(f"{path}: tensor {name}: dtype {e['dtype']} not supported here")
        out[name] = a.astype(np.float64).reshape(e["shape"])
    return out


# ---------------------------------------------------------------- weights

def make_tensors(model, seed=0):
    """Seeded NumPy values for the input and every persistent input, rounded
    to the model's dtype: {name: (dtype, storage, float64 value)}."""
    out = {}
    for name, i in model["inputs"].items():
        shape = [int(d) for d in i["shape"]]
        init = i.get("init")
        kind = i.get("kind", "user_input")
        if kind == "user_input":
            rng = np.random.default_rng(seed + 7)
            v = rng.standard_normal(shape, dtype=np.float32)
        elif init is None:
            raise ValueError(f"{model['path']}: parameter {name} has no init (weights "
                             "files are not supported by the bench)")
        elif init["dist"] == "zeros":
            v = np.zeros(shape, np.float32)
        elif init["dist"] == "ones":
            v = np.ones(shape, np.float32)
        elif init["dist"] == "uniform":
            rng = np.random.default_rng(seed * 1000003 + init.get("seed", 0))
            v = rng.uniform(init.get("low", 0.0), init.get("high", 1.0), shape).astype(np.float32)
        elif init["dist"] == "normal":
            rng = np.random.default_rng(seed * 1000003 + init.get("seed", 0))
            v = (init.get("mean", 0.0) + init.get("std", 1.0) *
                 rng.standard_normal(shape)).astype(np.float32)
        else:
            raise ValueError(f"{model['path']}: {name}: init {init['dist']} unknown to the bench")
        s, f64 = to_dtype(v, i["dtype"])
        out[name] = (i["dtype"], s, f64)
    return out


def write_inputs(model, tensors, path):
    """The safetensors file for `cgc run`: the input and every parameter."""
    write_safetensors(path, {n: (d, s) for n, (d, s, _) in tensors.items()})


# ---------------------------------------------------------------- references

def _erf(a):
    return np.frompyfunc(math.erf, 1, 1)(a).astype(np.float64)


def reference_f64(model, tensors):
    """The chain in float64 with every intermediate rounded to the model's
    dtype (what storage in that dtype does), on the CPU with NumPy."""
    dt = model["dtype"]
    h = tensors[model["x"]["name"]][2]
    for l in model["layers"]:
        p = [tensors[n][2] for n in l["params"]]
        if l["op"] == "linear":
            h = h @ p[0].T
            if len(p) > 1:
                h = h + p[1]
        elif l["op"] == "gelu":
            h = h * 0.5 * (1.0 + _erf(h / math.sqrt(2.0)))
        elif l["op"] == "relu":
            h = np.maximum(h, 0.0)
        elif l["op"] == "layernorm":
            mu = h.mean(axis=-1, keepdims=True)
            var = ((h - mu) ** 2).mean(axis=-1, keepdims=True)
            h = (h - mu) / np.sqrt(var + l["attrs"].get("eps", 1e-5))
            if p:
                h = h * p[0]
            if len(p) > 1:
                h = h + p[1]
        h = round_to(h, dt)
    return h


def compare(model, got, ref):
    """The check of \\p got against \\p ref (float64 arrays) with TOLERANCE."""
    rtol, c = TOLERANCE[model["dtype"]]
    got = np.asarray(got, np.float64).reshape(ref.shape)
    d = np.abs(got - ref)
    rms = float(np.sqrt(np.mean(ref * ref)))
    atol = c * math.sqrt(model["k"]) * rms
    tol = rtol * np.abs(ref) + atol
    finite = bool(np.all(np.isfinite(got)))
    worst = float(np.max(d / tol)) if finite else float("inf")
    big = np.abs(ref) > atol
    max_rel = float(np.max(d[big] / np.abs(ref[big]))) if big.any() else 0.0
    return dict(dtype=model["dtype"], k=model["k"], rtol=rtol, atol=atol, atol_c=c, rms_ref=rms,
                max_abs=float(np.max(d)) if finite else float("inf"), max_rel=max_rel,
                worst=worst, ok=int(finite and worst <= 1.0), n=int(ref.size))


def check_line(workload, r, extra=""):
    return (f"CHECK workload={workload} dtype={r['dtype']} k={r['k']} n={r['n']} "
            f"rtol={r['rtol']:g} atol={r['atol']:.3e} atol_c={r['atol_c']:g} "
            f"rms_ref={r['rms_ref']:.4e} max_abs={r['max_abs']:.3e} max_rel={r['max_rel']:.3e} "
            f"worst={r['worst']:.3f} ok={r['ok']}{extra}")


# ---------------------------------------------------------------- PyTorch

TORCH_DTYPE = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def to_torch(torch, dtype, storage, dev):
    if dtype == "bf16":
        return torch.from_numpy(storage.view(np.int16).copy()).view(torch.bfloat16).to(dev)
    return torch.from_numpy(np.array(storage)).to(dev)


def torch_model(torch, model, tensors, dev):
    """nn.Sequential of the chain, holding the bench's weights."""
    nn = torch.nn
    dt = getattr(torch, TORCH_DTYPE[model["dtype"]])
    mods = []
    for l in model["layers"]:
        p = [to_torch(torch, *tensors[n][:2], dev) for n in l["params"]]
        if l["op"] == "linear":
            n_, k_ = p[0].shape
            m = nn.Linear(k_, n_, bias=len(p) > 1, device=dev, dtype=dt)
            with torch.no_grad():
                m.weight.copy_(p[0])
                if len(p) > 1:
                    m.bias.copy_(p[1])
        elif l["op"] == "gelu":
            m = nn.GELU()  # erf form
        elif l["op"] == "relu":
            m = nn.ReLU()
        else:
            m = nn.LayerNorm(l["width"], eps=l["attrs"].get("eps", 1e-5),
                             elementwise_affine=bool(p), bias=len(p) > 1, device=dev, dtype=dt)
            with torch.no_grad():
                if p:
                    m.weight.copy_(p[0])
                if len(p) > 1:
                    m.bias.copy_(p[1])
        mods.append(m)
    seq = nn.Sequential(*mods).eval()
    for q in seq.parameters():
        q.requires_grad_(False)
    return seq


def torch_to_f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)
