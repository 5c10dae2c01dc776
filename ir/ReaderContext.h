//===- ReaderContext.h - Shared state of the JSON reader --------*- C++ -*-===//
//
// Internal to ir/: the JSON reader is split into JsonReader.cpp (files,
// graphs, signatures), NodeReader.cpp (nodes, attributes, ordering) and
// OptimizerReader.cpp (a training model's optimizer); all report through
// this context.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_READERCONTEXT_H
#define CGC_IR_READERCONTEXT_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "ir/JsonScanner.h"

#include <nlohmann/json.hpp>
#include <string>

namespace cgc {

using Json = nlohmann::json;

struct ReaderContext;
/// The top-level "optimizer" object (OptimizerReader.cpp).
bool readOptimizer(ReaderContext &ctx, const Json &j, OptimizerDecl &out);

struct ReaderContext {
  DiagnosticEngine &diag;
  uint32_t bufferId;
  JsonOffsets offsets;

  Location at(const std::string &pointer) const {
    return {bufferId, offsets.value(pointer)};
  }
  Location keyAt(const std::string &pointer) const {
    return {bufferId, offsets.key(pointer)};
  }
  void error(const std::string &pointer, const llvm::Twine &message) {
    diag.error(at(pointer), message);
  }

  /// Reports fields of \p obj not in \p allowed (at their keys) and
  /// required fields that are missing; \p what prefixes the messages.
  bool checkFields(const Json &obj, const std::string &pointer,
                   llvm::ArrayRef<llvm::StringRef> allowed,
                   llvm::ArrayRef<llvm::StringRef> required,
                   const std::string &what);
  bool expectObject(const Json &j, const std::string &pointer,
                    const std::string &what);
  bool readName(const Json &j, const std::string &pointer,
                const std::string &what, std::string &out);
  bool readDType(const Json &j, const std::string &pointer,
                 const std::string &what, DType &out);
  /// A shape: integers >= 0 and names of symbolic dims.
  bool readShape(const Json &j, const std::string &pointer,
                 const std::string &what, const DimTable &dims,
                 std::vector<Dim> &out);
  bool readTensorType(const Json &j, const std::string &pointer,
                      const std::string &what, const DimTable &dims,
                      TensorType &out);
};

/// Printable form of a name that may hold control characters.
std::string quoteName(llvm::StringRef name);

/// Reads `nodes` of \p graph (whose inputs are already read), in
/// dependency order, typing each node; false after reporting errors.
bool readNodes(ReaderContext &ctx, const Json &nodes,
               const std::string &pointer, Graph &graph);

/// Reads a region: `{"inputs": [...], "nodes": [...], "outputs": [...]}`.
bool readRegion(ReaderContext &ctx, const Json &j, const std::string &pointer,
                Graph &region);

} // namespace cgc

#endif
