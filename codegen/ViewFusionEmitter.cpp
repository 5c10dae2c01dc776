//===- ViewFusionEmitter.cpp - A fusion that reads through index moves -------===//
//
// A fusion whose body holds index moves (ir/PointwiseFusion.h; made by
// fuse-views) runs one thread per element of its results and evaluates
// each body value where it is read: a value is asked for at coordinates
// (one C expression per dim of its shape). An elementwise op asks its
// operands at the same coordinates (NumPy broadcasting: 0 on a dim of
// extent 1), a transpose permutes them, a slice steps from its start, a
// reshape goes through the row-major linear index, broadcast_to zeroes the
// broadcast dims, a gather (or embedding) asks its index at the result's
// coordinates along the index dims and its data at that index (readIndex,
// as the gather kernel reads it), a body input is a load at the row-major
// offset, a splat is its literal and an iota its coordinate. A concat branches on its
// axis's coordinate and asks the operand whose range holds it inside a
// block of its own, so that no load outside an operand ever runs (a concat
// of one value repeated asks it once, at the coordinate modulo its
// extent). Each
// (value, coordinates) pair is computed once per block and reused by the
// blocks nested in it; computed coordinates get variables.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"

#include "ir/OpAttrs.h"
#include "ir/PointwiseFusion.h"

#include "llvm/Support/ErrorHandling.h"
#include <map>

using namespace cgc;

namespace {

using Coords = std::vector<std::string>;

/// Statements at one nesting level, with what they computed.
struct Block {
  const Block *parent = nullptr;
  std::string indent;
  std::string text;
  std::map<std::pair<const Value *, Coords>, std::string> known;
};

class ViewBody {
public:
  ViewBody(const PointwiseParts &parts, Kernel &kernel)
      : parts(parts), kernel(kernel) {}

  /// The expression of \p v at \p at, its statements appended to \p block.
  std::string valueAt(const Value *v, const Coords &at, Block &block);

private:
  std::string computed(const Value *v, const Coords &at, Block &block);
  std::string load(const Value *inner, const Coords &at, Block &block);
  std::string concatAt(const Node &n, const Coords &at, Block &block);
  std::string gatheredAt(const Node &n, const Coords &at, Block &block);
  Coords reshapedCoords(const Node &n, const Coords &at, Block &block);
  /// \p expr as a coordinate: itself when a name or a number, else a
  /// variable declared in \p block.
  std::string coordinate(const std::string &expr, Block &block);
  std::string fresh(const char *prefix) { return prefix + std::to_string(next++); }

  const PointwiseParts &parts;
  Kernel &kernel;
  unsigned next = 0;
};
} // namespace

static bool isInput(const PointwiseParts &parts, const Value *v) {
  return llvm::any_of(parts.inputs, [&](const auto &io) { return io.first == v; });
}

/// The coordinates of \p operand (NumPy-broadcast to a value of rank
/// \p rank) at \p at: 0 on its dims of extent 1.
static Coords broadcastCoords(const Shape &operand, const Coords &at) {
  Coords out(operand.size());
  size_t lead = at.size() - operand.size();
  for (size_t d = 0; d < operand.size(); ++d)
    out[d] = operand[d] == 1 ? "0" : at[lead + d];
  return out;
}

static std::string offsetAt(const Shape &shape, const Coords &at) {
  Shape st = strides(shape);
  std::string out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && at[d] != "0")
      out += (out.empty() ? "" : " + ") + at[d] +
             (st[d] == 1 ? "" : " * " + std::to_string(st[d]) + "LL");
  return out.empty() ? "0" : out;
}

std::string ViewBody::coordinate(const std::string &expr, Block &block) {
  bool simple = llvm::all_of(expr, [](char c) { return std::isalnum(c) || c == '_'; });
  if (simple)
    return expr;
  std::string name = fresh("k");
  block.text += block.indent + "long long " + name + " = " + expr + ";\n";
  return name;
}

std::string ViewBody::valueAt(const Value *v, const Coords &at, Block &block) {
  for (const Block *b = &block; b; b = b->parent) {
    auto it = b->known.find({v, at});
    if (it != b->known.end())
      return it->second;
  }
  std::string expr = computed(v, at, block);
  block.known[{v, at}] = expr;
  return expr;
}

std::string ViewBody::load(const Value *inner, const Coords &at, Block &block) {
  std::string p = addParam(kernel, parts.outerOf(inner), false);
  std::string name = fresh("v");
  block.text += block.indent + computeType(inner->getType().dtype) + " " + name +
                " = cgc_ld(" + p + ", " + offsetAt(staticShape(inner->getType()), at) +
                ");\n";
  return name;
}

