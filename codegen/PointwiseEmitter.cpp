//===- PointwiseEmitter.cpp - One thread per element -------------------------===//
//
// A fusion body (or a single elementwise op, dropout or source) becomes
// one loop body: load each operand at its broadcast offset, evaluate the
// ops in order in the compute type (float for f16/bf16), store each result
// at the linear index. Splat sources are literals; iota reads the
// coordinate; a dropout draws the Philox number of its element's linear
// index, as the interpreter does. Where every operand reads by a pattern
// (vectorRead), a thread takes 16 bytes of each buffer per step
// (vectorBody, which row kernels use for their prologues and epilogues).
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"

#include "ir/PointwiseFusion.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace cgc;

std::string cgc::elementwiseExpr(const Node &n, llvm::ArrayRef<std::string> a) {
  unsigned typed = n.getOp() == OpKind::Where ? 1 : 0;
  DType in = n.numOperands() ? n.operand(typed)->getType().dtype
                             : n.result()->getType().dtype;
  bool f = isFloat(in);
  auto call = [&](const char *fn) { return std::string(fn) + "(" + a[0] + ")"; };
  auto call2 = [&](const char *fn) {
    return std::string(fn) + "(" + a[0] + ", " + a[1] + ")";
  };
  auto bin = [&](const char *op) { return "(" + a[0] + " " + op + " " + a[1] + ")"; };
  switch (n.getOp()) {
  case OpKind::Neg: return f ? "(-" + a[0] + ")" : call("cgc_ineg");
  case OpKind::Abs: return call(f ? "fabsf" : "cgc_iabs");
  case OpKind::Exp: return call("expf");
  case OpKind::Log: return call("logf");
  case OpKind::Sqrt: return call("sqrtf");
  case OpKind::Rsqrt: return call("rsqrtf");
  case OpKind::Tanh: return call("tanhf");
  case OpKind::Sigmoid: return call("cgc_sigmoid");
  case OpKind::Relu:
    return f ? "cgc_max(" + a[0] + ", 0.0f)"
             : "(" + a[0] + " > 0 ? " + a[0] + " : 0)";
  case OpKind::Gelu: return call("cgc_gelu");
  case OpKind::GeluTanh: return call("cgc_gelu_tanh");
  case OpKind::Erf: return call("erff");
  case OpKind::Sin: return call("cgc_sin");
  case OpKind::Cos: return call("cgc_cos");
  case OpKind::Floor: return call("floorf");
  case OpKind::Ceil: return call("ceilf");
  case OpKind::Round: return call("rintf"); // Ties to even, as the interpreter.
  case OpKind::LogicalNot: return "(!" + a[0] + ")";
  case OpKind::Add: return f ? bin("+") : call2("cgc_iadd");
  case OpKind::Sub: return f ? bin("-") : call2("cgc_isub");
  case OpKind::Mul: return f ? bin("*") : call2("cgc_imul");
  case OpKind::Div: return f ? bin("/") : call2("cgc_idiv");
  case OpKind::Pow: return "powf(" + a[0] + ", " + a[1] + ")";
  case OpKind::Fmod: return "fmodf(" + a[0] + ", " + a[1] + ")";
  case OpKind::Maximum: return "cgc_max(" + a[0] + ", " + a[1] + ")";
  case OpKind::Minimum: return "cgc_min(" + a[0] + ", " + a[1] + ")";
  case OpKind::Eq: return bin("==");
  case OpKind::Ne: return bin("!=");
  case OpKind::Lt: return bin("<");
  case OpKind::Le: return bin("<=");
  case OpKind::Gt: return bin(">");
  case OpKind::Ge: return bin(">=");
  case OpKind::LogicalAnd: return bin("&&");
  case OpKind::LogicalOr: return bin("||");
  case OpKind::BitwiseNot: return "(~" + a[0] + ")";
  case OpKind::BitwiseAnd: return bin("&");
  case OpKind::BitwiseOr: return bin("|");
  case OpKind::BitwiseXor: return bin("^");
  case OpKind::Where:
    return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
  case OpKind::Cast: {
    DType to = n.result()->getType().dtype;
    if (to == DType::Bool)
      return "(" + a[0] + " != 0)";
    DType from = n.operand(0)->getType().dtype;
    bool fromFloat = from == DType::F32 || from == DType::F16 || from == DType::BF16;
    // float -> int truncates toward zero and saturates to the target range
    // (the hardware conversion, cvt.rzi, does), NaN gives 0 (the hardware
    // gives INT64_MIN for NaN -> i64): saturateToInt in ir/Initializers.h.
    if (fromFloat && (to == DType::I32 || to == DType::I64))
      return "((" + a[0] + ") != (" + a[0] + ") ? (" + computeType(to) + ")0 : (" +
             computeType(to) + ")(" + a[0] + "))";
    // i64 -> i32 keeps the low 32 bits (wraps modulo 2^32, as ONNX, PyTorch
    // and the interpreter's wrapToDType): a conversion through unsigned, which
    // C++ defines.
    if (from == DType::I64 && to == DType::I32)
      return "((int)(unsigned int)(unsigned long long)(" + a[0] + "))";
    return "((" + computeType(to) + ")(" + a[0] + "))";
  }
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  // Fusion bodies hold only elementwise ops, dropouts and sources (the
  // fusion type rule); sources take sourceExpr() and dropouts bodyExpr().
  llvm_unreachable("not an elementwise op");
}

/// The value of a source node at the current coordinates.
static std::string sourceExpr(const Node &n, const Shape &iter) {
  DType dtype = n.result()->getType().dtype;
  switch (n.getOp()) {
  case OpKind::Constant: case OpKind::Fill: {
    // Non-splat constants live in the persistent region, never in a body.
    auto splat = splatConstant(n.result());
    assert(splat && "a pointwise source must be a splat or an iota");
    return literal(*splat, dtype);
  }
  case OpKind::Iota:
    break;
#define CGC_SOURCE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a source op");
  }
  Shape shape = staticShape(n.result()->getType());
  unsigned axis = *normalizeAxis(n.intAttr("axis", 0), shape.size());
  if (shape[axis] == 1)
    return literal(0, dtype);
  return "((" + computeType(dtype) + ")c" +
         std::to_string(iter.size() - shape.size() + axis) + ")";
}

llvm::Optional<Element> cgc::inlinedSplat(const Node &user,
                                         const Value *operand) {
  if (user.getOp() == OpKind::Fusion || !user.info().has(Elementwise))
    return llvm::None;
  return splatConstant(operand);
}


/// Bodies of more ops than this keep the four lanes of a vectorized
/// thread in a loop instead of unrolling it: such a body is compute-bound,
/// so the lanes' local-memory traffic costs little, and unrolled it is
/// four copies for NVRTC (a fused chain of 64 unary ops: 1.3 s unrolled,
/// 0.3 s rolled).
constexpr size_t kMaxUnrolledBodyOps = 32;

/// Whether \p v is read by the ops of \p parts only as the rng state of
/// dropouts: two scalars, not an operand of the iteration space.
static bool isRngState(const Value *v, const PointwiseParts &parts) {
  bool read = false, other = false;
  for (const Use &u : v->uses()) {
    if (!llvm::is_contained(parts.ops, u.user))
      continue;
    read = true;
    other |= u.user->getOp() != OpKind::Dropout || u.operandIndex != 1;
  }
  return read && !other;
}

/// The (seed, offset) of dropout \p n's stream; \p rng names the pointer
/// of its rng state ("" for the seed attribute).
static std::pair<std::string, std::string> dropoutStream(const Node &n,
                                                         const std::string &rng) {
  std::string offset = std::to_string(uint64_t(n.intAttr("offset", 0))) + "ull";
  if (rng.empty())
    return {std::to_string(uint64_t(n.intAttr("seed", 0))) + "ull", offset};
  return {"(unsigned long long)" + rng + "[0]",
          "((unsigned long long)" + rng + "[1] + " + offset + ")"};
}

/// `u >= p ? x * scale : 0` for dropout \p n whose element draws Philox
/// \p word, as the interpreter computes it: u = (word >> 8) * 2^-24, so
/// u >= p exactly when word >> 8 >= ceil(p * 2^24), an integer compare.
static std::string dropoutSelect(const Node &n, const std::string &x,
                                 const std::string &word) {
  double p = n.floatAttr("p", 0);
  uint64_t threshold = uint64_t(std::ceil(p * 16777216.0));
  return "((" + word + ") >> 8 >= " + std::to_string(threshold) + "u ? " + x +
         " * " + floatLiteral(float(1.0 / (1.0 - p))) + " : 0.0f)";
}

/// The rng pointer parameter of dropout \p op ("" for the seed attribute).
static std::string rngParam(const Node &op, Kernel &kernel,
                            const PointwiseParts &parts) {
  return op.numOperands() == 2
             ? addParam(kernel, parts.outerOf(op.operand(1)), false)
             : "";
}

/// Whether body input \p inner is loaded from memory: not when it already
/// has a variable, is only an rng state (read as two scalars), or is a
/// splat the owner reads as a literal (which \p var then takes).
static bool needsLoad(const Node &owner, const PointwiseParts &parts,
                      const Value *inner, const Value *outer, VarMap &var) {
  if (var.count(inner) || isRngState(inner, parts))
    return false;
  if (auto splat = inlinedSplat(owner, outer)) {
    var[inner] = literal(*splat, inner->getType().dtype);
    return false;
  }
  return true;
}

/// The expression of body op \p op on its operands' variables.
static std::string bodyExpr(const Node &op, const Shape &iter, const VarMap &var,
                            const std::string &index, Kernel &kernel,
                            const PointwiseParts &parts) {
  if (op.info().has(Source))
    return sourceExpr(op, iter);
  if (op.getOp() == OpKind::Dropout) {
    auto [seed, offset] = dropoutStream(op, rngParam(op, kernel, parts));
    return dropoutSelect(op, var.lookup(op.operand(0)),
                         "cgc_philox(" + seed + ", " + offset +
                             ", (unsigned long long)(" + index + "))");
  }
  llvm::SmallVector<std::string, 3> args;
  for (Value *v : op.getOperands())
    args.push_back(var.lookup(v));
  return elementwiseExpr(op, args);
}

const Value *PointwiseParts::outerOf(const Value *inner) const {
  for (const auto &[in, out] : inputs)
    if (in == inner)
      return out;
  return inner;
}

PointwiseParts cgc::pointwiseParts(const Node &node) {
  PointwiseParts parts;
  if (node.getOp() == OpKind::Fusion) {
    const Graph &body = node.region(0);
    for (const auto &n : body.nodes())
      parts.ops.push_back(n.get());
    for (unsigned i = 0; i < node.numOperands(); ++i)
      parts.inputs.push_back({body.inputs()[i].value, node.operand(i)});
    for (unsigned i = 0; i < node.numResults(); ++i)
      parts.outputs.push_back({body.outputs[i].value, node.result(i)});
    return parts;
  }
  parts.ops.push_back(&node);
  for (Value *v : node.getOperands())
    parts.inputs.push_back({v, v});
  parts.outputs.push_back({node.result(), node.result()});
  return parts;
}

llvm::Optional<VectorBody>
cgc::vectorBody(const Node &owner, const PointwiseParts &parts,
                const Shape &iter, unsigned width, const VectorIndex &q,
                const std::string &prefix, Kernel &kernel,
                VarMap var) {
  std::string W = std::to_string(width);
  VectorBody text;
  unsigned next = 0;
  auto fresh = [&] { return prefix + std::to_string(next++); };
  const char *lane = "      ";
  for (const auto &[inner, outer] : parts.inputs) {
    if (!needsLoad(owner, parts, inner, outer, var))
      continue;
    Shape shape = staticShape(inner->getType());
    if (!vectorAccess(outer->getType().dtype, shape, iter, width))
      return llvm::None;
    OperandRead read = *vectorRead(shape, iter, width);
    std::string p = addParam(kernel, outer, false);
    std::string name = fresh();
    var[inner] = name;
    std::string type = computeType(inner->getType().dtype);
    switch (read.read) {
    case VectorRead::Full: case VectorRead::Row: {
      std::string at = read.read == VectorRead::Full
                           ? q.wide
                           : "(long long)(" + q.narrow + " % " +
                                 std::to_string(read.period) + "u)";
      text.loads += "    " + type + " a" + name + "[" + W + "];\n    cgc_ldv<" + W +
                    ", " + type + ">(" + p + ", " + at + " * " + W + ", a" + name + ");\n";
      text.body += lane + type + " " + name + " = a" + name + "[k];\n";
      break;
    }
    case VectorRead::Column:
      text.loads += "    const " + type + " " + name + " = cgc_ld(" + p +
                    ", (long long)(" + q.narrow + " / " +
                    std::to_string(read.period) + "u));\n";
      break;
    case VectorRead::Scalar:
      text.loads += "    const " + type + " " + name + " = cgc_ld(" + p + ", 0);\n";
      break;
    }
  }
  std::string index = "(" + q.wide + " * " + W + " + k)";
  for (const Node *op : parts.ops) {
    std::string name = fresh();
    std::string expr;
    if (op->getOp() == OpKind::Dropout && width % 4 == 0) {
      // The vector's words are whole Philox blocks: one block per four
      // elements instead of one per element.
      auto [seed, offset] = dropoutStream(*op, rngParam(*op, kernel, parts));
      text.loads += "    unsigned w" + name + "[" + W + "];\n    cgc_philox_words<" + W +
                    ">(" + seed + ", " + offset + ", (unsigned long long)" + q.wide +
                    " * " + W + ", w" + name + ");\n";
      expr = dropoutSelect(*op, var.lookup(op->operand(0)),
                           "w" + name + "[k]");
    } else {
      expr = bodyExpr(*op, iter, var, index, kernel, parts);
    }
    var[op->result()] = name;
    text.body += lane + computeType(op->result()->getType().dtype) + " " +
                 name + " = " + expr + ";\n";
  }
  text.vars = var;
  for (const auto &[inner, outer] : parts.outputs)
    if (width > 1 && !isWholeWord(dtypeSize(outer->getType().dtype) * width))
      return llvm::None;
  for (const auto &[inner, outer] : parts.outputs) {
    std::string p = addParam(kernel, outer, true);
    std::string r = "r" + p, type = computeType(outer->getType().dtype);
    text.loads += "    " + type + " " + r + "[" + W + "];\n";
    text.body += lane + r + "[k] = " + var.lookup(inner) + ";\n";
    text.stores += "    cgc_stv<" + W + ">(" + p + ", " + q.wide + " * " + W +
                   ", " + r + ");\n";
  }
  return text;
}

/// The vector width of a pointwise kernel: 16 bytes of its widest element
/// type when every buffer holds 2- or 4-byte elements, each operand reads
/// by one pattern of vectorRead() and the element count divides (measured
/// 2.3x faster for GELU over 4.8M floats on an H200); 1 otherwise. Buffers
/// are 256-byte aligned in the arena and bound pointers 16-byte aligned
/// (runtime/ checks it). The rng state of a dropout is read as two
/// scalars and does not count.
static unsigned vectorWidthOf(const Node &node, const PointwiseParts &parts,
                              const Shape &iter, bool hasIota) {
  unsigned widest = 0;
  bool sizesOk = true;
  auto note = [&](const Value *v) {
    unsigned size = dtypeSize(v->getType().dtype);
    sizesOk &= size == 2 || size == 4;
    widest = std::max(widest, size);
  };
  for (const auto &[inner, outer] : parts.inputs)
    if (!inlinedSplat(node, outer) && !isRngState(inner, parts))
      note(outer);
  for (const auto &[inner, outer] : parts.outputs)
    note(outer);
  if (hasIota || !sizesOk)
    return 1;
  unsigned width = 16 / widest;
  if (product(iter) % width != 0)
    return 1;
  for (const auto &[inner, outer] : parts.inputs)
    if (!inlinedSplat(node, outer) && !isRngState(inner, parts) &&
        !vectorRead(staticShape(inner->getType()), iter, width))
      return 1;
  return width;
}

/// One thread per element: operands at their broadcast offsets.
static std::string scalarLoop(const Node &node, const PointwiseParts &parts,
                              const Shape &iter, Kernel &kernel) {
  int64_t n = product(iter);
  bool needCoords = false;
  for (const Node *op : parts.ops)
    needCoords |= op->getOp() == OpKind::Iota;
  VarMap var;
  std::string body;
  unsigned next = 0;
  for (const auto &[inner, outer] : parts.inputs) {
    if (!needsLoad(node, parts, inner, outer, var))
      continue;
    std::string p = addParam(kernel, outer, false);
    Shape shape = staticShape(inner->getType());
    std::string name = "v" + std::to_string(next++);
    var[inner] = name;
    bool broadcast = shape != iter && product(shape) != 1;
    needCoords |= broadcast;
    std::string offset = shape == iter ? "i"
                         : !broadcast  ? "0"
                                       : broadcastOffset(shape, iter, "c");
    body += "    " + computeType(inner->getType().dtype) + " " + name +
            " = cgc_ld(" + p + ", " + offset + ");\n";
  }
  for (const Node *op : parts.ops) {
    std::string expr = bodyExpr(*op, iter, var, "i", kernel, parts);
    std::string name = "v" + std::to_string(next++);
    var[op->result()] = name;
    body += "    " + computeType(op->result()->getType().dtype) + " " + name +
            " = " + expr + ";\n";
  }
  for (const auto &[inner, outer] : parts.outputs)
    body += "    cgc_st(" + addParam(kernel, outer, true) + ", i, " +
            var.lookup(inner) + ");\n";
  return gridStrideLoop("i", n, 256, /*overBx=*/true) +
         (needCoords ? coordDecls(iter, "i", "c") : "") + body;
}

void cgc::emitPointwise(const Node &node, Kernel &kernel) {
  if (node.getOp() == OpKind::Fusion && movesElements(node.region(0)))
    return emitViewFusion(node, kernel);
  PointwiseParts parts = pointwiseParts(node);
  Shape iter = staticShape(parts.outputs[0].second->getType());
  int64_t n = product(iter);
  bool hasIota = llvm::any_of(parts.ops, [](const Node *op) {
    return op->getOp() == OpKind::Iota;
  });
  unsigned width = vectorWidthOf(node, parts, iter, hasIota);
  const unsigned block = 256;
  kernel.block[0] = block;
  kernel.grid[0] = gridFor(n / width, block);
  kernel.gridStride = true;
  if (width == 1) {
    kernel.body = scalarLoop(node, parts, iter, kernel) + "  }\n";
    return;
  }
  // Vector indices fit 32 bits for every tensor below 2^32 vectors: the
  // row and column reads then divide 32-bit numbers by constants.
  VectorIndex q{"q", n / width < (int64_t(1) << 32) ? "(unsigned)q" : "q"};
  VectorBody text = *vectorBody(node, parts, iter, width, q, "v", kernel, VarMap());
  kernel.body =
      gridStrideLoop("q", n / width, block, /*overBx=*/true) + text.loads +
      (parts.ops.size() > kMaxUnrolledBodyOps ? "#pragma unroll 1\n"
                                              : "#pragma unroll\n") +
      "    for (int k = 0; k < " + std::to_string(width) + "; ++k) {\n" +
      text.body + "    }\n" + text.stores + "  }\n";
}
