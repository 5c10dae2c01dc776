"""A NumPy evaluation of a program record (python/cgc/torch/record.py),
for the ATen ops the committed fixtures use: the records fuzzer's second
oracle. PyTorch's semantics as far as the fixtures need them: a float
result of mixed or integer operands is float32 (torch's default dtype);
gelu is the erf form; layer_norm's variance is biased.

evaluate(record, weights, feed) returns the user outputs in order, or
raises Unsupported for an op outside OPS (the case then has no second
oracle)."""
import math

import numpy as np

DTYPES = {"torch.float32": np.float32, "torch.float16": np.float16, "torch.int32": np.int32,
          "torch.int64": np.int64, "torch.bool": np.bool_, "torch.float64": np.float64}


class Unsupported(Exception):
    pass


def _float32(x):
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype == np.float64 else x


def _binary(fn):
    return lambda a, b, *, alpha=1: _float32(fn(np.asarray(a), np.asarray(b) * alpha if alpha != 1 else b))


def _div_mode(a, b, rounding_mode=None):
    a, b = np.asarray(a), np.asarray(b)
    if rounding_mode is None:
        return _float32(np.true_divide(a, b).astype(np.result_type(a, b, np.float32)))
    if a.dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
        q = np.floor_divide(a, b)
        if rounding_mode == "trunc":
            q = np.where((q < 0) & (q * b != a), q + 1, q)
        return q
    if rounding_mode == "floor":  # Python's (and PyTorch's) fmod-based floor: 1 // 0.1 is 9
        return _float32(np.floor_divide(a, b))
    return _float32(np.trunc(np.true_divide(a, b)))


def _int(value):
    """An int argument; a bool or anything else is not one (torch's
    schema would not have let it through)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unsupported(f"{value!r} where an int is expected")
    return value


def _softmax(x, dim, half_to_float=False):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return (e / np.sum(e, axis=dim, keepdims=True)).astype(x.dtype)


def _log_softmax(x, dim, half_to_float=False):
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return (shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))).astype(x.dtype)


def _layer_norm(x, shape, w=None, b=None, eps=1e-5, cudnn=False):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True, dtype=np.float64)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y.astype(x.dtype)


def _gelu(x, approximate="none"):
    if approximate != "none":
        raise Unsupported("gelu tanh")
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(x.dtype)


def _linear(x, w, b=None):
    y = np.matmul(x, np.swapaxes(w, -1, -2))
    return y + b if b is not None else y


def _mean(x, dims, keepdim=False, dtype=None):
    return x.mean(axis=tuple(dims) if dims else None, keepdims=keepdim).astype(x.dtype)


def _prod(x, dim, keepdim=False, dtype=None):
    return np.prod(x, axis=dim, keepdims=keepdim).astype(x.dtype if x.dtype.kind != "b" else np.int64)


def _split(x, sizes, dim=0):
    return np.split(x, np.cumsum(sizes)[:-1], axis=dim)


def _sort(x, dim=-1, descending=False):
    key = -x if descending else x
    i = np.argsort(key, axis=dim, kind="stable")
    return np.take_along_axis(x, i, axis=dim), i.astype(np.int64)


def _to_copy(x, dtype=None, **_):
    return x.astype(DTYPES[dtype]) if dtype else x.copy()


OPS = {
    "aten.add.Tensor": _binary(np.add), "aten.sub.Tensor": _binary(np.subtract),
    "aten.mul.Tensor": lambda a, b: _float32(np.multiply(a, b)),
    "aten.div.Tensor": lambda a, b: _div_mode(a, b),
    "aten.div.Tensor_mode": _div_mode,
    "aten.gt.Scalar": lambda a, b: np.greater(a, b),
    "aten.floor.default": lambda x: np.floor(x), "aten.ceil.default": lambda x: np.ceil(x),
    "aten.round.default": lambda x: np.round(x),
    "aten.relu.default": lambda x: np.maximum(x, 0).astype(x.dtype),
    "aten.gelu.default": _gelu,
    "aten.linear.default": _linear,
    "aten.addmm.default": lambda bias, a, b, *, beta=1, alpha=1: _float32(beta * bias + alpha * (a @ b)),
    "aten.matmul.default": lambda a, b: np.matmul(a, b),
    "aten.view.default": lambda x, shape: x.reshape(shape),
    "aten.permute.default": lambda x, dims: np.transpose(x, dims),
    "aten.clone.default": lambda x, **_: x.copy(),
    "aten.layer_norm.default": _layer_norm,
    "aten._softmax.default": _softmax, "aten._log_softmax.default": _log_softmax,
    "aten.mean.dim": _mean, "aten.prod.dim_int": _prod,
    "aten.select.int": lambda x, dim, index: np.take(x, _int(index), axis=_int(dim)),
    "aten.split_with_sizes.default": _split,
    "aten.sort.default": _sort,
    "aten.embedding.default": lambda w, idx, *_: w[idx],
    "aten._to_copy.default": _to_copy,
    "aten._assert_tensor_metadata.default": lambda *a, **k: None,
    "aten.sym_size.int": lambda x, dim: int(x.shape[dim]),
    "getitem": lambda xs, i: xs[i],
}


def _decode(arg, env):
    if isinstance(arg, list):
        return [_decode(a, env) for a in arg]
    if isinstance(arg, dict):
        if "node" in arg:
            return env[arg["node"]]
        if "float" in arg:
            return float(arg["float"])
        if len(arg) == 1 and next(iter(arg)) in ("dtype", "device", "memory_format", "layout"):
            return next(iter(arg.values()))
        raise Unsupported(f"argument {arg}")
    return arg


def evaluate(record, weights, feed):
    """The record's user outputs on `feed` (user inputs by name)."""
    specs = {s["name"]: s for s in record["inputs"]}
    env = {}
    for node in record["nodes"]:
        if node["op"] == "placeholder":
            spec = specs[node["name"]]
            env[node["name"]] = feed[node["name"]] if spec["kind"] == "user_input" else \
                weights[spec["target"]]
        elif node["op"] == "call_function":
            fn = OPS.get(node["target"])
            if fn is None:
                raise Unsupported(node["target"])
            args = _decode(node["args"], env)
            kwargs = {k: _decode(v, env) for k, v in node["kwargs"].items()}
            with np.errstate(all="ignore"):
                env[node["name"]] = fn(*args, **kwargs)
        elif node["op"] == "output":
            results = _decode(node["args"][0], env)
            kinds = [o["kind"] for o in record["outputs"]]
            return [r for r, k in zip(results, kinds) if k == "user_output"]
        else:
            raise Unsupported(node["op"])
    raise Unsupported("no output node")
