//===- RowIO.h - The text pieces and operands of one row kernel -*- C++ -*-===//
//
// RowEmitter.cpp's two helpers: RowText, the loops and loads of a row
// kernel over its RowSchedule, and RowIO, where its input elements come
// from and its results go (the row op's operands and results, or a
// row_fusion's prologue, siblings and epilogue).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_ROWIO_H
#define CGC_CODEGEN_ROWIO_H

#include "codegen/Accumulator.h"
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "ir/RowFusion.h"
#include "ir/TypeRules.h"

#include "llvm/Support/ErrorHandling.h"

namespace cgc {
/// The text pieces of one row kernel over a RowSchedule.
struct RowText {
  RowSchedule s;
  uint32_t grid;
  std::string L, V, LOADS, UNITS, LEN;

  explicit RowText(const Schedule &record)
      : s(rowScheduleIn(record)), grid(uint32_t(record[ScheduleField::GridX])),
        L(std::to_string(s.lanes)), V(std::to_string(s.vector)),
        LOADS(std::to_string(s.loads)),
        UNITS(std::to_string(s.length / s.vector) + "LL"),
        LEN(std::to_string(s.length) + "LL") {}

  unsigned blockSize() const {
    return s.blockPerRow() ? s.lanes : RowSchedule::kRowBlock;
  }
  unsigned slots() const { return s.blockPerRow() ? 1 : RowSchedule::kRowBlock / s.lanes; }

  /// Opens the row loop: `row`, `live` (the row exists) and `lane`.
  std::string open() const {
    std::string rows = std::to_string(s.rows) + "LL";
    if (s.blockPerRow())
      return "  const unsigned lane = threadIdx.x;\n"
             "  for (long long row = blockIdx.x; row < " + rows +
             "; row += gridDim.x) {\n    const bool live = true;\n";
    std::string slotsText = std::to_string(slots());
    return "  const unsigned lane = threadIdx.x % " + L + ";\n"
           "  for (long long first = (long long)blockIdx.x * " + slotsText +
           "; first < " + rows + "; first += (long long)gridDim.x * " + slotsText +
           ") {\n    const long long row = first + threadIdx.x / " + L +
           ";\n    const bool live = row < " + rows + ";\n";
  }

  /// `for (j) { u = ...; if (live && u < UNITS) { BODY } }` with the
  /// loop unrolled \p unroll times (0: fully).
  std::string forEachLoad(const std::string &body, unsigned unroll = 0) const {
    return std::string(unroll ? "#pragma unroll " + std::to_string(unroll) + "\n"
                              : "#pragma unroll\n") +
           "    for (int j = 0; j < " + LOADS + "; ++j) {\n"
           "      const long long u = (long long)j * " + L + " + lane;\n"
           "      if (live && u < " + UNITS + ") {\n" + body + "      }\n    }\n";
  }

  /// `for (k < V) STATEMENT`.
  std::string forEachElement(const std::string &statement) const {
    return "#pragma unroll\n        for (int k = 0; k < " + V + "; ++k) " +
           statement + "\n";
  }

  std::string load(const std::string &pointer, const std::string &into,
                   const std::string &type = "float") const {
    return "        cgc_ldv<" + V + ", " + type + ">(" + pointer + " + row * " +
           LEN + ", u * " + V + ", " + into + ");\n";
  }

  std::string reduce(const std::string &var, const Accumulator &a) const {
    return "    " + var + " = cgc_group_reduce<" + L + ">(" + var + ", " +
           combiner(a) + ");\n";
  }

  void finish(Kernel &kernel, const std::string &body) const {
    unsigned block = blockSize();
    kernel.block[0] = block;
    kernel.grid[0] = grid;
    kernel.body = open() + body + "  }\n";
  }
};

/// Where a row kernel's input elements come from and its results go: the
/// row op's first operand and its result, or, for a row_fusion, the
/// prologue computed as each vector is loaded (its values read outside
/// stored there, once) and the epilogue computed as each result is stored.
class RowIO {
public:
  RowIO(const Node &node, Kernel &kernel) : kernel(kernel), node(node) {
    if (node.getOp() != OpKind::RowFusion) {
      root = &node;
      return;
    }
    RowFusionParts parts = rowFusionParts(node.region(0));
    root = parts.root;
    siblings = parts.siblings;
    // Sources are literals, for either side.
    prologue.ops = parts.sources;
    prologue.ops.insert(prologue.ops.end(), parts.prologue.begin(), parts.prologue.end());
    epilogue.ops = parts.sources;
    epilogue.ops.insert(epilogue.ops.end(), parts.epilogue.begin(), parts.epilogue.end());
    split(prologue, operands());
    split(epilogue, {root->result()});
  }

  const Node &row() const { return *root; }
  /// The row op, then the reductions that run beside it over the same rows.
  std::vector<const Node *> rowOps() const {
    std::vector<const Node *> ops{root};
    ops.insert(ops.end(), siblings.begin(), siblings.end());
    return ops;
  }
  bool fused() const { return root != &node; }

  /// The kernel parameter of \p v, an operand or result of the row op.
  std::string param(const Value *v, bool written) {
    if (fused()) {
      const Graph &body = node.region(0);
      for (unsigned i = 0; i < node.numOperands(); ++i)
        if (body.inputs()[i].value == v)
          return addParam(kernel, node.operand(i), written);
      for (unsigned i = 0; i < node.numResults(); ++i)
        if (body.outputs[i].value == v)
          return addParam(kernel, node.result(i), written);
      llvm_unreachable("not a value of the row_fusion's boundary");
    }
    return addParam(kernel, v, written);
  }