/// Reshape splits the dims into runs of equal products on both sides (the
/// finest such split); within a run, the result coordinates' row-major
/// index is the operand's, so a run of one dim on either side needs no
/// division.
Coords ViewBody::reshapedCoords(const Node &n, const Coords &at, Block &block) {
  Shape out = staticShape(n.result()->getType());
  Shape in = staticShape(n.operand(0)->getType());
  Coords coords(in.size(), "0");
  size_t o = 0, i = 0;
  while (o < out.size() || i < in.size()) {
    // The next run: out[o, oEnd) and in[i, iEnd) of one product.
    size_t oEnd = o, iEnd = i;
    int64_t outSize = 1, inSize = 1;
    do {
      if (oEnd < out.size() && (outSize <= inSize || iEnd == in.size()))
        outSize *= out[oEnd++];
      else
        inSize *= in[iEnd++];
    } while ((outSize != inSize || (oEnd < out.size() && out[oEnd] == 1) ||
              (iEnd < in.size() && in[iEnd] == 1)) &&
             (oEnd < out.size() || iEnd < in.size()));
    Shape outRun(out.begin() + o, out.begin() + oEnd);
    Shape inRun(in.begin() + i, in.begin() + iEnd);
    Coords outAt(at.begin() + o, at.begin() + oEnd);
    std::string linear = coordinate(offsetAt(outRun, outAt), block);
    Shape st = strides(inRun);
    bool outer = false; // A dim of the run before d has more than one index.
    for (size_t d = 0; d < inRun.size(); ++d) {
      if (inRun[d] == 1)
        continue;
      std::string c = st[d] == 1 ? linear
                                 : "(" + linear + " / " + std::to_string(st[d]) + "LL)";
      if (outer)
        c = "(" + c + " % " + std::to_string(inRun[d]) + "LL)";
      outer = true;
      coords[i + d] = coordinate(c, block);
    }
    o = oEnd;
    i = iEnd;
  }
  return coords;
}

std::string ViewBody::concatAt(const Node &n, const Coords &at, Block &block) {
  DType dtype = n.result()->getType().dtype;
  unsigned axis = *normalizeAxis(n.intAttr("axis", 0), at.size());
  if (repeatsOneOperand(n)) {
    Coords wrapped = at;
    int64_t extent = staticShape(n.operand(0)->getType())[axis];
    // Over an empty axis no element is read: no modulo by zero, even dead.
    wrapped[axis] = extent == 0 ? std::string("0LL")
                                : coordinate("(" + at[axis] + " % " +
                                                 std::to_string(extent) + "LL)", block);
    return valueAt(n.operand(0), wrapped, block);
  }
  std::string name = fresh("v");
  block.text += block.indent + computeType(dtype) + " " + name + ";\n";
  int64_t begin = 0;
  for (unsigned k = 0; k < n.numOperands(); ++k) {
    int64_t end = begin + staticShape(n.operand(k)->getType())[axis];
    bool last = k + 1 == n.numOperands();
    block.text += block.indent + (k ? "} else " : "") +
                  (last ? std::string("{\n")
                        : "if (" + at[axis] + " < " + std::to_string(end) + "LL) {\n");
    Block inner;
    inner.parent = &block;
    inner.indent = block.indent + "  ";
    Coords shifted = at;
    if (begin)
      shifted[axis] = coordinate("(" + at[axis] + " - " + std::to_string(begin) + "LL)", inner);
    std::string value = valueAt(n.operand(k), shifted, inner);
    block.text += inner.text + inner.indent + name + " = " + value + ";\n";
    begin = end;
  }
  block.text += block.indent + "}\n";
  return name;
}

std::string ViewBody::gatheredAt(const Node &n, const Coords &at, Block &block) {
  const Value *data = n.operand(0), *index = n.operand(1);
  Shape in = staticShape(data->getType()), idx = staticShape(index->getType());
  unsigned axis = n.getOp() == OpKind::Gather
                      ? *normalizeAxis(n.intAttr("axis", 0), in.size())
                      : 0;
  DType dtype = n.result()->getType().dtype;
  if (in[axis] == 0) // Every index out of range: no load, not even clamped.
    return literal(0, dtype);
  Coords idxAt(at.begin() + axis, at.begin() + axis + idx.size());
  std::string raw = valueAt(index, idxAt, block);
  std::string j = fresh("j"), valid = fresh("ok");
  block.text += readIndex(block.indent, j, valid, raw, in[axis]);
  Coords dataAt(at.begin(), at.begin() + axis);
  dataAt.push_back(j);
  dataAt.insert(dataAt.end(), at.begin() + axis + idx.size(), at.end());
  std::string loaded = valueAt(data, dataAt, block);
  std::string name = fresh("v");
  block.text += block.indent + computeType(dtype) + " " + name + " = " + valid + " ? " +
                loaded + " : " + literal(0, dtype) + ";\n";
  return name;
}

