//===- MovementEmitter.cpp - Copies with index arithmetic --------------------===//
//
// One thread per output element: decompose the linear index into output
// coordinates (static strides baked in), compute the source offset for the
// op, load and store (a grid-stride body: kernel batching may merge it).
// Indices read from tensors (gather, embedding) wrap negatives once and
// clamp into range so a bad index never faults. index_copy instead runs one
// thread per source element and writes only the copied slices; index_add
// one block per tile of output rows, which adds the slices indexed there.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"

#include "ir/Initializers.h"
#include "ir/OpAttrs.h"

#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
using namespace cgc;

static std::string offsetOf(const Shape &shape,
                            const std::vector<std::string> &coords) {
  Shape st = strides(shape);
  std::string out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      out += (out.empty() ? "" : " + ") + coords[d] + " * " +
             std::to_string(st[d]) + "LL";
  return out.empty() ? "0" : out;
}

static std::vector<std::string> coordNames(size_t rank, size_t from = 0) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d)
    names.push_back("c" + std::to_string(d + from));
  return names;
}

/// pad_packed / pack_padded: a real element (each listed axis's coordinate
/// below its real extent, read from the device) moves between its padded
/// offset `i` and its offset in the real shape's row-major order; padding
/// is left as it is.
static std::string packedMove(const Node &node, const Shape &shape,
                              const std::vector<std::string> &ps,
                              const std::string &py) {
  std::vector<std::string> real;
  for (int64_t extent : shape)
    real.push_back(std::to_string(extent) + "LL");
  std::string body, inside;
  std::vector<int64_t> axes = node.intsAttr("axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    std::string r = "r" + std::to_string(axes[k]);
    body += "    long long " + r + " = (long long)cgc_ld(" + ps[k + 1] + ", 0);\n";
    real[size_t(axes[k])] = r;
    inside += (k ? " && c" : "c") + std::to_string(axes[k]) + " < " + r;
  }
  std::string packed = "c0";
  for (size_t d = 1; d < shape.size(); ++d)
    packed = "(" + packed + ") * " + real[d] + " + c" + std::to_string(d);
  bool pad = node.getOp() == OpKind::PadPacked;
  return body + "    if (" + inside + ") cgc_st(" + py + ", " + (pad ? "i" : packed) +
         ", cgc_ld(" + ps[0] + ", " + (pad ? packed : "i") + "));\n";
}

/// Whether index_copy's index is known distinct: an iota, or a constant
/// with no position twice once negatives are wrapped (a prefill's cache
/// positions).
static bool distinctIndices(const Node &node, int64_t extent) {
  const Node *def = node.operand(1)->getDef();
  if (node.operand(1)->getType().numElements() <= 1 ||
      (def && def->getOp() == OpKind::Iota))
    return true;
  if (!def || def->getOp() != OpKind::Constant)
    return false;
  const auto *values = std::get_if<std::vector<Number>>(def->attr("value"));
  if (!values || values->size() < 2)
    return false;
  std::vector<int64_t> seen;
  for (const Number &v : *values) {
    int64_t k = elementOf(node.operand(1)->getType().dtype, v).integer();
    seen.push_back(k < 0 ? k + extent : k);
  }
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

/// index_copy, one thread per source element: the result already holds x
/// (its buffer, or a copy lowering put there), so only the slices are
/// written; an out-of-range index writes nothing and, unless the indices
/// are known or promised (unique_indices) distinct, a slice whose index
/// comes again later is skipped (the last wins).
static void emitIndexCopy(const Node &node, Kernel &kernel) {
  Shape x = staticShape(node.operand(0)->getType());
  unsigned axis = *normalizeAxis(node.intAttr("axis", 0), x.size());
  int64_t extent = x[axis];
  int64_t count = node.operand(1)->getType().numElements();
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.size(); ++d)
    inner *= x[d];
  int64_t n = count * product(Shape(x.begin(), x.begin() + axis)) * inner;
  std::string idx = addParam(kernel, node.operand(1), false);
  std::string src = addParam(kernel, node.operand(2), false);
  std::string out = addParam(kernel, node.result(), true);
  std::string e = std::to_string(extent) + "LL", c = std::to_string(count) + "LL",
              in = std::to_string(inner) + "LL";
  auto wrapped = [&](const std::string &name, const std::string &at) {
    return "    long long " + name + " = (long long)cgc_ld(" + idx + ", " + at +
           ");\n    if (" + name + " < 0) " + name + " += " + e + ";\n";
  };
  std::string body = "    long long q = i % " + in + ", j = i / " + in + " % " + c +
                     ", o = i / (" + in + " * " + c + ");\n" + wrapped("k", "j") +
                     "    bool write = k >= 0 && k < " + e + ";\n";
  if (!node.boolAttr("unique_indices", false) &&
      !distinctIndices(node, extent))
    body += "    for (long long jj = j + 1; jj < " + c + " && write; ++jj) {\n" +
            wrapped("kk", "jj") + "      write = kk != k;\n    }\n";
  body += "    if (write) cgc_st(" + out + ", (o * " + e + " + k) * " + in +
          " + q, cgc_ld(" + src + ", i));\n";
  const unsigned block = 256;
  kernel.block[0] = block;
  kernel.grid[0] = gridFor(n, block);
  kernel.gridStride = true;
  kernel.body = gridStrideLoop("i", n, block, /*overBx=*/true) + body + "  }\n";
}

