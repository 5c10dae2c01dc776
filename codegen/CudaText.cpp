//===- CudaText.cpp - Pieces of generated CUDA C++ ---------------------------===//
#include "codegen/CudaText.h"

#include "cgc/Version.h"
#include "ir/Initializers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace cgc;

std::string cgc::storageType(DType dtype) {
  switch (dtype) {
  case DType::F32: return "float";
  case DType::F16: return "__half";
  case DType::BF16: return "__nv_bfloat16";
  case DType::I32: return "int";
  case DType::I64: return "long long";
  case DType::Bool: return "bool";
  }
  llvm_unreachable("invalid DType");
}

std::string cgc::computeType(DType dtype) {
  return isFloat(dtype) ? "float" : storageType(dtype);
}

std::string cgc::floatLiteral(float value) {
  if (std::isnan(value))
    return "__int_as_float(0x7fffffff)";
  if (std::isinf(value))
    return value > 0 ? "__int_as_float(0x7f800000)"
                     : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s + "f";
}

/// \p v in C++ source; the most negative value is written as a difference,
/// because its magnitude alone does not fit the type.
static std::string intLiteral(int64_t v, const char *suffix) {
  if (v == INT64_MIN || v == INT32_MIN)
    return "(" + std::to_string(v + 1) + suffix + " - 1)";
  return "(" + std::to_string(v) + suffix + ")";
}

std::string cgc::literal(double value, DType dtype) {
  switch (dtype) {
  case DType::Bool: return value != 0 ? "true" : "false";
  case DType::I32: return intLiteral(int32_t(uint32_t(uint64_t(toInt64(value)))), "");
  case DType::I64: return intLiteral(toInt64(value), "LL");
  case DType::F32: case DType::F16: case DType::BF16:
    return floatLiteral(float(value));
  }
  llvm_unreachable("invalid DType");
}

std::string cgc::literal(Element value, DType dtype) {
  switch (dtype) {
  case DType::Bool: return value.integer() != 0 ? "true" : "false";
  case DType::I32: return intLiteral(int32_t(value.integer()), "");
  case DType::I64: return intLiteral(value.integer(), "LL");
  case DType::F32: case DType::F16: case DType::BF16:
    return floatLiteral(float(value.real()));
  }
  llvm_unreachable("invalid DType");
}

Shape cgc::staticShape(const TensorType &type) { return type.extents(); }

int64_t cgc::product(const Shape &shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    p *= shape[i];
  return p;
}

