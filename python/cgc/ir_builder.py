"""The JSON IR, built one node at a time: what the ONNX importer and the
torch.export exporter share (unique names, node records with their
source location, and the IR's spelling of numbers)."""
import re

import numpy as np

from .errors import RefusedError

# docs/ir.md "Limits": the elements of a shape. A node whose static `shape`
# attribute passes it is refused here, at the node the front end is
# lowering, not later by cgc at the IR it writes.
MAX_ELEMENTS = 1 << 40


def safe_name(name):
    """`name` with the characters IR names cannot hold replaced by `_`."""
    return re.sub(r"[^A-Za-z0-9_.:/-]", "_", name or "v")[:256] or "v"


def is_dim_name(text):
    """Whether `text` can name a symbolic dim: an identifier (the IR's
    names allow more, but an expression of dims such as `2*s77` must not
    pass for one)."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) is not None


def json_number(v, dtype):
    """An element as the IR writes it (bools as 0/1, non-finite floats as
    the strings "inf", "-inf", "nan")."""
    if dtype == "bool":
        return int(bool(v))
    if dtype in ("i32", "i64"):
        return int(v)
    v = float(v)
    if not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def registrar(table):
    """A decorator `@register(name, ...)` that files the function it
    decorates in `table` under each name (the operator rule tables)."""
    def register(*names):
        def add(fn):
            for name in names:
                table[name] = fn
            return fn
        return add
    return register


class IRBuilder:
    """Inputs and nodes of one graph, names made unique; `loc` stamps the
    nodes built while it is set."""

    def __init__(self):
        self.inputs, self.nodes = [], []
        self.names = set()
        self.loc = None

    def fresh(self, base):
        base = safe_name(base)[:200]
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def node(self, op, inputs, attrs=None, name=None):
        """Appends a node; returns its value name."""
        check_shape_attr(op, attrs)
        out = self.fresh(name or op)
        record = {"name": out, "op": op, "inputs": list(inputs)}
        if attrs:
            record["attrs"] = attrs
        if self.loc:
            record["loc"] = self.loc
        self.nodes.append(record)
        return out


def check_shape_attr(op, attrs):
    """Refuses a static `shape` attribute of more than MAX_ELEMENTS."""
    shape = (attrs or {}).get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
        return
    count = 1
    for d in shape:
        count *= max(d, 0)
    if count > MAX_ELEMENTS:
        shown = shape if len(shape) <= 8 else shape[:8] + ["..."]
        raise RefusedError(f"a {op} of shape {shown}: more than 2^40 elements, the IR's limit")


def ceil_mode_kernel(kernel, sizes, pads, dilations):
    """A ceil_mode pool's kernel with each extent past its padded input cut
    to that input: one window over all of it, as PyTorch pools (the IR
    refuses a kernel past the padded input; EfficientNet's
    AvgPool2d(1280, ceil_mode=True) pools a 7x7 map). `pads`: every begin,
    then every end, as the IR's; a dilated or dynamic dim keeps its
    extent."""
    n = len(kernel)
    return [min(k, d + pads[i] + pads[i + n]) if isinstance(d, int) and dil == 1 else k
            for i, (k, d, dil) in enumerate(zip(kernel, sizes, dilations))]