/// Blocks index_add aims for (a few waves on a large GPU).
constexpr int64_t kIndexAddBlocks = 1024;

/// index_add: x (as [outer, extent, inner]) is already in the result, and
/// each block owns a tile of R rows of one outer slice: it reads the
/// indices 256 at a time, keeps the ones in its tile in order (their
/// places from the block's prefix sum, cgc_block_scan), and adds their
/// source slices. A
/// row's inner elements are spread over TQ threads (up to 256), the
/// block's 256 / TQ lanes each taking the rows r with r % lanes == lane,
/// so every output element has one thread, which adds in the order of j:
/// deterministic, each sum rounded as the interpreter rounds it. It reads
/// every index once per tile.
static void emitIndexAdd(const Node &node, Kernel &kernel) {
  Shape x = staticShape(node.operand(0)->getType());
  unsigned axis = *normalizeAxis(node.intAttr("axis", 0), x.size());
  int64_t extent = x[axis], count = node.operand(1)->getType().numElements();
  int64_t outer = product(Shape(x.begin(), x.begin() + axis));
  int64_t inner = product(Shape(x.begin() + axis + 1, x.end()));
  const int64_t block = 256;
  int64_t tq = 1;
  while (tq < inner && tq < block)
    tq *= 2;
  int64_t lanes = block / tq;
  int64_t tilesPerSlice = std::max<int64_t>(1, kIndexAddBlocks / std::max<int64_t>(outer, 1));
  int64_t rows = (extent + tilesPerSlice - 1) / tilesPerSlice;
  rows = std::max(lanes, (rows + lanes - 1) / lanes * lanes);
  int64_t tiles = (extent + rows - 1) / rows, blocks = outer * tiles;
  std::string idx = addParam(kernel, node.operand(1), false);
  std::string src = addParam(kernel, node.operand(2), false);
  std::string out = addParam(kernel, node.result(), true);
  auto n = [](int64_t v) { return std::to_string(v) + "LL"; };
  kernel.body =
      "  __shared__ int cgc_found[256], cgc_row[256];\n"
      "  const int t = threadIdx.x, lane = t / " + std::to_string(tq) + ", q0 = t % " +
      std::to_string(tq) + ";\n"
      "  for (long long b = blockIdx.x; b < " + n(blocks) + "; b += gridDim.x) {\n"
      "    const long long o = b / " + n(tiles) + ", k0 = b % " + n(tiles) + " * " +
      n(rows) + ";\n"
      "    for (long long base = 0; base < " + n(count) + "; base += 256) {\n"
      "      long long k = -1;\n"
      "      if (base + t < " + n(count) + ") {\n"
      "        k = (long long)cgc_ld(" + idx + ", base + t);\n"
      "        if (k < 0) k += " + n(extent) + ";\n"
      "      }\n"
      "      const bool mine = k >= k0 && k < k0 + " + n(rows) + " && k < " + n(extent) +
      ";\n"
      "      int total;\n"
      "      const int at = cgc_block_scan((int)mine, total);\n"
      "      if (mine) {\n"
      "        cgc_found[at] = t;\n"
      "        cgc_row[at] = (int)(k - k0);\n"
      "      }\n"
      "      __syncthreads();\n"
      "      for (int m = 0; m < total; ++m) {\n"
      "        int r = cgc_row[m];\n"
      "        if (r % " + std::to_string(lanes) + " != lane) continue;\n"
      "        long long to = (o * " + n(extent) + " + k0 + r) * " + n(inner) +
      ", from = (o * " + n(count) + " + base + cgc_found[m]) * " + n(inner) + ";\n"
      "        for (long long q = q0; q < " + n(inner) + "; q += " + n(tq) + ")\n"
      "          cgc_st(" + out + ", to + q, cgc_ld(" + out + ", to + q) + cgc_ld(" + src +
      ", from + q));\n"
      "      }\n"
      "      __syncthreads();\n"
      "    }\n"
      "  }\n";
  kernel.block[0] = uint32_t(block);
  kernel.grid[0] = gridFor(blocks, 1);
}

