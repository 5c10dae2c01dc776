//===- FuzzSupport.cpp - JSON mutator, model reading, run limits ----------===//
#include "FuzzSupport.h"

#include "ir/JsonReader.h"
#include "ir/Ops.h"
#include "ir/Types.h"
#include "ir/Verifier.h"
#include "ir/interpreter/Interpreter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace cgc;
using Json = nlohmann::json;

namespace {

/// The IR's vocabulary: every op mnemonic and dtype name.
const std::vector<std::string> &vocabulary() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> out;
#define CGC_OP(Enum, ...) out.push_back(mnemonic(OpKind::Enum).str());
#include "ir/Ops.def"
#define CGC_DTYPE(Enum, Name, ...) out.push_back(Name);
#include "format/DTypes.def"
    return out;
  }();
  return words;
}

/// Numbers a parser, a shape check or an offset check may get wrong.
const int64_t kInterestingIntegers[] = {
    0, 1, -1, 2, 3, 7, 8, 255, 256, 4096, 65535, 65536, INT32_MAX,
    int64_t(1) << 31, int64_t(1) << 32, int64_t(1) << 40, INT64_MAX,
    INT64_MIN};

struct Walk {
  std::vector<Json *> all;
  std::vector<std::string> strings;
  std::vector<std::string> keys;
};

void collect(Json &j, Walk &walk) {
  walk.all.push_back(&j);
  if (j.is_string())
    walk.strings.push_back(j.get<std::string>());
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) {
      walk.keys.push_back(it.key());
      collect(it.value(), walk);
    }
  if (j.is_array())
    for (Json &e : j)
      collect(e, walk);
}

template <class T>
const T &pick(const std::vector<T> &v, std::mt19937 &rng) {
  return v[rng() % v.size()];
}

int64_t toInteger(double d) {
  if (!(std::fabs(d) < 9e18))
    return d < 0 ? INT64_MIN : INT64_MAX; // also NaN
  return int64_t(d);
}

int64_t plus(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? a : sum;
}

void mutateNumber(Json &j, std::mt19937 &rng) {
  bool integer = j.is_number_integer();
  switch (rng() % 4) {
  case 0:
    j = kInterestingIntegers[rng() % std::size(kInterestingIntegers)];
    return;
  case 1:
    if (integer)
      j = plus(j.get<int64_t>(), int64_t(rng() % 5) - 2);
    else
      j = j.get<double>() * 2;
    return;
  case 2:
    j = std::vector<double>{-1e300, -0.5, 1e-30, 3.5, 1e300}[rng() % 5];
    return;
  default:
    if (integer)
      j = double(j.get<int64_t>()) + 0.5;
    else
      j = toInteger(j.get<double>());
    return;
  }
}

void mutateContainer(Json &j, const Walk &walk, std::mt19937 &rng) {
  if (j.empty()) {
    if (j.is_array())
      j.push_back(int64_t(rng() % 9));
    else
      j[pick(walk.keys.empty() ? vocabulary() : walk.keys, rng)] = 1;
    return;
  }
  size_t i = rng() % j.size(), k = rng() % j.size();
  if (j.is_object()) {
    auto it = std::next(j.begin(), long(i));
    std::string key = it.key();
    Json value = it.value();
    if (rng() % 2) {
      j.erase(key); // drop a member
    } else if (!walk.keys.empty()) {
      j.erase(key); // rename a member to another key of the document
      j[pick(walk.keys, rng)] = std::move(value);
    }
    return;
  }
  switch (rng() % 4) {
  case 0: j.erase(j.begin() + long(i)); return;        // drop
  case 1: j.insert(j.begin() + long(k), j[i]); return; // duplicate
  case 2: std::swap(j[i], j[k]); return;               // reorder
  default: j.push_back(j[i]); return;                  // append a copy
  }
}

