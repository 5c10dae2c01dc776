//===- RandomInputs.cpp - Random inputs from each consumer's valid domain ----===//
//
// Used by `cgc-opt --check-equivalence`. Domains come from the direct uses
// of each input (followed into `if`/`while` regions): positive values for
// log/sqrt/rsqrt and pow bases, divisors away from zero, indices within the
// indexed extent, 0/1 for bool, [seed, offset] pairs for RNG operands.
// Numbers come from the Philox stream, so the inputs are the same on every
// platform for a given seed.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Interpreter.h"

#include "ir/interpreter/Kernels.h"
#include "ir/Philox.h"

#include <set>

using namespace cgc;
using namespace cgc::interp;

namespace {
struct Domain {
  bool positive = false;
  bool awayFromZero = false;
  bool rng = false;
  int64_t indexBound = -1; ///< Indices in [0, indexBound).
};

class Generator {
public:
  Generator(uint64_t seed) : seed(seed) {}
  double uniform() { return philoxUniform(seed, 0xC6C0ull, counter++); }
  int64_t integer(int64_t lo, int64_t hi) { // inclusive
    return lo + int64_t(uniform() * double(hi - lo + 1));
  }

private:
  uint64_t seed, counter = 0;
};
} // namespace

static void collect(const Value *v, const DimEnv &env, Domain &dom,
                    std::set<const Value *> &seen) {
  if (!seen.insert(v).second)
    return;
  for (const Use &use : v->uses()) {
    const Node &n = *use.user;
    unsigned k = use.operandIndex;
    auto extent = [&](const Value *of, unsigned axis) {
      return env.resolve(of->getType().dims[axis]);
    };
    switch (n.getOp()) {
    case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
      dom.positive = true;
      break;
    case OpKind::Pow:
      dom.positive |= k == 0;
      break;
    case OpKind::Div:
      dom.awayFromZero |= k == 1;
      break;
    case OpKind::Gather:
      if (k == 1) {
        auto axis = normalizeAxis(n.intAttr("axis", 0),
                                  n.operand(0)->getType().rank());
        dom.indexBound = extent(n.operand(0), *axis);
      }
      break;
    case OpKind::Embedding:
      if (k == 1)
        dom.indexBound = extent(n.operand(0), 0);
      break;
    case OpKind::OneHot:
      dom.indexBound = n.intAttr("num_classes", 1);
      break;
    case OpKind::CrossEntropy:
      if (k == 1)
        dom.indexBound = extent(n.operand(0), 1);
      break;
    case OpKind::Dropout:
      dom.rng |= k == 1;
      break;
    case OpKind::If:
      if (k > 0)
        for (unsigned r = 0; r < 2; ++r)
          collect(n.region(r).inputs()[k - 1].value, env, dom, seen);
      break;
    case OpKind::While:
      for (unsigned r = 0; r < 2; ++r)
        collect(n.region(r).inputs()[k].value, env, dom, seen);
      break;
    default:
      break;
    }
  }
}

std::map<std::string, Tensor> interp::randomInputs(const Graph &graph,
                                                   uint64_t seed) {
  Generator gen(seed);
  DimEnv env(graph.dims());
  // Sizes for the declared symbolic dims first (kept small).
  for (unsigned s = 0; s < graph.dims().size(); ++s) {
    const SymbolicDim &d = graph.dims().get(s);
    if (d.dataDependent)
      continue;
    int64_t hi = std::min(d.max, std::max<int64_t>(d.min, 16));
    int64_t size = gen.integer(d.min, hi);
    env.bind({Dim::symbol(s)}, {size}, "dim");
  }
  std::map<std::string, Tensor> inputs;
  for (const GraphInput &in : graph.inputs()) {
    if (isPersistent(in.kind) && in.init.source != Initializer::Source::None)
      continue;
    const TensorType &type = in.value->getType();
    Tensor t(type.dtype, env.resolve(type.dims));
    Domain dom;
    std::set<const Value *> seen;
    collect(in.value, env, dom, seen);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v;
      if (dom.rng)
        v = double(gen.integer(0, 1 << 20));
      else if (type.dtype == DType::Bool)
        v = gen.uniform() < 0.5 ? 0 : 1;
      else if (dom.indexBound >= 0)
        v = double(gen.integer(0, std::max<int64_t>(dom.indexBound - 1, 0)));
      else if (isInteger(type.dtype))
        v = double(gen.integer(dom.positive ? 1 : -8, 8));
      else if (dom.positive)
        v = 0.1 + 2.9 * gen.uniform();
      else if (dom.awayFromZero)
        v = (0.5 + 1.5 * gen.uniform()) * (gen.uniform() < 0.5 ? -1 : 1);
      else
        v = -2.0 + 4.0 * gen.uniform();
      t.data[i] = roundToDType(type.dtype, v);
    }
    inputs[in.value->getName()] = std::move(t);
  }
  return inputs;
}
