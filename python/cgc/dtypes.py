"""cgc's dtypes, one table for every front end and file format: the IR's
name, its kind (float, int or bool), the bytes of one element, NumPy's
type (None for bf16: NumPy has no bfloat16), ONNX's TensorProto.DataType,
torch's dtype name and safetensors' dtype name. The compiler's own list is ir/Ops.def
(test/python/check_op_names.py checks that every name here is in it)."""
from collections import namedtuple

import numpy as np

DType = namedtuple("DType", "ir kind size numpy onnx torch safetensors")

DTYPES = (
    DType("f32", "float", 4, np.float32, 1, "float32", "F32"),
    DType("f16", "float", 2, np.float16, 10, "float16", "F16"),
    DType("bf16", "float", 2, None, 16, "bfloat16", "BF16"),
    DType("i32", "int", 4, np.int32, 6, "int32", "I32"),
    DType("i64", "int", 8, np.int64, 7, "int64", "I64"),
    DType("bool", "bool", 1, np.bool_, 9, "bool", "BOOL"),
)
BY_IR = {d.ir: d for d in DTYPES}
FLOATS = tuple(d.ir for d in DTYPES if d.kind == "float")
INTEGERS = tuple(d.ir for d in DTYPES if d.kind == "int")

# The IR dtype of each ONNX element type cgc has.
IR_OF_ONNX = {d.onnx: d.ir for d in DTYPES}
# The IR dtype of each torch dtype as torch spells it ("torch.float32").
IR_OF_TORCH = {f"torch.{d.torch}": d.ir for d in DTYPES}
# NumPy's type of each IR dtype NumPy has (all but bf16).
NUMPY = {d.ir: d.numpy for d in DTYPES if d.numpy is not None}


def ir_of_numpy(dtype):
    """The IR dtype of NumPy's `dtype` (a np.dtype or a type), else None."""
    dtype = np.dtype(dtype)
    if is_bfloat16(dtype):
        return "bf16"
    return next((d.ir for d in DTYPES if d.numpy is dtype.type), None)


def is_bfloat16(dtype):
    """Whether NumPy dtype `dtype` is ml_dtypes' bfloat16 (what onnx's
    numpy_helper gives for BFLOAT16 tensors; NumPy itself has none)."""
    return dtype.name == "bfloat16" and dtype.itemsize == 2
