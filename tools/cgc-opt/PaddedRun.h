//===- PaddedRun.h - Running a padded graph on real-sized inputs -*- C++ -*-===//
#ifndef CGC_TOOLS_CGC_OPT_PADDEDRUN_H
#define CGC_TOOLS_CGC_OPT_PADDEDRUN_H

#include "ir/Graph.h"
#include "ir/interpreter/Tensor.h"

#include <map>
#include <string>

namespace cgc {

/// Whether \p g has `dim_size` inputs (pad-dynamic-shapes ran on it).
bool isPaddedGraph(const Graph &g);

/// The inputs of padded graph \p after for the real-sized inputs \p real of
/// \p before: each symbolic dim at its bucket, padding poisoned (integers
/// out of range in even trials, in range in odd ones), the real extents
/// in the `dim.<D>` inputs. \p sizes receives, per dim name, its real
/// extent and bucket.
bool paddedInputs(const Graph &before, const Graph &after,
                  const std::map<std::string, interp::Tensor> &real,
                  std::map<std::string, interp::Tensor> &padded,
                  std::map<std::string, std::pair<int64_t, int64_t>> &sizes,
                  unsigned trial, std::string &error);

/// The front \p shape of \p padded along every axis.
interp::Tensor realPart(const interp::Tensor &padded,
                        const interp::Shape &shape, bool packed);

} // namespace cgc

#endif