  /// Statements that fill `TYPE into[V]` with vector u of row `row`.
  std::string load(const RowText &t, const std::string &into,
                   const std::string &type) {
    return loadEach(t, {into}, type);
  }

  /// Statements that fill `TYPE intos[i][V]` with vector u of row `row` of
  /// the operand of the row op (i = 0) and of each sibling.
  std::string loadEach(const RowText &t, const std::vector<std::string> &intos,
                       const std::string &type) {
    std::vector<const Value *> xs = operands();
    if (prologue.ops.empty() && prologue.outputs.empty()) {
      std::string text;
      for (size_t i = 0; i < xs.size(); ++i)
        text += t.load(param(xs[i], false), intos[i], type);
      return text;
    }
    VectorBody b = *vectorBody(node, prologue, staticShape(xs[0]->getType()),
                               t.s.vector, index(t), "pv", kernel, VarMap());
    std::string perElement = b.body;
    for (size_t i = 0; i < xs.size(); ++i)
      perElement += "      " + intos[i] + "[k] = " + b.vars.lookup(xs[i]) + ";\n";
    return block(t, b, perElement);
  }

  /// Statements that store `float values[V]`, the row op's results of
  /// vector u of row `row`.
  std::string storeVector(const RowText &t, const std::string &values) {
    const Value *y = root->result();
    if (!fused())
      return "        cgc_stv<" + t.V + ">(" + param(y, true) + " + row * " +
             t.LEN + ", u * " + t.V + ", " + values + ");\n";
    VarMap given;
    given[y] = values + "[k]";
    VectorBody b = *vectorBody(node, epilogue, staticShape(y->getType()),
                               t.s.vector, index(t), "ev", kernel, given);
    return block(t, b, b.body);
  }

  /// Statements that store \p value, the row op's result of row `row`.
  std::string storeScalar(const std::string &value) {
    const Value *y = root->result();
    if (!fused())
      return "cgc_st(" + param(y, true) + ", row, " + value + ");";
    VarMap given;
    given[y] = "(" + value + ")";
    VectorBody b = *vectorBody(node, epilogue, staticShape(y->getType()), 1,
                               {"row", "row"}, "ev", kernel, given);
    return "{\n" + b.loads + "    for (int k = 0; k < 1; ++k) {\n" + b.body +
           "    }\n" + b.stores + "    }";
  }

  /// Statements that store \p value, sibling \p s's result of row `row`.
  std::string storeSibling(const Node &s, const std::string &value) {
    return "cgc_st(" + param(s.result(), true) + ", row, " + value + ");";
  }

  /// Why codegen cannot run this node as one row kernel of \p record
  /// ("" if it can; the schedule pass checked that its rows fit
  /// registers).
  std::string refusal(const Schedule &record) const {
    if (!fused())
      return "";
    const Value *x = root->operand(0), *y = root->result();
    unsigned vector = unsigned(record[ScheduleField::Vector]);
    if (!fits(prologue, staticShape(x->getType()), vector) ||
        !fits(epilogue, staticShape(y->getType()),
              reducedRun(*root) ? 1 : vector))
      return "an operand or result of its prologue or epilogue is broadcast "
             "in a way no vectorized access covers";
    return "";
  }

private:
  /// The first operand of each of rowOps().
  std::vector<const Value *> operands() const {
    std::vector<const Value *> xs;
    for (const Node *op : rowOps())
      xs.push_back(op->operand(0));
    return xs;
  }

  static bool isIn(const PointwiseParts &parts, const Value *v) {
    return llvm::any_of(parts.ops, [&](const Node *n) { return n->result() == v; });
  }

  /// The body inputs \p parts reads (and \p also), and the body outputs
  /// that are its values (or \p also).
  void split(PointwiseParts &parts, const std::vector<const Value *> &also) {
    const Graph &body = node.region(0);
    for (unsigned i = 0; i < node.numOperands(); ++i) {
      const Value *in = body.inputs()[i].value;
      bool read = &parts == &prologue && llvm::is_contained(also, in);
      for (const Node *n : parts.ops)
        read |= llvm::is_contained(n->getOperands(), in);
      if (read)
        parts.inputs.push_back({in, node.operand(i)});
    }
    for (unsigned i = 0; i < node.numResults(); ++i) {
      const Value *out = body.outputs[i].value;
      if (isIn(parts, out) || (llvm::is_contained(also, out) && &parts == &epilogue))
        parts.outputs.push_back({out, node.result(i)});
    }
  }

  /// Whether every operand of \p parts reads by a vectorRead pattern (a
  /// dry run of vectorBody into a kernel of its own).
  bool fits(const PointwiseParts &parts, const Shape &iter,
            unsigned width) const {
    Kernel dry;
    return vectorBody(node, parts, iter, width, {"q", "q"}, "x", dry, VarMap())
        .hasValue();
  }

  /// Vector u of row `row` as an index of vectors of the whole tensor.
  static VectorIndex index(const RowText &t) {
    std::string wide = "(row * " + t.UNITS + " + u)";
    bool narrow = t.s.rows * (t.s.length / t.s.vector) < (int64_t(1) << 32);
    return {wide, narrow ? "(unsigned)" + wide : wide};
  }

  static std::string block(const RowText &t, const VectorBody &b,
                           const std::string &perElement) {
    return "        {\n" + b.loads + "#pragma unroll\n    for (int k = 0; k < " +
           t.V + "; ++k) {\n" + perElement + "    }\n" + b.stores + "        }\n";
  }

  Kernel &kernel;
  const Node &node;
  const Node *root = nullptr;
  std::vector<const Node *> siblings;
  PointwiseParts prologue, epilogue;
};
} // namespace cgc

#endif
