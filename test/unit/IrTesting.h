//===- IrTesting.h - A small graph the IR unit tests edit ------*- C++ -*-===//
#ifndef CGC_TEST_UNIT_IRTESTING_H
#define CGC_TEST_UNIT_IRTESTING_H

#include "ir/Graph.h"

#include <memory>

namespace cgc {

/// x -> a = relu(x) -> b = add(a, x); output b.
struct SmallGraph {
  Graph g;
  Value *x;
  Node *a, *b;
  SmallGraph() {
    g.name = "small";
    TensorType t(DType::F32, {Dim::fixed(4)});
    x = g.addInput("x", t);
    a = g.append(std::make_unique<Node>(OpKind::Relu, "a", Location()));
    a->addOperand(x);
    a->addResult("a", t);
    b = g.append(std::make_unique<Node>(OpKind::Add, "b", Location()));
    b->addOperand(a->result());
    b->addOperand(x);
    b->addResult("b", t);
    g.outputs.push_back({"b", b->result(), OutputKind::Output, "", {}});
  }
};

} // namespace cgc

#endif
