//===- ManifestReader.h - Typed access to the manifest JSON -----*- C++ -*-===//
//
// Internal to format/: the Reader that ManifestJson.cpp and
// LibraryCallsJson.cpp read the manifest with, checking every type by hand
// so that corrupt input gives a message naming the field, and the helpers
// both use.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_MANIFESTREADER_H
#define CGC_FORMAT_MANIFESTREADER_H

#include "format/ArtifactFormat.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <vector>

namespace cgc {
namespace format {
namespace manifest_json {

using nlohmann::json;

/// Typed field access with a JSON-path-like context for messages.
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  }
  const json *field(const json &obj, const std::string &path, const char *key,
                    bool optional = false) {
    if (!obj.is_object()) {
      fail(path, "expected an object");
      return nullptr;
    }
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (!optional)
        fail(path, std::string("missing field '") + key + "'");
      return nullptr;
    }
    return &*it;
  }
  bool str(const json &obj, const std::string &path, const char *key,
           std::string &out, bool optional = false) {
    const json *v = field(obj, path, key, optional);
    if (!v)
      return optional && error.empty();
    if (!v->is_string())
      return fail(path + "." + key, "expected a string");
    out = v->get<std::string>();
    return true;
  }
  bool u64(const json &obj, const std::string &path, const char *key,
           uint64_t &out, bool optional = false) {
    const json *v = field(obj, path, key, optional);
    if (!v)
      return optional && error.empty();
    return u64Value(*v, path + "." + key, out);
  }
  bool u64Value(const json &v, const std::string &path, uint64_t &out) {
    if (v.is_number_unsigned()) {
      out = v.get<uint64_t>();
      return true;
    }
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
      out = static_cast<uint64_t>(v.get<int64_t>());
      return true;
    }
    return fail(path, "expected a non-negative integer");
  }
  bool i64Value(const json &v, const std::string &path, int64_t &out) {
    if (v.is_number_integer() && !v.is_number_unsigned()) {
      out = v.get<int64_t>();
      return true;
    }
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() <=
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out = static_cast<int64_t>(v.get<uint64_t>());
      return true;
    }
    return fail(path, "expected an integer");
  }
  bool i64(const json &obj, const std::string &path, const char *key,
           int64_t &out) {
    const json *v = field(obj, path, key);
    return v && i64Value(*v, path + "." + key, out);
  }
  bool u32(const json &obj, const std::string &path, const char *key,
           uint32_t &out) {
    uint64_t v;
    if (!u64(obj, path, key, v))
      return false;
    if (v > std::numeric_limits<uint32_t>::max())
      return fail(path + "." + key, "value does not fit in 32 bits");
    out = static_cast<uint32_t>(v);
    return true;
  }
  const json *array(const json &obj, const std::string &path, const char *key,
                    bool optional = false) {
    const json *v = field(obj, path, key, optional);
    if (v && !v->is_array()) {
      fail(path + "." + key, "expected an array");
      return nullptr;
    }
    return v;
  }
  bool region(const json &obj, const std::string &path, const char *key,
              Region &out) {
    std::string s;
    if (!str(obj, path, key, s))
      return false;
    if (s == "arena")
      out = Region::Arena;
    else if (s == "persistent")
      out = Region::Persistent;
    else
      return fail(path + "." + key, "unknown region '" + s + "'");
    return true;
  }

  std::string &error;
};

inline std::string at(const std::string &base, size_t i) {
  return base + "[" + std::to_string(i) + "]";
}

inline bool readPointer(Reader &r, const json &j, const std::string &p,
                 const char *key, PointerDesc &out) {
  const json *v = r.field(j, p, key);
  std::string q = p + "." + key;
  return v && r.region(*v, q, "region", out.region) &&
         r.u64(*v, q, "offset", out.offset) &&
         r.str(*v, q, "binding", out.binding, true);
}

inline bool readBool(Reader &r, const json &j, const std::string &p, const char *key,
              bool &out) {
  const json *v = r.field(j, p, key);
  if (!v)
    return false;
  if (!v->is_boolean())
    return r.fail(p + "." + key, "expected a boolean");
  out = v->get<bool>();
  return true;
}

inline bool readFloat(Reader &r, const json &j, const std::string &p,
               const char *key, float &out) {
  const json *v = r.field(j, p, key);
  if (!v)
    return false;
  if (!v->is_number())
    return r.fail(p + "." + key, "expected a number");
  out = static_cast<float>(v->get<double>());
  return true;
}

inline bool readI64s(Reader &r, const json &j, const std::string &p, const char *key,
              std::vector<int64_t> &out) {
  const json *values = r.array(j, p, key);
  if (!values)
    return false;
  out.resize(values->size());
  for (size_t i = 0; i < values->size(); ++i)
    if (!r.i64Value((*values)[i], at(p + "." + key, i), out[i]))
      return false;
  return true;
}

/// A name among \p count enum values, by \p nameOf.
template <class Enum, class NameOf>
bool readEnum(Reader &r, const json &j, const std::string &p, const char *key,
              unsigned count, NameOf nameOf, Enum &out) {
  std::string name;
  if (!r.str(j, p, key, name))
    return false;
  for (unsigned k = 0; k < count; ++k)
    if (name == nameOf(static_cast<Enum>(k))) {
      out = static_cast<Enum>(k);
      return true;
    }
  return r.fail(p + "." + key, "unknown " + std::string(key) + " '" + name + "'");
}

/// The products, convolutions and collectives of the manifest at \p root
/// (LibraryCallsJson.cpp).
bool readLibraryCalls(Reader &r, const json &root, Manifest &m);

} // namespace manifest_json
} // namespace format
} // namespace cgc

#endif // CGC_FORMAT_MANIFESTREADER_H
