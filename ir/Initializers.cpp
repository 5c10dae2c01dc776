//===- Initializers.cpp - Parameter initial values and dtype rounding --------===//
#include "ir/Initializers.h"

#include "format/Permutation.h"

#include "ir/Philox.h"

#include "llvm/Support/ErrorHandling.h"
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

using namespace cgc;

int64_t cgc::toInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775808.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return int64_t(v);
}

/// Rounds to a binary float format with \p mantissaBits stored mantissa
/// bits, smallest normal exponent \p minExp and largest finite \p maxFinite,
/// ties to even.
static double roundBinary(double x, int mantissaBits, int minExp,
                          double minNormal, double maxFinite) {
  if (!std::isfinite(x) || x == 0)
    return x;
  double r;
  if (std::fabs(x) >= minNormal) {
    // A normal result: round the double's mantissa bits in place (a carry
    // into the exponent is the correct rounding up).
    uint64_t bits;
    std::memcpy(&bits, &x, 8);
    unsigned drop = 52 - unsigned(mantissaBits);
    bits += (uint64_t(1) << (drop - 1)) - 1 + ((bits >> drop) & 1);
    bits &= ~((uint64_t(1) << drop) - 1);
    std::memcpy(&r, &bits, 8);
  } else {
    double ulp = std::ldexp(1.0, minExp - mantissaBits);
    r = std::nearbyint(x / ulp) * ulp; // ties to even (default mode)
  }
  if (std::fabs(r) > maxFinite)
    return std::copysign(INFINITY, x);
  return r;
}

double cgc::saturateToInt(DType dtype, double x) {
  if (dtype == DType::Bool)
    return x != 0 ? 1 : 0;
  if (std::isnan(x))
    return 0;
  double lo = dtype == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
  double hi = dtype == DType::I32 ? 2147483647.0 : 9223372036854775807.0;
  x = std::trunc(x);
  if (x <= lo)
    return lo;
  if (x >= hi)
    return hi;
  return x;
}

double cgc::roundToDType(DType dtype, double x) {
  switch (dtype) {
  case DType::F32:
    return double(float(x));
  case DType::F16:
    return roundBinary(x, 10, -14, 0x1p-14, 65504.0);
  case DType::BF16:
    return roundBinary(x, 7, -126, 0x1p-126, 3.3895313892515355e38);
  case DType::I32: case DType::I64: case DType::Bool:
    return saturateToInt(dtype, x);
  }
  llvm_unreachable("invalid DType");
}

Element cgc::elementOf(DType dtype, double x) {
  if (isFloat(dtype))
    return Element::ofReal(roundToDType(dtype, x));
  return Element::ofInt(toInt64(saturateToInt(dtype, x)));
}

Element cgc::wrapToDType(DType dtype, int64_t v) {
  switch (dtype) {
  case DType::F32: case DType::F16: case DType::BF16:
    return Element::ofReal(roundToDType(dtype, double(float(v))));
  case DType::I32:
    return Element::ofInt(int32_t(uint32_t(uint64_t(v))));
  case DType::I64:
    return Element::ofInt(v);
  case DType::Bool:
    return Element::ofInt(v != 0);
  }
  llvm_unreachable("invalid DType");
}

bool cgc::numberFits(DType dtype, Number n) {
  if (isFloat(dtype))
    return true;
  int64_t lo = dtype == DType::Bool ? 0
               : dtype == DType::I32 ? INT32_MIN
                                     : INT64_MIN;
  int64_t hi = dtype == DType::Bool ? 1
               : dtype == DType::I32 ? INT32_MAX
                                     : INT64_MAX;
  if (n.isInt())
    return lo <= n.integer() && n.integer() <= hi;
  // A real converts as `cast` does: bool is x != 0; an integer dtype
  // truncates toward zero, which must land in [lo, hi] (2^63, the double
  // above INT64_MAX, is out): NaN, infinities and the rest never saturate.
  if (dtype == DType::Bool)
    return true;
  double x = std::trunc(n.real());
  return std::isfinite(x) && x >= double(lo) && x < 0x1p63 &&
         (dtype == DType::I64 || x <= double(hi));
}

Element cgc::elementOf(DType dtype, Number n) {
  return n.isInt() ? wrapToDType(dtype, n.integer())
                   : elementOf(dtype, n.real());
}

Number cgc::numberOf(DType dtype, Element e) {
  return isFloat(dtype) ? Number::ofReal(e.real()) : Number::ofInt(e.integer());
}

