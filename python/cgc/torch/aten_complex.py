"""ATen rules for complex numbers as rotary embeddings use them (Meta's
Llama and Mistral reference code, transformers' Llama 4: the frequencies
as `polar`, queries and keys through `view_as_complex`, a complex
product, `view_as_real`).

Layout: a complex64 tensor of shape S is cgc's f32 of shape S + [2], its
real and imaginary parts last (the layout view_as_real gives, so that
view_as_complex and view_as_real cost nothing; a complex buffer is
stored so too, capture.weight_value). The reshaping views, whose rules
reshape to the recorded shape, work on it unchanged. COMPLEX_OPS lists
every op that may read or make a complex value; check_complex refuses
any other by name, and a complex graph input or output (cgc's runtime
passes real tensors)."""
from .aten_rules import ATEN
from ..errors import RefusedError
from ..ir_builder import registrar
from .record import RecordNode, TensorVal

aten = registrar(ATEN)

COMPLEX = "torch.complex64"
# Ops (ATen base names) that compute on the layout above; the reshaping
# views and identities need no rule of their own.
COMPLEX_OPS = {"view_as_complex", "view_as_real", "polar", "mul", "add", "sub",
               "view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "flatten",
               "clone", "alias", "detach", "contiguous", "lift_fresh_copy", "_to_copy", "to",
               "_assert_tensor_metadata", "slice"}


def is_complex(v):
    return isinstance(v, RecordNode) and isinstance(v.val, TensorVal) and v.val.dtype == COMPLEX


def check_complex(n, base):
    """Refuses a node that reads or makes a complex value unless its op
    computes on cgc's layout of them."""
    operands = [a for v in list(n.args) + list(n.kwargs.values())
                for a in (v if isinstance(v, (list, tuple)) else [v])]  # cat's list too
    touched = is_complex(n) or any(is_complex(a) for a in operands)
    if not touched:
        return
    if base not in COMPLEX_OPS:
        raise RefusedError(f"{base} of complex values (cgc computes complex numbers in "
                           "view_as_complex, view_as_real, polar, mul, add, sub, slices and "
                           "the reshaping views only)")
    if base == "slice" and len(n.args) > 1 and isinstance(n.args[1], int) and n.args[1] < 0:
        raise RefusedError("a slice of a complex tensor along a negative dim (cgc stores the "
                           "parts as a last dim: give the dim from the front)")
    if base in ("_to_copy", "to") and is_complex(n) != is_complex(n.args[0]):
        raise RefusedError("a cast between real and complex values")


@aten("view_as_complex", "view_as_real")
def reinterpreted(e, n):
    """Both are the same f32 [..., 2] in cgc's layout."""
    return e.op("reshape", [e.operand(n.args[0])], {"shape": e.shape(n)}, name=n.name)


@aten("polar")
def polar(e, n):
    """abs * (cos(angle) + i sin(angle)), the parts concatenated last."""
    magnitude, angle = (e.operand(a) for a in n.args[:2])
    outer = e.shape(n)[:-1]
    parts = [e.op("reshape", [e.op("mul", [magnitude, e.op(f, [angle])])],
                  {"shape": outer + [1]}) for f in ("cos", "sin")]
    return e.op("concat", parts, {"axis": len(outer)}, name=n.name)


def part(e, v, shape, k):
    """The real (k = 0) or imaginary (k = 1) part of complex `v` (of cgc
    shape `shape`), keeping the parts' dim."""
    return e.op("slice", [v], {"starts": [k], "ends": [k + 1], "axes": [len(shape) - 1]})


def complex_product(e, n, a, b):
    """(ar + i ai)(br + i bi); a real tensor or a number scales both parts."""
    if not is_complex(a):
        a, b = b, a
    x = e.operand(a)
    if not is_complex(b):
        if isinstance(b, RecordNode):  # a real tensor: broadcast over the parts
            y = e.op("reshape", [e.operand(b)], {"shape": e.shape(b) + [1]})
        else:
            y = e.scalar(b, "f32")
        return e.op("mul", [x, y], name=n.name)
    y = e.operand(b)
    xs, ys = e.shape(a), e.shape(b)
    ar, ai, br, bi = part(e, x, xs, 0), part(e, x, xs, 1), part(e, y, ys, 0), part(e, y, ys, 1)
    real = e.op("sub", [e.op("mul", [ar, br]), e.op("mul", [ai, bi])])
    imag = e.op("add", [e.op("mul", [ar, bi]), e.op("mul", [ai, br])])
    return e.op("concat", [real, imag], {"axis": len(e.shape(n)) - 1}, name=n.name)


def complex_aware(real_rule, op):
    """`real_rule` for real operands; on complex ones, the complex product,
    or a sum or difference of two complex tensors (parts with parts)."""
    def fn(e, n):
        a, b = n.args[:2]
        if not (is_complex(a) or is_complex(b) or is_complex(n)):
            return real_rule(e, n)
        if op == "mul":
            return complex_product(e, n, a, b)
        if not (is_complex(a) and is_complex(b)) or n.kwargs.get("alpha", 1) != 1:
            raise RefusedError(f"{op} of a complex and a real value (cgc adds complex "
                               "tensors to complex tensors)")
        return e.op(op, [e.operand(a), e.operand(b)], name=n.name)
    return fn


for _op in ("mul", "add", "sub"):
    ATEN[_op] = complex_aware(ATEN[_op], _op)
