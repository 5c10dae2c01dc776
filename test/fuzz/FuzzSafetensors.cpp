//===- FuzzSafetensors.cpp - Fuzz target: the safetensors reader ----------===//
//
// Any bytes: parseSafetensors must accept or refuse with a message, never
// crash. What it accepts must serialize and parse back to the same tensors.
//
// The mutator keeps the frame valid: it mutates the JSON header (offsets,
// dtypes, shapes) and rewrites its 8-byte length, or mutates the data.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "format/Safetensors.h"

#include <cstdlib>
#include <cstring>

using namespace cgc;
using namespace cgc::format;

static bool sameTensors(const TensorMap &a, const TensorMap &b) {
  if (a.size() != b.size())
    return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.dtype != j->second.dtype ||
        i->second.shape != j->second.shape ||
        i->second.bytes != j->second.bytes)
      return false;
  return true;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  TensorMap tensors, again;
  std::map<std::string, std::string> metadata;
  std::string error;
  if (!parseSafetensors(data, size, tensors, error, &metadata))
    return 0;
  std::vector<uint8_t> bytes;
  if (!serializeSafetensors(tensors, bytes, error, &metadata) ||
      !parseSafetensors(bytes.data(), bytes.size(), again, error) ||
      !sameTensors(tensors, again))
    abort(); // What the reader accepts, the writer must reproduce.
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  uint64_t headerSize = 0;
  for (int i = 7; size >= 8 && i >= 0; --i)
    headerSize = headerSize << 8 | data[i];
  if (size < 8 || seed % 8 == 0 || headerSize > size - 8)
    return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, maxSize) : size;
  std::string header(reinterpret_cast<char *>(data + 8), headerSize);
  std::vector<uint8_t> body(data + 8 + headerSize, data + size);
  if (seed % 4 == 1 && !body.empty() && LLVMFuzzerMutate)
    body.resize(LLVMFuzzerMutate(body.data(), body.size(), body.size()));
  else if (!fuzz::mutateJson(header, seed))
    return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, maxSize) : size;
  if (8 + header.size() + body.size() > maxSize)
    return size;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8)
    data[i] = uint8_t(n);
  std::memcpy(data + 8, header.data(), header.size());
  if (!body.empty())
    std::memcpy(data + 8 + header.size(), body.data(), body.size());
  return 8 + header.size() + body.size();
}
