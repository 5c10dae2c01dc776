"""scaled_dot_product_attention, kept whole through the export's
decomposition (capture.py KEPT) and lowered here onto cgc's
products and softmax: softmax(q k^T * scale + mask) v, with every argument
of PyTorch's: a bool mask (False: masked out) or an additive float mask,
is_causal (the top-left aligned lower triangle, as PyTorch's), scale
(default 1/sqrt(E)) and grouped-query attention (enable_gqa: each key and
value head serves query heads / key heads consecutive query heads).
A fused attention kernel is the attention issue's; this composition is
what the fusion passes see."""
import math

from .aten_rules import ATEN
from ..errors import RefusedError
from .record import RecordNode

NEG_INF = "-inf"


def argument(n, index, name, default):
    return n.args[index] if len(n.args) > index else n.kwargs.get(name, default)


def repeat_heads(e, kv, groups, shape):
    """A key or value [..., Hkv, S, E] with each head repeated `groups`
    times consecutively: [..., Hkv * groups, S, E]."""
    *batch, heads, length, width = shape
    if not isinstance(heads, int):
        raise RefusedError(f"grouped-query attention over a dynamic head count {heads}")
    expanded = e.op("reshape", [kv], {"shape": batch + [heads, 1, length, width]})
    expanded = e.op("broadcast_to", [expanded],
                    {"shape": batch + [heads, groups, length, width]})
    return e.op("reshape", [expanded], {"shape": batch + [heads * groups, length, width]})


def sdpa(e, n):
    q, k, v = n.args[:3]
    mask = argument(n, 3, "attn_mask", None)
    dropout = argument(n, 4, "dropout_p", 0.0)
    causal = argument(n, 5, "is_causal", False)
    scale = argument(n, 6, "scale", None)
    gqa = n.kwargs.get("enable_gqa", False)
    if dropout:
        raise RefusedError("attention dropout (dropout_p > 0); export the module in eval mode")
    dtype = e.dtype(q)
    qshape, kshape, vshape = e.shape(q), e.shape(k), e.shape(v)
    width = qshape[-1]
    if scale is None:
        if not isinstance(width, int):
            raise RefusedError(f"attention over a dynamic head width {width} with no scale")
        scale = 1.0 / math.sqrt(width)
    key, value = e.operand(k), e.operand(v)
    if gqa and len(qshape) >= 3 and qshape[-3] != kshape[-3]:
        if not all(isinstance(h, int) for h in (qshape[-3], kshape[-3])) or \
                qshape[-3] % kshape[-3]:
            raise RefusedError(f"grouped-query attention of {qshape[-3]} query heads over "
                               f"{kshape[-3]} key heads")
        groups = qshape[-3] // kshape[-3]
        key = repeat_heads(e, key, groups, kshape)
        value = repeat_heads(e, value, groups, vshape)
    scores = e.op("matmul", [e.operand(q), key], {"transpose_b": True})
    scores = e.op("mul", [scores, e.scalar(scale, dtype)])
    if causal:
        rows, cols = qshape[-2], kshape[-2]
        row = e.op("iota", [], {"dtype": "i64", "shape": [rows, cols], "axis": 0})
        col = e.op("iota", [], {"dtype": "i64", "shape": [rows, cols], "axis": 1})
        keep = e.op("ge", [row, col])
        scores = e.op("where", [keep, scores, e.scalar(float("-inf"), dtype)])
    if isinstance(mask, RecordNode):
        if e.dtype(mask) == "bool":
            scores = e.op("where", [e.operand(mask), scores, e.scalar(float("-inf"), dtype)])
        else:
            scores = e.op("add", [scores, e.as_dtype(mask, dtype)])
    elif mask is not None:
        raise RefusedError(f"an attention mask {mask!r} that is not a tensor")
    weights = e.op("softmax", [scores], {"axis": -1})
    return e.op("matmul", [weights, value], name=n.name)


ATEN["scaled_dot_product_attention"] = sdpa
