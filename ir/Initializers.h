//===- Initializers.h - Parameter initial values and dtype rounding -*- C++ -*-===//
//
// The one definition of how a persistent input gets its initial value from
// its `init` (normal, uniform, zeros, ones) or from the graph's weights file,
// and of how a double rounds to each dtype. Shared by the reference
// interpreter and by codegen when it materializes weights; both must agree
// bit for bit.
//
//   normal:  u1 = philoxUniform(seed, 0, 2i), u2 = philoxUniform(seed, 0, 2i+1),
//            z = sqrt(-2 ln(1 - u1)) * cos(2 pi u2), value = mean + std * z
//   uniform: low + (high - low) * philoxUniform(seed, 0, i)
//   zeros / ones
// Every value is computed in double, then rounded to the input's dtype.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_INITIALIZERS_H
#define CGC_IR_INITIALIZERS_H

#include "ir/Element.h"
#include "ir/Graph.h"
#include "format/Safetensors.h"

#include <string>
#include <vector>

namespace cgc {

/// Rounds \p x to \p dtype: f32 round-to-nearest float; f16/bf16 round to
/// nearest even of that format (overflow gives inf); integers as
/// saturateToInt; bool is x != 0.
double roundToDType(DType dtype, double x);

/// int64 of a double: truncates toward zero, clamps to [INT64_MIN,
/// INT64_MAX] (2^63, the double nearest INT64_MAX, gives INT64_MAX), NaN
/// gives 0. Never undefined, unlike a C++ conversion.
int64_t toInt64(double x);

/// The one conversion of a float value to an integer dtype (`cast`, and
/// every double that becomes an integer element): truncates toward zero,
/// clamps to the target integer range, NaN gives 0; bool is x != 0.
double saturateToInt(DType dtype, double x);

/// The element of \p dtype for the real value \p x: floats round
/// (roundToDType), integers and bool convert as saturateToInt.
Element elementOf(DType dtype, double x);
/// The element of \p dtype for the integer \p v: i32 wraps modulo 2^32
/// (the low 32 bits, as ONNX and PyTorch cast), i64 keeps it, bool is
/// v != 0; a float dtype gets v rounded to f32 first, then to the dtype
/// (as a kernel converts through its float compute type).
Element wrapToDType(DType dtype, int64_t v);
/// Whether number \p n is a value of \p dtype: any number for a float
/// dtype (it rounds); for i32/i64 an integer within the dtype's range, or
/// a finite real whose truncation toward zero is; for bool the integers 0
/// and 1, or any real (x != 0, as `cast`).
bool numberFits(DType dtype, Number n);
/// The element of \p dtype for a `constant`'s or `fill`'s number \p n
/// (exact for an integer that fits: numberFits): an integer converts as
/// wrapToDType, a real as elementOf.
Element elementOf(DType dtype, Number n);
/// The number that spells element \p e of \p dtype exactly (an integer
/// for integer dtypes and bool, a real for float dtypes).
Number numberOf(DType dtype, Element e);
/// `cast` of element \p e from \p from to \p to: a float converts as
/// elementOf, an integer or bool as wrapToDType.
Element castElement(DType from, DType to, Element e);
/// The value of element \p e of \p dtype as a double (an integer past 2^53
/// rounds: for float arithmetic and printing only).
double realOf(DType dtype, Element e);

/// The elements of `constant` node \p constant (its `value` attribute,
/// a splat expanded to its static shape), converted to its dtype.
std::vector<Element> constantElements(const Node &constant);

/// Element values (already rounded to \p dtype) of a normal, uniform, zeros
/// or ones initializer for \p count elements. Not for Weights.
std::vector<Element> initializerValues(const Initializer &init, DType dtype,
                                      int64_t count);

/// Decodes a safetensors tensor's bytes into elements of its dtype
/// (exactly: integers as integers).
bool decodeTensorData(const format::TensorData &tensor,
                      std::vector<Element> &out, std::string &error);
/// Encodes elements of \p dtype (floats rounded to \p dtype first) as
/// safetensors bytes.
format::TensorData encodeTensorData(DType dtype,
                                    const std::vector<int64_t> &shape,
                                    const std::vector<Element> &values);

/// The initial value of persistent input \p in of \p graph (any Source but
/// None). Weights are read from graph.weightsPath; \p cache (optional) keeps
/// the parsed file between calls.
bool initialValue(const Graph &graph, const GraphInput &in,
                  std::vector<Element> &out, std::string &error,
                  format::TensorMap *cache = nullptr);
/// The bytes of that initial value in its dtype's little-endian layout,
/// as the artifact stores them: a weights tensor of the input's dtype
/// (not bool, which is normalized to 0 and 1) copied as it is, any other
/// through initialValue.
bool initialBytes(const Graph &graph, const GraphInput &in,
                  std::vector<uint8_t> &out, std::string &error,
                  format::TensorMap *cache = nullptr);

} // namespace cgc

#endif