Shape cgc::strides(const Shape &shape) {
  Shape s(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    s[i] = product(shape, i + 1);
  return s;
}

std::string cgc::coordDecls(const Shape &shape, const std::string &index,
                            const std::string &prefix) {
  std::string out;
  Shape st = strides(shape);
  // An empty shape has no element to locate: no division or modulo by 0.
  bool empty = llvm::is_contained(shape, 0);
  for (size_t k = 0; k < shape.size(); ++k) {
    out += "    long long " + prefix + std::to_string(k) + " = ";
    if (empty) {
      out += "0LL;\n";
      continue;
    }
    std::string q = st[k] == 1 ? index
                               : "(" + index + " / " + std::to_string(st[k]) +
                                     "LL)";
    out += k == 0 ? q : "(" + q + " % " + std::to_string(shape[k]) + "LL)";
    out += ";\n";
  }
  return out;
}

std::string cgc::broadcastOffset(const Shape &operand, const Shape &iter,
                                 const std::string &prefix) {
  Shape st = strides(operand);
  size_t shift = iter.size() - operand.size();
  std::string out;
  for (size_t d = 0; d < operand.size(); ++d) {
    if (operand[d] == 1)
      continue;
    std::string c = prefix + std::to_string(d + shift);
    out += (out.empty() ? "" : " + ") +
           (st[d] == 1 ? c : c + " * " + std::to_string(st[d]) + "LL");
  }
  return out.empty() ? "0" : out;
}

std::string cgc::addParam(Kernel &kernel, const Value *value, bool written) {
  for (size_t i = 0; i < kernel.params.size(); ++i)
    if (kernel.params[i].value == value && kernel.params[i].written == written)
      return "p" + std::to_string(i);
  KernelParam param;
  param.value = value;
  param.written = written;
  kernel.params.push_back(param);
  return "p" + std::to_string(kernel.params.size() - 1);
}

std::string cgc::addScratchParam(Kernel &kernel, const Storage &storage,
                                 bool written, const std::string &type) {
  KernelParam param;
  param.storage = storage;
  param.written = written;
  param.scratchType = type;
  kernel.params.push_back(param);
  return "p" + std::to_string(kernel.params.size() - 1);
}

std::string cgc::readIndex(const std::string &indent, const std::string &j,
                           const std::string &valid, const std::string &expr,
                           int64_t extent) {
  std::string n = std::to_string(extent) + "LL";
  return indent + "long long " + j + " = (long long)" + expr + ";\n" + indent + "if (" + j +
         " < 0) " + j + " += " + n + ";\n" + indent + "const bool " + valid + " = " + j +
         " >= 0 && " + j + " < " + n + ";\n" + indent + j + " = " + j + " < 0 ? 0 : " + j +
         " >= " + n + " ? " + n + " - 1 : " + j + ";\n";
}

uint32_t cgc::gridFor(int64_t work, int64_t perBlock) {
  int64_t blocks = (work + perBlock - 1) / perBlock;
  return uint32_t(std::min<int64_t>(std::max<int64_t>(blocks, 1), 65535));
}

std::string cgc::gridStrideLoop(const std::string &var, int64_t n,
                                unsigned block, bool overBx) {
  return "  for (long long " + var + " = (long long)" +
         (overBx ? "bx" : "blockIdx.x") + " * " + std::to_string(block) +
         " + threadIdx.x; " + var + " < " + std::to_string(n) + "LL; " + var +
         " += (long long)" + (overBx ? "gx" : "gridDim.x") + " * " +
         std::to_string(block) + ") {\n";
}

// The banner every generated program opens with.
static const char *PreludeBanner =
    "// Generated by " CGC_COMPILER_VERSION ". Do not edit.\n";

// The device code, from codegen/device/*.cuh: each .inc is the file's text
// as a raw string literal, written at build time (codegen/CMakeLists.txt).
static const char PreludeCommon[] =
#include "codegen/device/prelude.cuh.inc"
    ;
static const char PreludeConditionals[] =
#include "codegen/device/conditionals.cuh.inc"
    ;
static const char PreludeF16[] =
#include "codegen/device/f16.cuh.inc"
    ;
static const char PreludeBF16[] =
#include "codegen/device/bf16.cuh.inc"
    ;
// The helpers of both 16-bit types, after their cgc_elem specializations.
static const char PreludeHalf[] =
#include "codegen/device/half.cuh.inc"
    ;
// After the typed loads of every dtype it may read.
static const char PreludeAttention[] =
#include "codegen/device/attention.cuh.inc"
    ;
static const char PreludeAttentionDecode[] =
#include "codegen/device/attention_decode.cuh.inc"
    ;
static const char PreludeMma[] =
#include "codegen/device/mma.cuh.inc"
    ;
static const char PreludeAttentionMma[] =
#include "codegen/device/attention_mma.cuh.inc"
    ;
static const char PreludeProductMma[] =
#include "codegen/device/product_mma.cuh.inc"
    ;
static const char PreludeTopK[] =
#include "codegen/device/topk.cuh.inc"
    ;

std::string cgc::cudaPrelude(bool half, bool bfloat16, bool conditionals,
                             bool attention, bool mmaProduct, bool argTopK) {
  std::string out = PreludeBanner;
  out += PreludeCommon;
  if (conditionals)
    out += PreludeConditionals;
  if (half)
    out += PreludeF16;
  if (bfloat16)
    out += PreludeBF16;
  if (half || bfloat16)
    out += PreludeHalf;
  if (attention || mmaProduct)
    out += PreludeMma;
  if (attention) {
    out += PreludeAttention;
    out += PreludeAttentionDecode;
    out += PreludeAttentionMma;
  }
  if (mmaProduct)
    out += PreludeProductMma;
  if (argTopK)
    out += PreludeTopK;
  return out;
}
