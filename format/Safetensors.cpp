//===- Safetensors.cpp - Read and write .safetensors files ---------------===//
//
// Implements strict parsing (every field type, sizes, bounds, no overlaps or
// holes) and atomic writing (temporary file + rename) of safetensors.
//
//===----------------------------------------------------------------------===//
#include "format/Safetensors.h"
#include "format/FileIO.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using nlohmann::json;

namespace cgc {
namespace format {
namespace {

constexpr uint64_t kMaxHeaderSize = 100ull << 20;

bool fail(std::string &error, const std::string &msg) {
  error = "safetensors: " + msg;
  return false;
}

bool readShape(const json &j, std::vector<int64_t> &shape, uint64_t &numel) {
  if (!j.is_array())
    return false;
  numel = 1;
  for (const json &d : j) {
    if (!d.is_number_integer() || (d.is_number_integer() &&
                                   !d.is_number_unsigned() &&
                                   d.get<int64_t>() < 0))
      return false;
    uint64_t v = d.get<uint64_t>();
    if (v > (1ull << 48) || (v && numel > (1ull << 56) / v))
      return false;
    numel *= v;
    shape.push_back(static_cast<int64_t>(v));
  }
  return true;
}

} // namespace

size_t safetensorsDtypeSize(const std::string &dtype) {
#define CGC_DTYPE(Enum, Name, Size, SafetensorsName, ...)                      \
  if (dtype == SafetensorsName)                                                \
    return Size;
#include "format/DTypes.def"
  return 0;
}

std::string toSafetensorsDtype(const std::string &d) {
#define CGC_DTYPE(Enum, Name, Size, SafetensorsName, ...)                      \
  if (d == Name)                                                               \
    return SafetensorsName;
#include "format/DTypes.def"
  return "";
}

std::string fromSafetensorsDtype(const std::string &d) {
#define CGC_DTYPE(Enum, Name, Size, SafetensorsName, ...)                      \
  if (d == SafetensorsName)                                                    \
    return Name;
#include "format/DTypes.def"
  return "";
}

/// The header's length from the first 8 bytes, checked against the file.
static bool headerLength(const uint8_t *data, size_t available, uint64_t fileSize,
                  uint64_t &n, std::string &error) {
  if (fileSize < 8 || available < 8)
    return fail(error, "file too small (" + std::to_string(fileSize) +
                           " bytes)");
  n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | data[i];
  if (n > kMaxHeaderSize || n > fileSize - 8)
    return fail(error, "header length " + std::to_string(n) +
                           " exceeds the file or the 100 MiB limit");
  return true;
}

bool parseSafetensorsHeader(const uint8_t *data, size_t available,
                            uint64_t fileSize, SafetensorsIndex &out,
                            std::string &error,
                            std::map<std::string, std::string> *metadata) {
  uint64_t n = 0;
  if (!headerLength(data, available, fileSize, n, error))
    return false;
  if (n > available - 8)
    return fail(error, "header is cut short");
  json header = json::parse(data + 8, data + 8 + n, nullptr, false);
  if (header.is_discarded() || !header.is_object())
    return fail(error, "header is not a JSON object");
  uint64_t bodyStart = 8 + n;
  uint64_t bodySize = fileSize - bodyStart;
  SafetensorsIndex result;
  result.fileSize = fileSize;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const json &e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object())
        return fail(error, "__metadata__ must be an object");
      for (auto m = e.begin(); m != e.end(); ++m) {
        if (!m.value().is_string())
          return fail(error, "__metadata__ values must be strings");
        if (metadata)
          (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    std::string p = "tensor '" + name + "': ";
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") ||
        !e.contains("data_offsets"))
      return fail(error, p + "needs dtype, shape and data_offsets");
    if (!e["dtype"].is_string())
      return fail(error, p + "dtype must be a string");
    TensorEntry t;
    t.dtype = e["dtype"].get<std::string>();
    size_t elem = safetensorsDtypeSize(t.dtype);
    if (!elem)
      return fail(error, p + "unsupported dtype '" + t.dtype +
                             "' (supported: F32 F16 BF16 I32 I64 BOOL)");
    uint64_t numel;
    if (!readShape(e["shape"], t.shape, numel))
      return fail(error, p + "shape must be an array of non-negative integers");
    const json &off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      return fail(error, p + "data_offsets must be [begin, end]");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > bodySize)
      return fail(error, p + "data_offsets out of bounds");
    if (end - begin != numel * elem)
      return fail(error, p + "data size " + std::to_string(end - begin) +
                             " does not match shape and dtype (" +
                             std::to_string(numel * elem) + ")");
    ranges.emplace_back(begin, end);
    t.begin = bodyStart + begin;
    t.end = bodyStart + end;
    result.tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto &r : ranges) {
    if (r.first != covered)
      return fail(error, r.first < covered ? "tensor data ranges overlap"
                                           : "data section has a hole");
    covered = r.second;
  }
  if (covered != bodySize)
    return fail(error, "data section has " +
                           std::to_string(bodySize - covered) +
                           " trailing bytes");
  out = std::move(result);
  return true;
}