std::vector<Element> cgc::constantElements(const Node &constant) {
  DType dtype = std::get<DType>(*constant.attr("dtype"));
  const auto &values = std::get<std::vector<Number>>(*constant.attr("value"));
  size_t count = size_t(constant.result()->getType().numElements());
  std::vector<Element> out(values.size() == 1 ? count : values.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = elementOf(dtype, values.size() == 1 ? values[0] : values[i]);
  return out;
}

Element cgc::castElement(DType from, DType to, Element e) {
  return isFloat(from) ? elementOf(to, e.real()) : wrapToDType(to, e.integer());
}

double cgc::realOf(DType dtype, Element e) {
  return isFloat(dtype) ? e.real() : double(e.integer());
}

/// Values [begin, end) of \p init into \p out.
static void initializerRange(const Initializer &init, DType dtype,
                             int64_t begin, int64_t end, Element *out) {
  using S = Initializer::Source;
  // Element i reads words 2i and 2i+1 (normal) or word i (uniform) of the
  // stream; each Philox block of four words is drawn once.
  PhiloxBlock words{};
  uint64_t drawn = ~uint64_t(0);
  auto word = [&](uint64_t index) {
    if (index / 4 != drawn)
      words = philoxBlock(init.seed, 0, drawn = index / 4);
    return words[index % 4];
  };
  for (int64_t i = begin; i < end; ++i) {
    double v = 0;
    switch (init.source) {
    case S::Normal: {
      double u1 = uniformOf(word(2 * uint64_t(i)));
      double u2 = uniformOf(word(2 * uint64_t(i) + 1));
      double z = std::sqrt(-2.0 * std::log(1.0 - u1)) *
                 std::cos(2.0 * M_PI * u2);
      v = init.a + init.b * z;
      break;
    }
    case S::Uniform:
      v = init.a + (init.b - init.a) * double(uniformOf(word(uint64_t(i))));
      break;
    case S::Ones:
      v = 1;
      break;
    case S::Constant:
      v = init.a;
      break;
    case S::None: case S::Zeros:
      v = 0;
      break;
    case S::Weights:
      llvm_unreachable("weights come from the weights file");
    }
    out[i] = elementOf(dtype, v);
  }
}

std::vector<Element> cgc::initializerValues(const Initializer &init,
                                            DType dtype, int64_t count) {
  std::vector<Element> out(count);
  // Large parameters (a 8192x8192 normal: 64M values) fill in parallel.
  constexpr int64_t kPerThread = 1 << 20;
  unsigned threads = unsigned(std::min<int64_t>(
      std::max(1u, std::thread::hardware_concurrency()),
      (count + kPerThread - 1) / kPerThread));
  if (threads <= 1) {
    initializerRange(init, dtype, 0, count, out.data());
    return out;
  }
  std::vector<std::thread> workers;
  int64_t per = (count + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      initializerRange(init, dtype, std::min(count, t * per),
                       std::min(count, (t + 1) * per), out.data());
    });
  for (std::thread &w : workers)
    w.join();
  return out;
}

static double halfBitsToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = mant ? NAN : INFINITY;
  else if (exp == 0)
    v = std::ldexp(double(mant), -24);
  else
    v = std::ldexp(double(mant + 1024), exp - 25);
  return sign ? -v : v;
}

static uint16_t doubleToHalfBits(double x) {
  x = roundToDType(DType::F16, x);
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (std::isnan(x))
    return 0x7e00;
  if (std::isinf(a))
    return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14))
    return sign | uint16_t(a * std::ldexp(1.0, 24));
  int e = std::ilogb(a);
  uint16_t mant = uint16_t(a * std::ldexp(1.0, 10 - e) - 1024);
  return sign | uint16_t((e + 15) << 10) | mant;
}

/// One element of \p dtype at \p p, in the little-endian storage order.
static Element decodeElement(DType dtype, const uint8_t *p) {
  switch (dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return Element::ofReal(f);
  }
  case DType::F16:
    return Element::ofReal(halfBitsToDouble(uint16_t(p[0] | (p[1] << 8))));
  case DType::BF16: {
    uint32_t bits = uint32_t(p[0] | (p[1] << 8)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return Element::ofReal(f);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return Element::ofInt(v);
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return Element::ofInt(v);
  }
  case DType::Bool:
    return Element::ofInt(p[0] != 0);
  }
  llvm_unreachable("invalid DType");
}