std::string ViewBody::computed(const Value *v, const Coords &at, Block &block) {
  if (isInput(parts, v))
    return load(v, at, block);
  const Node &n = *v->getDef();
  DType dtype = v->getType().dtype;
  if (n.info().has(Source)) {
    if (n.getOp() != OpKind::Iota)
      return literal(*splatConstant(v), dtype); // The type rule: splats only.
    unsigned axis = *normalizeAxis(n.intAttr("axis", 0), at.size());
    return at[axis] == "0" ? literal(0, dtype)
                           : "((" + computeType(dtype) + ")" + at[axis] + ")";
  }
  if (n.info().has(Elementwise)) {
    llvm::SmallVector<std::string, 3> args;
    for (Value *operand : n.getOperands())
      args.push_back(valueAt(
          operand, broadcastCoords(staticShape(operand->getType()), at), block));
    std::string name = fresh("v");
    block.text += block.indent + computeType(dtype) + " " + name + " = " +
                  elementwiseExpr(n, args) + ";\n";
    return name;
  }
  const Value *operand = n.operand(0);
  Shape in = staticShape(operand->getType());
  switch (n.getOp()) {
  case OpKind::Transpose: {
    std::vector<int64_t> perm = transposePerm(n, in.size());
    Coords coords(in.size());
    for (size_t k = 0; k < perm.size(); ++k)
      coords[perm[k]] = at[k];
    return valueAt(operand, coords, block);
  }
  case OpKind::Slice: {
    auto [starts, ends, axes, steps] = sliceParams(n);
    Coords coords = at;
    for (size_t k = 0; k < starts.size(); ++k) {
      unsigned axis = *normalizeAxis(axes[k], in.size());
      int64_t start = sliceRange(starts[k], ends[k], steps[k], in[axis]).begin;
      if (start == 0 && steps[k] == 1)
        continue;
      coords[axis] = coordinate("(" + std::to_string(start) + "LL + " + at[axis] +
                                    " * " + std::to_string(steps[k]) + "LL)",
                                block);
    }
    return valueAt(operand, coords, block);
  }
  case OpKind::BroadcastTo:
    return valueAt(operand, broadcastCoords(in, at), block);
  case OpKind::Reshape:
    return valueAt(operand, reshapedCoords(n, at, block), block);
  case OpKind::Concat:
    return concatAt(n, at, block);
  case OpKind::Gather: case OpKind::Embedding:
    return gatheredAt(n, at, block);
  case OpKind::OneHot:
  case OpKind::IndexCopy: case OpKind::IndexAdd: case OpKind::ArgTopK: case OpKind::PadPacked:
  case OpKind::PackPadded:
    break;
#define CGC_MOVEMENT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  // The fusion type rule admits no other op (dropout: not with index moves).
  llvm_unreachable("not a body op of a fusion with index moves");
}

ElementAt cgc::viewElementAt(const PointwiseParts &parts, const Value *v,
                             const std::vector<std::string> &at,
                             const std::string &indent, Kernel &kernel) {
  Block root;
  root.indent = indent;
  ViewBody body(parts, kernel);
  std::string value = body.valueAt(v, at, root);
  return {root.text, value};
}

void cgc::emitViewFusion(const Node &node, Kernel &kernel) {
  PointwiseParts parts = pointwiseParts(node);
  Shape iter = staticShape(parts.outputs[0].second->getType());
  int64_t n = product(iter);
  Block root;
  root.indent = "    ";
  ViewBody body(parts, kernel);
  Coords at;
  for (size_t d = 0; d < iter.size(); ++d)
    at.push_back(iter[d] == 1 ? "0" : "c" + std::to_string(d));
  std::string stores;
  for (const auto &[inner, outer] : parts.outputs)
    stores += "    cgc_st(" + addParam(kernel, outer, true) + ", i, " +
              body.valueAt(inner, at, root) + ");\n";
  const unsigned block = 256;
  kernel.block[0] = block;
  kernel.grid[0] = gridFor(n, block);
  kernel.gridStride = true;
  kernel.body = gridStrideLoop("i", n, block, /*overBx=*/true) +
                coordDecls(iter, "i", "c") + root.text + stores + "  }\n";
}
