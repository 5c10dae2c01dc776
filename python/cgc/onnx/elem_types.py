"""What the ONNX importer and its operator rules share: the refusal and
the dtypes cgc has."""
import numpy as np


class RefusedError(Exception):
    """What the importer cannot express, located at the ONNX node."""


DTYPES = {1: "f32", 10: "f16", 16: "bf16", 6: "i32", 7: "i64", 9: "bool"}
ONNX_TYPE_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
                   7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "double",
                   12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
                   16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
                   19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
                   23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2"}
NUMPY = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
         "bool": np.bool_}


def cgc_dtype(elem_type, what):
    if elem_type not in DTYPES:
        raise RefusedError(f"{what} has ONNX type {ONNX_TYPE_NAMES.get(elem_type, elem_type)}, "
                           "which cgc has not (it has float, float16, bfloat16, int32, int64, bool)")
    return DTYPES[elem_type]


def dtype_of_array(array, what):
    for name, t in NUMPY.items():
        if array.dtype.type is t:
            return name
    raise RefusedError(f"{what} has dtype {array.dtype}, which cgc has not")