/// The largest k argtopk's kernel takes (its chosen keys and indices fill
/// 32 KiB of shared memory).
constexpr int64_t kMaxArgTopK = 2048;

/// argtopk: codegen/device/topk.cuh's cgc_argtopk, one block a row, over
/// keys of 32 bits (f32, f16, bf16, i32) or 64 (i64) that order as the
/// elements do (inverted for the smallest).
static void emitArgTopK(const Node &node, Kernel &kernel) {
  const Value *x = node.operand(0);
  Shape shape = staticShape(x->getType());
  int64_t n = shape.back(), k = node.intAttr("k", 1);
  int64_t rows = n ? product(shape) / n : 0, slots = 2;
  while (slots < k)
    slots *= 2;
  std::string px = addParam(kernel, x, false);
  std::string out = addParam(kernel, node.result(), true);
  std::string v = "cgc_ld(" + px + ", row * " + std::to_string(n) + "LL + i)";
  std::string key;
  int bits = 32;
  switch (x->getType().dtype) {
  case DType::F32: case DType::F16: case DType::BF16:
    key = "cgc_topk_float_key((float)" + v + ")";
    break;
  case DType::I32:
    key = "(unsigned long long)((unsigned)(int)" + v + " ^ 0x80000000u)";
    break;
  case DType::I64:
    key = "((unsigned long long)(long long)" + v + " ^ 0x8000000000000000ull)";
    bits = 64;
    break;
  case DType::Bool:
    llvm_unreachable("argtopk's type rule refuses bool");
  }
  if (!node.boolAttr("largest", true))
    key = bits == 64 ? "~" + key : "(~" + key + " & 0xFFFFFFFFull)";
  kernel.body = "  cgc_argtopk<" + std::to_string(bits) + ", " + std::to_string(slots) +
                ">(" + std::to_string(rows) + "LL, " + std::to_string(n) + "LL, " +
                std::to_string(k) +
                ", [&](long long row, long long i) -> unsigned long long { return " + key +
                "; }, " + out + ");\n";
  kernel.block[0] = 256;
  kernel.grid[0] = gridFor(rows, 1);
}

bool cgc::argTopKFits(const Node &node) {
  return node.intAttr("k", 1) <= kMaxArgTopK;
}

