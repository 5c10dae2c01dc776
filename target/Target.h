//===- Target.h - The GPU a program is scheduled for ------------*- C++ -*-===//
//
// What the scheduling rules may know of the target: its architecture, its
// multiprocessor count (grid sizes only, never results: a schedule gives
// the same bits on every GPU) and who decides how products run. The
// compile driver makes one Target per compile; the schedule pass and the
// fusion passes' "can this be scheduled?" queries take it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_TARGET_H
#define CGC_TARGET_TARGET_H

#include <cstdint>
#include <string>

namespace cgc {

/// Who decides how products run: the cost rule (target/ProductRule.h), or
/// the user asking for cuBLASLt everywhere it can run
/// (`cgc --library-products`), or for the tiled kernel (`cgc
/// --tiled-products`) or the tensor-core kernel (`cgc --mma-products`)
/// everywhere it can run; the last three are how the rule's thresholds
/// are measured (bench/product_rule.py).
enum class ProductPolicy {
  CostRule,
  LibraryOnly,
  TiledWherePossible,
  MmaWherePossible
};
/// Whether expand-attention keeps the attention nodes the rule gives the
/// fused kernel (target/AttentionRule.h: where it measured faster than the
/// products and softmax), or writes every one out (autodiff has no rule
/// for the op; `--expand-attention` measures the difference).
enum class AttentionPolicy { FusedWhereFaster, Expand };
/// Whether expand-convolution keeps the convolutions cuDNN can run
/// (target/ConvolutionRule.h), or writes every one out as window gathers
/// and products (`--expand-convolution` measures the difference).
enum class ConvolutionPolicy { LibraryWherePossible, Expand };

struct Target {
  std::string arch = "sm_90";
  unsigned multiprocessors = 132;
  ProductPolicy products = ProductPolicy::CostRule;
  AttentionPolicy attention = AttentionPolicy::FusedWhereFaster;
  ConvolutionPolicy convolution = ConvolutionPolicy::LibraryWherePossible;
};

/// The compute capability of "sm_XY" as XY (90 for sm_90).
unsigned computeCapabilityOf(const std::string &arch);
/// The multiprocessor count of the largest part of architecture \p arch
/// ("sm_90"; an unlisted one takes the closest listed one below it).
unsigned multiprocessorsOf(const std::string &arch);
/// The target of \p arch under \p products.
Target targetFor(const std::string &arch,
                 ProductPolicy products = ProductPolicy::CostRule,
                 AttentionPolicy attention = AttentionPolicy::FusedWhereFaster,
                 ConvolutionPolicy convolution =
                     ConvolutionPolicy::LibraryWherePossible);

/// Resident threads per multiprocessor (sm_70 to sm_120: 2048, or 1536 on
/// consumer parts, where a grid of this many is still one short wave).
constexpr unsigned kThreadsPerMultiprocessor = 2048;
/// The grid of a grid-stride kernel that needs \p blocks blocks: at most
/// one full wave of the target's \p multiprocessors.
uint32_t residentGrid(int64_t blocks, unsigned threadsPerBlock,
                      unsigned multiprocessors);

} // namespace cgc

#endif
