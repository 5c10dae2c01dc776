"""scaled_dot_product_attention, kept whole through the export's
decomposition (capture.py KEPT) and lowered here to cgc's `attention` op
(docs/ir.md) with every argument of PyTorch's: a bool mask (False: masked
out) or an additive float mask, is_causal (the top-left aligned lower
triangle, as PyTorch's), scale (default 1/sqrt(E)) and grouped-query
attention (enable_gqa: each key and value head serves query heads /
key heads consecutive query heads; a single key and value head
broadcasts over all query heads with or without it). A query of rank 2 ([L, E]) is
attention over one head."""
import math

from .aten_rules import ATEN
from ..errors import RefusedError
from .record import RecordNode


def argument(n, index, name, default):
    return n.args[index] if len(n.args) > index else n.kwargs.get(name, default)


def sdpa(e, n):
    q, k, v = n.args[:3]
    mask = argument(n, 3, "attn_mask", None)
    dropout = argument(n, 4, "dropout_p", 0.0)
    causal = argument(n, 5, "is_causal", False)
    scale = argument(n, 6, "scale", None)
    gqa = n.kwargs.get("enable_gqa", False)
    if dropout and not e.training:
        raise RefusedError("attention dropout (dropout_p > 0); export the module in eval mode "
                           "(or train it with cgc.compile_train)")
    dtype = e.dtype(q)
    qshape, kshape = e.shape(q), e.shape(k)
    if scale is None and not isinstance(qshape[-1], int):
        raise RefusedError(f"attention over a dynamic head width {qshape[-1]} with no scale")
    if len(qshape) >= 3 and qshape[-3] != kshape[-3]:
        # One key and value head broadcasts over every query head (PyTorch
        # broadcasts the batch dims; Falcon's multi-query attention on CUDA).
        shared = kshape[-3] == 1 and e.shape(v)[-3] == 1
        grouped = gqa and all(isinstance(h, int) for h in (qshape[-3], kshape[-3])) and \
            qshape[-3] % kshape[-3] == 0
        if not (shared or grouped):
            raise RefusedError(f"grouped-query attention of {qshape[-3]} query heads over "
                               f"{kshape[-3]} key heads")
    if dropout:
        return with_dropout(e, n, mask, float(dropout), bool(causal), scale)
    operands = [e.operand(a) for a in (q, k, v)]
    if isinstance(mask, RecordNode):
        operands.append(e.operand(mask) if e.dtype(mask) == "bool" else e.as_dtype(mask, dtype))
    elif mask is not None:
        raise RefusedError(f"an attention mask {mask!r} that is not a tensor")
    attrs = {"causal": bool(causal)} if causal else {}
    if scale is not None:
        attrs["scale"] = float(scale)
    if len(qshape) >= 3:
        return e.op("attention", operands, attrs, name=n.name)
    one_head = [[1] + e.shape(a) for a in (q, k, v)]  # [L, E]: one head of rank 3
    operands[:3] = [e.op("reshape", [x], {"shape": shape})
                    for x, shape in zip(operands[:3], one_head)]
    out = e.op("attention", operands, attrs)
    return e.op("reshape", [out], {"shape": e.shape(n)}, name=n.name)


def with_dropout(e, n, mask, p, causal, scale):
    """Training-mode attention with dropout on the probabilities, written
    out as PyTorch's math kernel computes it (cgc's attention op has no
    dropout): softmax(q k^T scale + mask) with cgc's dropout, times v."""
    q, k, v = n.args[:3]
    dtype, qshape, kshape = e.dtype(q), e.shape(q), e.shape(k)
    if len(qshape) < 3 or qshape[-3] != kshape[-3]:
        raise RefusedError("attention dropout over grouped-query or single-head attention")
    scale = scale if scale is not None else 1.0 / math.sqrt(qshape[-1])
    s = e.op("matmul", [e.operand(q), e.operand(k)], {"transpose_a": False, "transpose_b": True})
    s = e.op("mul", [s, e.scalar(scale, dtype)])
    minus_inf = e.scalar(float("-inf"), dtype)
    if isinstance(mask, RecordNode) and e.dtype(mask) == "bool":
        s = e.op("where", [e.operand(mask), s, minus_inf])
    elif isinstance(mask, RecordNode):
        s = e.op("add", [s, e.as_dtype(mask, dtype)])
    elif mask is not None:
        raise RefusedError(f"an attention mask {mask!r} that is not a tensor")
    if causal:
        square = [qshape[-2], kshape[-2]]
        row, col = (e.op("iota", [], {"dtype": "i64", "shape": square, "axis": a})
                    for a in (0, 1))
        s = e.op("where", [e.op("ge", [row, col]), s, minus_inf])
    probs = e.op("softmax", [s], {"axis": -1})
    probs = e.dropout(probs, p, qshape[:-1] + [kshape[-2]])
    return e.op("matmul", [probs, e.operand(v)], {"transpose_a": False, "transpose_b": False},
                name=n.name)


ATEN["scaled_dot_product_attention"] = sdpa