void cgc::emitMovement(const Node &node, Kernel &kernel) {
  if (node.getOp() == OpKind::IndexCopy)
    return emitIndexCopy(node, kernel);
  if (node.getOp() == OpKind::IndexAdd)
    return emitIndexAdd(node, kernel);
  if (node.getOp() == OpKind::ArgTopK)
    return emitArgTopK(node, kernel);
  const Value *result = node.result();
  Shape out = staticShape(result->getType());
  Shape in = staticShape(node.operand(0)->getType());
  int64_t n = product(out);
  std::vector<std::string> ps;
  for (Value *v : node.getOperands())
    ps.push_back(addParam(kernel, v, false));
  std::string py = addParam(kernel, result, true);
  std::vector<std::string> c = coordNames(out.size());
  std::string body;
  std::string src; // offset into operand 0
  switch (node.getOp()) {
  case OpKind::Reshape:
    src = "i";
    break;
  case OpKind::BroadcastTo:
    src = broadcastOffset(in, out, "c");
    break;
  case OpKind::Transpose: {
    std::vector<int64_t> perm = transposePerm(node, in.size());
    std::vector<std::string> inCoords(in.size());
    for (size_t k = 0; k < perm.size(); ++k)
      inCoords[perm[k]] = c[k];
    src = offsetOf(in, inCoords);
    break;
  }
  case OpKind::Slice: {
    auto [starts, ends, axes, steps] = sliceParams(node);
    std::vector<std::string> inCoords = c;
    for (size_t i = 0; i < starts.size(); ++i) {
      unsigned axis = *normalizeAxis(axes[i], in.size());
      int64_t start = sliceRange(starts[i], ends[i], steps[i], in[axis]).begin;
      inCoords[axis] = "(" + std::to_string(start) + "LL + " + c[axis] + " * " +
                       std::to_string(steps[i]) + "LL)";
    }
    src = offsetOf(in, inCoords);
    break;
  }
  case OpKind::Concat: {
    unsigned axis = *normalizeAxis(node.intAttr("axis", 0), out.size());
    int64_t begin = 0;
    for (unsigned k = 0; k < node.numOperands(); ++k) {
      Shape part = staticShape(node.operand(k)->getType());
      std::vector<std::string> inCoords = c;
      inCoords[axis] = "(" + c[axis] + " - " + std::to_string(begin) + "LL)";
      int64_t end = begin + part[axis];
      body += "    " + std::string(k ? "else " : "") + "if (" + c[axis] + " < " +
              std::to_string(end) + "LL) cgc_st(" + py + ", i, cgc_ld(" + ps[k] +
              ", " + offsetOf(part, inCoords) + "));\n";
      begin = end;
    }
    break;
  }
  case OpKind::Gather: {
    unsigned axis = *normalizeAxis(node.intAttr("axis", 0), in.size());
    Shape idx = staticShape(node.operand(1)->getType());
    std::vector<std::string> idxCoords(c.begin() + axis,
                                       c.begin() + axis + idx.size());
    body += readIndex("    ", "j", "valid",
                      "cgc_ld(" + ps[1] + ", " + offsetOf(idx, idxCoords) + ")", in[axis]);
    std::vector<std::string> inCoords(c.begin(), c.begin() + axis);
    inCoords.push_back("j");
    inCoords.insert(inCoords.end(), c.begin() + axis + idx.size(), c.end());
    src = offsetOf(in, inCoords);
    break;
  }
  case OpKind::Embedding: {
    int64_t dim = in[1];
    body += readIndex("    ", "j", "valid",
                      "cgc_ld(" + ps[1] + ", i / " + std::to_string(dim) + "LL)", in[0]);
    src = "j * " + std::to_string(dim) + "LL + i % " + std::to_string(dim) + "LL";
    break;
  }
  case OpKind::OneHot: {
    int64_t classes = out.back();
    DType dtype = result->getType().dtype;
    body += "    long long v = (long long)cgc_ld(" + ps[0] + ", i / " +
            std::to_string(classes) + "LL);\n    cgc_st(" + py + ", i, v == i % " +
            std::to_string(classes) + "LL ? " + literal(1, dtype) + " : " +
            literal(0, dtype) + ");\n";
    break;
  }
  case OpKind::PadPacked: case OpKind::PackPadded:
    body += packedMove(node, out, ps, py);
    break;
  case OpKind::IndexCopy:
    llvm_unreachable("emitIndexCopy writes index_copy's slices");
  case OpKind::IndexAdd:
    llvm_unreachable("emitIndexAdd adds index_add's slices");
  case OpKind::ArgTopK:
    llvm_unreachable("emitArgTopK ranks argtopk's rows");
#define CGC_MOVEMENT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a movement op");
  }
  bool indexed = node.getOp() == OpKind::Gather || node.getOp() == OpKind::Embedding;
  if (!src.empty() && indexed)
    body += "    cgc_st(" + py + ", i, valid ? cgc_ld(" + ps[0] + ", " + src + ") : " +
            literal(0, result->getType().dtype) + ");\n";
  else if (!src.empty())
    body += "    cgc_st(" + py + ", i, cgc_ld(" + ps[0] + ", " + src + "));\n";
  const unsigned block = 256;
  kernel.block[0] = block;
  kernel.grid[0] = gridFor(n, block);
  kernel.gridStride = true;
  kernel.body = gridStrideLoop("i", n, block, /*overBx=*/true) +
                coordDecls(out, "i", "c") + body + "  }\n";
}