bool parseSafetensors(const uint8_t *data, size_t size, TensorMap &out,
                      std::string &error,
                      std::map<std::string, std::string> *metadata) {
  SafetensorsIndex index;
  if (!parseSafetensorsHeader(data, size, size, index, error, metadata))
    return false;
  TensorMap result;
  for (auto &[name, entry] : index.tensors) {
    TensorData t;
    t.dtype = std::move(entry.dtype);
    t.shape = std::move(entry.shape);
    t.bytes.assign(data + entry.begin, data + entry.end);
    result.emplace(name, std::move(t));
  }
  out = std::move(result);
  return true;
}

bool indexSafetensorsFile(const std::string &path, SafetensorsIndex &out,
                          std::string &error) {
  int fd = -1;
  uint64_t size = 0;
  if (!openRegularFile(path, fd, size, error))
    return false;
  uint8_t length[8] = {};
  uint64_t n = 0;
  std::vector<uint8_t> head;
  bool ok = readAt(fd, 0, length, size < 8 ? size_t(size) : 8) &&
            headerLength(length, 8, size, n, error);
  if (ok) {
    head.resize(8 + size_t(n));
    ok = readAt(fd, 0, head.data(), head.size());
    if (!ok)
      error = "safetensors: cannot read the header";
  } else if (error.empty()) {
    error = "safetensors: cannot read the header";
  }
  ::close(fd);
  if (ok && parseSafetensorsHeader(head.data(), head.size(), size, out, error))
    return true;
  error = path + ": " + error;
  return false;
}

bool readSafetensors(const std::string &path, TensorMap &out,
                     std::string &error,
                     std::map<std::string, std::string> *metadata) {
  std::vector<uint8_t> bytes;
  if (!readFileBounded(path, bytes, error))
    return false;
  if (parseSafetensors(bytes.data(), bytes.size(), out, error, metadata))
    return true;
  error = path + ": " + error;
  return false;
}

bool serializeSafetensors(const TensorMap &tensors, std::vector<uint8_t> &out,
                          std::string &error,
                          const std::map<std::string, std::string> *metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto &kv : tensors) {
    const TensorData &t = kv.second;
    if (kv.first == "__metadata__")
      return fail(error, "'__metadata__' is not a valid tensor name");
    size_t elem = safetensorsDtypeSize(t.dtype);
    if (!elem)
      return fail(error, "tensor '" + kv.first + "': unsupported dtype '" +
                             t.dtype + "'");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        return fail(error, "tensor '" + kv.first + "': negative dimension");
      numel *= uint64_t(d);
    }
    if (numel * elem != t.bytes.size())
      return fail(error, "tensor '" + kv.first + "': " +
                             std::to_string(t.bytes.size()) +
                             " bytes do not match shape and dtype");
    header[kv.first] = {{"dtype", t.dtype},
                        {"shape", t.shape},
                        {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (metadata && !metadata->empty())
    header["__metadata__"] = *metadata;
  std::string text = header.dump();
  while ((8 + text.size()) % 8)
    text.push_back(' ');
  out.assign(8 + text.size() + offset, 0);
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t *p = out.data() + 8 + text.size();
  for (const auto &kv : tensors) {
    if (!kv.second.bytes.empty())
      std::memcpy(p, kv.second.bytes.data(), kv.second.bytes.size());
    p += kv.second.bytes.size();
  }
  return true;
}

bool writeSafetensors(const std::string &path, const TensorMap &tensors,
                      std::string &error, bool overwrite,
                      const std::map<std::string, std::string> *metadata) {
  std::vector<uint8_t> bytes;
  if (!serializeSafetensors(tensors, bytes, error, metadata))
    return false;
  return writeFileReplacing(path, bytes.data(), bytes.size(), overwrite,
                            error);
}

} // namespace format
} // namespace cgc
