//===- CarriedValues.cpp - Adding and removing a while's carried values ----===//
#include "passes/CarriedValues.h"

#include "llvm/ADT/STLExtras.h"

#include <cassert>
#include <string>

using namespace cgc;

bool cgc::passesThrough(const Graph &body, const Value *v) {
  if (v->getDef() || !body.isRegion())
    return false;
  unsigned k = v->getResultIndex();
  return k < body.inputs().size() && body.inputs()[k].value == v &&
         k < body.outputs.size() && body.outputs[k].value == v &&
         llvm::count_if(body.outputs, [&](const GraphOutput &o) { return o.value == v; }) == 1;
}

bool cgc::unread(const Graph &cond, unsigned k) {
  const Value *in = cond.inputs()[k].value;
  return in->uses().empty() && !cond.isOutput(in);
}

bool cgc::isDeadCarried(const Node &loop, unsigned k) {
  assert(loop.getOp() == OpKind::While && "not a while");
  const Graph &cond = loop.region(0), &body = loop.region(1);
  Value *in = body.inputs()[k].value;
  return passesThrough(body, in) && in->uses().empty() && unread(cond, k) &&
         !loop.result(k)->hasUses() && !loop.getParent()->isOutput(loop.result(k));
}

void cgc::eraseCarried(Node &loop, unsigned k) {
  assert(isDeadCarried(loop, k) && "removing a carried value in use");
  Graph &cond = loop.region(0), &body = loop.region(1);
  body.outputs.erase(body.outputs.begin() + k);
  body.eraseInput(k);
  cond.eraseInput(k);
  loop.eraseResult(k);
  loop.eraseOperand(k);
}

/// \p base, or base.1, base.2, ...: the first no value of \p g has.
static std::string freshName(const Graph &g, llvm::StringRef base) {
  std::string name = base.str();
  for (unsigned i = 1; g.lookupValue(name); ++i)
    name = base.str() + "." + std::to_string(i);
  return name;
}

Value *cgc::addPassThroughCarried(Node &loop, Value *init, llvm::StringRef name) {
  assert(loop.getOp() == OpKind::While && "not a while");
  Graph &cond = loop.region(0), &body = loop.region(1);
  const TensorType &type = init->getType();
  loop.addOperand(init);
  cond.addInput(freshName(cond, name), type);
  Value *in = body.addInput(freshName(body, name), type);
  body.outputs.push_back({in->getName(), in, OutputKind::Output, "", {}});
  loop.addResult(freshName(*loop.getParent(), name), type);
  return in;
}
