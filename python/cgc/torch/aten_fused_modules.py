"""The fused ATen ops of torch.nn's inference fast path, which Dynamo
traces when grad mode is off (torch.export does not): nn.MultiheadAttention's
_native_multi_head_attention and nn.TransformerEncoderLayer's
_transformer_encoder_layer_fwd, written out as cgc's linear, attention,
layernorm and activation ops as PyTorch's kernels compute them
(aten/src/ATen/native/transformers). Batch first: x [B, L, E]. A mask is
True (or nonzero) where a key is masked out; mask_type says its shape: 0
[L, S], 1 [B, S] (key padding), 2 [B, H, L, S]; a row masked out
entirely gives 0, as PyTorch's masked softmax does and cgc's attention
defines."""
from .aten_attention import argument
from .aten_rules import ATEN
from ..errors import RefusedError
from .record import RecordNode


def heads(e, x, batch, rows, count, width):
    """[B, rows, count * width] as [B, count, rows, width]."""
    split = e.op("reshape", [x], {"shape": [batch, rows, count, width]})
    return e.op("transpose", [split], {"perm": [0, 2, 1, 3]})


def kept_keys(e, mask, mask_type, batch, rows, keys):
    """cgc's bool mask (True: attend) of a fast-path mask, or None."""
    if not isinstance(mask, RecordNode):
        if mask is not None:
            raise RefusedError(f"a mask {mask!r} that is not a tensor")
        return None
    masked = e.operand(mask)
    if e.dtype(mask) != "bool":
        masked = e.op("ne", [masked, e.scalar(0, e.dtype(mask))])
    keep = e.op("logical_not", [masked])
    shapes = {0: [1, 1, rows, keys], 1: [batch, 1, 1, keys]}
    if mask_type in shapes:
        return e.op("reshape", [keep], {"shape": shapes[mask_type]})
    if mask_type == 2 or (mask_type is None and len(e.shape(mask)) == 4):
        return keep
    raise RefusedError(f"a mask of type {mask_type!r} and shape {e.shape(mask)}")


def multi_head_attention(e, qkv, shapes, embed, count, weights, mask, mask_type, name):
    """_native_multi_head_attention's projected attention, [B, L, E], of
    the cgc values `qkv` (one value for self-attention) of `shapes` (the
    query's and the key's)."""
    qkv_weight, qkv_bias, proj_weight, proj_bias = weights
    if not isinstance(embed, int) or not isinstance(count, int) or embed <= 0 or embed % count:
        raise RefusedError(f"{count!r} heads over an embedding of {embed!r}")
    width = embed // count
    (batch, rows), keys = shapes[0][:2], shapes[1][1]

    def third(value, i, axis):
        return e.op("slice", [value], {"starts": [i * embed], "ends": [(i + 1) * embed],
                                       "axes": [axis]})
    if len(qkv) == 1:  # self-attention: one product, then each third
        both = e.op("linear", [qkv[0], e.operand(qkv_weight), e.operand(qkv_bias)])
        projected = [third(both, i, 2) for i in range(3)]
    else:
        projected = [e.op("linear", [x, third(e.operand(qkv_weight), i, 0),
                                     third(e.operand(qkv_bias), i, 0)])
                     for i, x in enumerate(qkv)]
    lengths = (rows, keys, keys)
    operands = [heads(e, x, batch, lengths[i], count, width) for i, x in enumerate(projected)]
    keep = kept_keys(e, mask, mask_type, batch, rows, keys)
    if keep is not None:
        operands.append(keep)
    out = e.op("transpose", [e.op("attention", operands, {})], {"perm": [0, 2, 1, 3]})
    out = e.op("reshape", [out], {"shape": [batch, rows, embed]})
    return e.op("linear", [out, e.operand(proj_weight), e.operand(proj_bias)], name=name)


def native_multi_head_attention(e, n):
    q, k, v, embed, count = n.args[:5]
    mask = argument(n, 9, "mask", None)
    mask_type = argument(n, 12, "mask_type", None)
    if len(e.shape(q)) != 3 or len(e.shape(k)) != 3:
        raise RefusedError(f"a query of shape {e.shape(q)} (batch first: [B, L, E])")
    qkv = [e.operand(q)] if q is k is v else [e.operand(x) for x in (q, k, v)]
    out = multi_head_attention(e, qkv, (e.shape(q), e.shape(k)), embed, count, n.args[5:9],
                               mask, mask_type, n.name)
    return [out, None]  # its attention weights (need_weights): refused when read


def norm(e, x, weight, bias, eps):
    return e.op("layernorm", [x, e.operand(weight), e.operand(bias)],
                {"axis": -1, "eps": float(eps)})


def transformer_encoder_layer(e, n):
    (src, embed, count, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first,
     eps, norm1_weight, norm1_bias, norm2_weight, norm2_bias, ffn1_weight, ffn1_bias,
     ffn2_weight, ffn2_bias) = n.args[:18]
    mask = argument(n, 18, "mask", None)
    mask_type = argument(n, 19, "mask_type", None)
    shape = e.shape(src)
    if len(shape) != 3:
        raise RefusedError(f"an input of shape {shape} (batch first: [B, L, E])")
    x = e.operand(src)
    if norm_first:
        x = norm(e, x, norm1_weight, norm1_bias, eps)
    x = multi_head_attention(e, [x], (shape, shape), embed, count,
                             (qkv_weight, qkv_bias, proj_weight, proj_bias), mask, mask_type,
                             None)
    x = e.op("add", [x, e.operand(src)])
    if not norm_first:
        x = norm(e, x, norm1_weight, norm1_bias, eps)
    residual = x
    if norm_first:
        x = norm(e, x, norm2_weight, norm2_bias, eps)
    x = e.op("linear", [x, e.operand(ffn1_weight), e.operand(ffn1_bias)])
    x = e.op("gelu" if use_gelu else "relu", [x])
    x = e.op("linear", [x, e.operand(ffn2_weight), e.operand(ffn2_bias)])
    return (e.op("add", [x, residual], name=n.name) if norm_first else
            e.op("layernorm", [e.op("add", [x, residual]), e.operand(norm2_weight),
                               e.operand(norm2_bias)], {"axis": -1, "eps": float(eps)},
                 name=n.name))


ATEN["_native_multi_head_attention"] = native_multi_head_attention
ATEN["_transformer_encoder_layer_fwd"] = transformer_encoder_layer
