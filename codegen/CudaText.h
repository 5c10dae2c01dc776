//===- CudaText.h - Pieces of generated CUDA C++ ----------------*- C++ -*-===//
//
// Type names, literals, index arithmetic over static shapes and the kernel
// signature, shared by the emitters. Shapes are baked into the text as
// constants, so every kernel is specialized to its node's types.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_CUDATEXT_H
#define CGC_CODEGEN_CUDATEXT_H

#include "codegen/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cgc {

using Shape = std::vector<int64_t>;

/// The C type stored in memory (float, __half, __nv_bfloat16, int, ...).
std::string storageType(DType dtype);
/// The C type computed in (float for every float dtype).
std::string computeType(DType dtype);
/// \p value as a literal of computeType(\p dtype).
std::string literal(double value, DType dtype);
/// Element \p value of \p dtype as a literal of computeType(\p dtype):
/// integers exactly (an i64 past 2^53 included, INT64_MIN spelled so that
/// it compiles).
std::string literal(Element value, DType dtype);
/// A float literal that round-trips exactly.
std::string floatLiteral(float value);

Shape staticShape(const TensorType &type);
int64_t product(const Shape &shape, size_t from = 0, size_t to = ~size_t(0));
/// Row-major strides.
Shape strides(const Shape &shape);
/// Declares `long long <prefix>0..` = coordinates of linear index \p index.
std::string coordDecls(const Shape &shape, const std::string &index,
                       const std::string &prefix);
/// The linear offset into a tensor of \p operand shape, NumPy-broadcast to
/// \p iter, at the coordinates named `<prefix>k` of \p iter.
std::string broadcastOffset(const Shape &operand, const Shape &iter,
                            const std::string &prefix);

/// Statements reading index \p expr into `long long` \p j for an axis of
/// \p extent elements, as every gather reads one: a negative index
/// wrapped once; `const bool` \p valid says whether it is then in range
/// (out of range reads as 0), and \p j is clamped into range so that the
/// load it addresses never faults (over an empty axis no index is valid:
/// guard the load by \p valid, or emit none).
std::string readIndex(const std::string &indent, const std::string &j,
                      const std::string &valid, const std::string &expr, int64_t extent);

/// The statement that waits for the kernels a kernel depends on
/// (programmatic dependent launch; see codegen/GraphPlan.cpp): where a
/// Kernel::Wait::InBody body places it (KernelText.cpp puts it first in
/// every other kernel).
constexpr const char *kWaitForProducers = "  cgc_wait_for_producers();\n";
/// Adds \p value as a pointer parameter (once) and returns its name.
std::string addParam(Kernel &kernel, const Value *value, bool written);
/// Adds a pointer to a scratch buffer of C type \p type; returns its name.
std::string addScratchParam(Kernel &kernel, const Storage &storage,
                            bool written, const std::string &type);
/// Grid size for \p work items handled \p perBlock at a time.
uint32_t gridFor(int64_t work, int64_t perBlock);
/// A grid-stride loop header over [0, n) with variable \p var; over the
/// block index `bx` of `gx` blocks when \p overBx (a Kernel::gridStride
/// body, which a batch may run), else over blockIdx.x of gridDim.x.
std::string gridStrideLoop(const std::string &var, int64_t n, unsigned block,
                           bool overBx = false);

/// The helper functions every program starts with (codegen/device/*.cuh,
/// embedded at build time): the 16-bit float helpers when \p half or
/// \p bfloat16, the setter kernels of conditional nodes when
/// \p conditionals, the fused attention bodies when \p attention and the
/// tensor-core product's when \p mmaProduct, argtopk's when \p argTopK.
std::string cudaPrelude(bool half, bool bfloat16, bool conditionals,
                        bool attention = false, bool mmaProduct = false,
                        bool argTopK = false);

} // namespace cgc

#endif
