//===- Printer.h - Text and JSON forms of a graph ---------------*- C++ -*-===//
//
// printGraph writes the deterministic MLIR-like text form, one op per line,
// for humans and FileCheck. writeGraphJson writes the JSON IR back; reading
// that output and writing it again gives the same bytes.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_PRINTER_H
#define CGC_IR_PRINTER_H

#include "ir/Graph.h"

#include "llvm/Support/raw_ostream.h"
#include <string>

namespace cgc {

void printGraph(const Graph &graph, llvm::raw_ostream &os);
std::string writeGraphJson(const Graph &graph);
/// Shortest text that reads back as the same double.
std::string formatDouble(double value);
/// `{axes = [1], keepdim = true}` (empty when there are no attributes).
std::string formatAttrs(const Node &node);

} // namespace cgc

#endif