bool cgc::decodeTensorData(const format::TensorData &t,
                           std::vector<Element> &out, std::string &error) {
  auto dtype = parseDType(format::fromSafetensorsDtype(t.dtype));
  if (!dtype) {
    error = "unsupported dtype '" + t.dtype + "'";
    return false;
  }
  size_t size = dtypeSize(*dtype);
  size_t n = t.bytes.size() / size;
  out.resize(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = decodeElement(*dtype, t.bytes.data() + i * size);
  return true;
}

format::TensorData cgc::encodeTensorData(DType dtype,
                                         const std::vector<int64_t> &shape,
                                         const std::vector<Element> &values) {
  format::TensorData t;
  t.dtype = format::toSafetensorsDtype(dtypeName(dtype).str());
  t.shape = shape;
  t.bytes.resize(values.size() * dtypeSize(dtype));
  uint8_t *p = t.bytes.data();
  for (Element e : values) {
    // Floats round (a double may hold a value between two of the dtype's);
    // integers are stored as they are (of the dtype already).
    double v = isFloat(dtype) ? roundToDType(dtype, e.real()) : 0;
    switch (dtype) {
    case DType::F32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::F16: {
      uint16_t h = doubleToHalfBits(v);
      p[0] = uint8_t(h), p[1] = uint8_t(h >> 8);
      break;
    }
    case DType::BF16: {
      float f = float(v); // exact: v is already a bf16 value
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t h = std::isnan(v) ? 0x7fc0 : uint16_t(bits >> 16);
      p[0] = uint8_t(h), p[1] = uint8_t(h >> 8);
      break;
    }
    case DType::I32: {
      int32_t x = int32_t(uint32_t(uint64_t(e.integer())));
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::I64: {
      int64_t x = e.integer();
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::Bool:
      p[0] = e.integer() != 0;
      break;
    }
    p += dtypeSize(dtype);
  }
  return t;
}

/// The tensor \p in reads from its graph's weights file (parsed into
/// \p tensors once), or null after setting \p error.
static const format::TensorData *weightsTensor(const Graph &graph,
                                               const GraphInput &in,
                                               format::TensorMap &tensors,
                                               std::string &error) {
  if (tensors.empty() &&
      !format::readSafetensors(graph.root().weightsPath, tensors, error)) {
    error = "cannot read weights file '" + graph.root().weightsFile +
            "': " + error;
    return nullptr;
  }
  auto it = tensors.find(in.init.tensor);
  if (it == tensors.end()) {
    error = "tensor '" + in.init.tensor + "' is not in the weights file";
    return nullptr;
  }
  return &it->second;
}

static std::vector<int64_t> staticExtents(const TensorType &type) {
  std::vector<int64_t> extents;
  for (Dim d : type.dims)
    extents.push_back(d.extent());
  return extents;
}

bool cgc::initialValue(const Graph &graph, const GraphInput &in,
                       std::vector<Element> &out, std::string &error,
                       format::TensorMap *cache) {
  const TensorType &type = in.value->getType();
  if (!type.isStatic()) {
    error = "persistent input '" + in.value->getName() + "' is not static";
    return false;
  }
  if (in.init.source != Initializer::Source::Weights) {
    out = initializerValues(in.init, type.dtype, type.numElements());
    return true;
  }
  format::TensorMap local;
  const format::TensorData *data =
      weightsTensor(graph, in, cache ? *cache : local, error);
  if (!data || !decodeTensorData(*data, out, error))
    return false;
  if (int64_t(out.size()) != type.numElements()) {
    error = "tensor '" + in.init.tensor + "' has the wrong element count";
    return false;
  }
  auto stored = parseDType(format::fromSafetensorsDtype(data->dtype));
  for (Element &e : out)
    e = castElement(*stored, type.dtype, e);
  if (!in.init.permutation.empty()) {
    std::vector<Element> held(out.size());
    format::forEachPermuted(staticExtents(type), in.init.permutation,
                            [&](int64_t to, int64_t from) { held[to] = out[from]; });
    out = std::move(held);
  }
  return true;
}

bool cgc::initialBytes(const Graph &graph, const GraphInput &in,
                       std::vector<uint8_t> &out, std::string &error,
                       format::TensorMap *cache) {
  const TensorType &type = in.value->getType();
  if (in.init.source == Initializer::Source::Weights && type.isStatic() &&
      type.dtype != DType::Bool) {
    format::TensorMap local;
    const format::TensorData *data =
        weightsTensor(graph, in, cache ? *cache : local, error);
    if (!data)
      return false;
    auto stored = parseDType(format::fromSafetensorsDtype(data->dtype));
    size_t elem = dtypeSize(type.dtype);
    if (stored == type.dtype && data->bytes.size() == size_t(type.numElements()) * elem) {
      if (in.init.permutation.empty()) {
        out = data->bytes; // Already the artifact's little-endian layout.
        return true;
      }
      out.resize(data->bytes.size());
      format::forEachPermuted(staticExtents(type), in.init.permutation,
                              [&](int64_t to, int64_t from) {
                                std::memcpy(&out[size_t(to) * elem],
                                            &data->bytes[size_t(from) * elem], elem);
                              });
      return true;
    }
  }
  std::vector<Element> values;
  if (!initialValue(graph, in, values, error, cache))
    return false;
  std::vector<int64_t> shape;
  for (Dim d : type.dims)
    shape.push_back(d.extent());
  out = encodeTensorData(type.dtype, shape, values).bytes;
  return true;
}
