"""ONNX's element types as the importer and its operator rules see them:
the IR dtype of one cgc has (cgc.dtypes holds the table), the name of any
other in a refusal."""
from ..dtypes import IR_OF_ONNX, ir_of_numpy
from ..errors import RefusedError

ONNX_TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
                   7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "double",
                   12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
                   16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
                   19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
                   23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2"}


def cgc_dtype(elem_type, what):
    if elem_type not in IR_OF_ONNX:
        raise RefusedError(f"{what} has ONNX type {ONNX_TYPE_NAMES.get(elem_type, elem_type)}, "
                           "which cgc has not (it has float, float16, bfloat16, int32, int64, bool)")
    return IR_OF_ONNX[elem_type]


def dtype_of_array(array, what):
    name = ir_of_numpy(array.dtype)
    if name is None:
        raise RefusedError(f"{what} has dtype {array.dtype}, which cgc has not")
    return name