void mutateValue(Json &j, const Walk &walk, std::mt19937 &rng) {
  switch (j.type()) {
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return mutateNumber(j, rng);
  case Json::value_t::string:
    if (rng() % 3 == 0)
      j = pick(vocabulary(), rng);
    else if (rng() % 2 && !walk.strings.empty())
      j = pick(walk.strings, rng);
    else
      j = j.get<std::string>() + "_";
    return;
  case Json::value_t::boolean:
    j = !j.get<bool>();
    return;
  case Json::value_t::array:
  case Json::value_t::object:
    return mutateContainer(j, walk, rng);
  case Json::value_t::null:
  case Json::value_t::binary:
  case Json::value_t::discarded:
    j = int64_t(rng() % 4);
    return;
  }
}

/// Whether \p type's element count at its largest fits \p limit.
bool fits(const TensorType &type, const DimTable &dims, int64_t limit) {
  return type.maxElements(dims) <= limit;
}

/// Values of a loop body run up to interpreterLimits().whileTrips times.
bool regionSmallEnough(const Graph &graph, int64_t kElements) {
  constexpr int64_t kMacs = int64_t(1) << 26;
  for (const GraphInput &in : graph.inputs())
    if (!fits(in.value->getType(), graph.dims(), kElements))
      return false;
  for (const auto &node : graph.nodes()) {
    for (unsigned r = 0; r < node->numResults(); ++r)
      if (!fits(node->result(r)->getType(), graph.dims(), kElements))
        return false;
    if (node->info().family == MatMul) {
      int64_t k = 1;
      for (Dim d : node->operand(0)->getType().dims)
        k = std::max(k, graph.dims().upperBound(d));
      if (node->result()->getType().maxElements(graph.dims()) > kMacs / k)
        return false;
    }
    int64_t inner = node->getOp() == OpKind::While ? int64_t(1) << 12 : kElements;
    for (unsigned i = 0; i < node->numRegions(); ++i)
      if (!regionSmallEnough(node->region(i), std::min(inner, kElements)))
        return false;
  }
  return true;
}

} // namespace

bool fuzz::mutateJson(std::string &text, uint32_t seed) {
  Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return false;
  Walk walk;
  collect(doc, walk);
  std::mt19937 rng(seed);
  mutateValue(*pick(walk.all, rng), walk, rng);
  text = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  return true;
}

size_t fuzz::mutateJsonInput(uint8_t *data, size_t size, size_t maxSize,
                             unsigned seed) {
  std::string text(reinterpret_cast<char *>(data), size);
  if (seed % 8 != 0 && mutateJson(text, seed) && text.size() <= maxSize) {
    std::memcpy(data, text.data(), text.size());
    return text.size();
  }
  return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, maxSize) : size;
}

std::unique_ptr<Graph> fuzz::readModel(const uint8_t *data, size_t size,
                                       DiagnosticEngine &diag) {
  uint32_t id = diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(data), size),
      "fuzz.json"));
  ReadOptions options;
  options.allowComments = true;
  options.checkWeights = false;
  std::unique_ptr<Graph> graph = readGraphBuffer(id, ".", diag, options);
  if (!graph || !verifyGraph(*graph, diag))
    return nullptr;
  return graph;
}

bool fuzz::smallEnoughToRun(const Graph &graph) {
  return regionSmallEnough(graph, int64_t(1) << 20);
}

bool fuzz::stateSmallEnoughToWrite(const Graph &graph) {
  uint64_t bytes = 0;
  for (const GraphInput &in : graph.inputs())
    if (isPersistent(in.kind) && in.init.source != Initializer::Source::None)
      bytes += uint64_t(in.value->getType().maxElements(graph.dims())) *
               dtypeSize(in.value->getType().dtype);
  return bytes <= (uint64_t(16) << 20);
}

interp::Limits fuzz::interpreterLimits() {
  interp::Limits limits;
  limits.memoryBytes = uint64_t(64) << 20;
  limits.whileTrips = 1000;
  return limits;
}
