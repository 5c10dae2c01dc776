//===- GraphReader.h - Builds a graph from its parsed JSON -------*- C++ -*-===//
//
// Private to the reader: JsonReader.cpp (header, dims, weights, files) and
// SignatureReader.cpp (inputs and outputs) each define part of it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_GRAPHREADER_H
#define CGC_IR_GRAPHREADER_H

#include "ir/JsonReader.h"
#include "ir/ReaderContext.h"

namespace cgc {

class GraphReader {
public:
  GraphReader(ReaderContext &ctx, llvm::StringRef baseDir,
              const ReadOptions &options)
      : ctx(ctx), baseDir(baseDir), options(options) {}

  std::unique_ptr<Graph> read(const Json &top);

private:
  bool readHeader(const Json &top, Graph &g);
  bool readDims(const Json &j, Graph &g);
  bool readDim(const Json &j, const std::string &p, Graph &g);
  bool readInputs(const Json &j, Graph &g);
  bool readInput(const Json &j, const std::string &p, Graph &g);
  bool readInitializer(const Json &j, const std::string &p,
                       const std::string &what, Initializer &init);
  bool readWeightPermutation(const Json &j, const std::string &p,
                             const std::string &what, unsigned rank,
                             Initializer &init);
  bool readScope(const Json &j, const std::string &p, const std::string &what,
                 InputKind kind, const Initializer &init, bool &perContext);
  bool readOutputs(const Json &j, Graph &g, const std::string &at = "");
  bool readEntries(const Json &top, Graph &main);
  bool matchSignature(const Graph &entry, const Graph &main, const std::string &at);
  bool readSourceNames(const Json &j, Graph &g);
  bool readOutput(const Json &j, const std::string &p, Graph &g);
  bool checkWeights(Graph &g);

  ReaderContext &ctx;
  std::string baseDir;
  const ReadOptions &options;
};

} // namespace cgc

#endif
