"""Views that merge leading dims (GPT-2's Conv1D over [batch, seq, d]):
which ops the lowering may keep them unmerged through (export.py)."""
from ..errors import RefusedError
from ..ir_builder import is_dim_name
from .record import RecordNode, TensorVal

# A view that merges leading dims into one of their product (GPT-2's
# `x.view(-1, x.size(-1))` over [batch, seq, d]: [batch*seq, d]) has no IR
# shape: the IR's dims are names, not expressions. Such a tensor stays
# unmerged in the IR ([batch, seq, d]) as long as every op reading or
# making it treats the leading dims alike: views (back to [batch, seq, n]),
# products of it by a matrix, elementwise ops whose other operand does
# not reach the merged dim, and the identities. Any other op on it is
# refused (an axis would count differently).
MERGE_SAFE = {"view", "_unsafe_view", "reshape", "mm", "addmm", "matmul", "linear", "add",
              "sub", "mul", "div", "gelu", "relu", "tanh", "sigmoid", "neg", "exp", "pow",
              "_to_copy", "to", "clone", "alias", "contiguous", "detach"}


def merged_dims(dim):
    """The factors of a dim written as a product of dims and numbers
    ("batch*seq", "8*s0"), else None."""
    if not isinstance(dim, str) or "*" not in dim:
        return None
    factors = []
    for part in (p.strip() for p in dim.split("*")):
        if part.isdigit():
            factors.append(int(part))
        elif is_dim_name(part):
            factors.append(part)
        else:
            return None
    return factors


def is_merged(value):
    return isinstance(value, RecordNode) and isinstance(value.val, TensorVal) and \
        bool(value.val.shape) and merged_dims(value.val.shape[0]) is not None


def refuse_merged_use(n, overload):
    """Refuses an op outside MERGE_SAFE on (or making) a merged tensor, and
    a safe one whose other operand reaches the merged dim."""
    operands = [a for a in n.args if isinstance(a, RecordNode)]
    merged = [a for a in operands if is_merged(a)]
    if not merged and not is_merged(n):
        return
    base = overload.split(".")[0]
    if base not in MERGE_SAFE:
        what = (merged[0] if merged else n).val.shape[0]
        raise RefusedError(f"node '{n.name}': {overload} on a view merging dims into {what} "
                           "(cgc keeps such a view unmerged for views, products and "
                           "elementwise ops only)")
    rank = len((merged[0] if merged else n).val.shape)
    products = {"mm": 0, "matmul": 0, "linear": 0, "addmm": 1}
    if base in products:
        lhs = n.args[products[base]]
        rhs = n.args[products[base] + 1]
        if merged and (merged != [lhs] or not isinstance(rhs, RecordNode) or
                       len(rhs.val.shape) != 2):
            raise RefusedError(f"node '{n.name}': {overload} of a view merging dims other "
                               "than as its left matrix by a 2-D one")
    if base in products or base in ("view", "_unsafe_view", "reshape"):
        return
    for a in operands:
        if not is_merged(a) and isinstance(a.val, TensorVal) and len(a.val.shape) >= rank:
            raise RefusedError(f"node '{n.name}': {overload} broadcasts '{a.name}' over a view "
                               "merging dims")
