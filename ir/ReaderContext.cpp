//===- ReaderContext.cpp - Located field checks of the JSON reader ----------===//
//
// The checks every part of the reader shares: fields (unknown, missing),
// names, dtypes, shapes and tensor types, each reported at its JSON
// pointer's place in the file; and regions, which the node reader and the
// graph reader both build.
//
//===----------------------------------------------------------------------===//
#include "ir/JsonReader.h"
#include "ir/ReaderContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace cgc;

bool cgc::isValidName(llvm::StringRef name) {
  if (name.empty() || name.size() > 256)
    return false;
  return llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '/' ||
           c == '-';
  });
}

std::string cgc::quoteName(llvm::StringRef name) {
  std::string out;
  for (char c : name) {
    if (uint8_t(c) < 0x20 || c == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", unsigned(uint8_t(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

static std::string kindOf(const Json &j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_null()) return "null";
  return "a number";
}

bool ReaderContext::expectObject(const Json &j, const std::string &pointer,
                                 const std::string &what) {
  if (j.is_object())
    return true;
  error(pointer, what + " must be an object, got " + kindOf(j));
  return false;
}

bool ReaderContext::checkFields(const Json &obj, const std::string &pointer,
                                llvm::ArrayRef<llvm::StringRef> allowed,
                                llvm::ArrayRef<llvm::StringRef> required,
                                const std::string &what) {
  bool ok = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (llvm::is_contained(allowed, llvm::StringRef(it.key())))
      continue;
    std::string expected;
    for (llvm::StringRef a : allowed)
      expected += (expected.empty() ? "" : ", ") + a.str();
    diag.error(keyAt(pointer + "/" + escapePointerToken(it.key())),
               what + ": unknown field '" + quoteName(it.key()) +
                   "' (expected one of: " + expected + ")");
    ok = false;
  }
  for (llvm::StringRef r : required) {
    if (obj.contains(r.str()))
      continue;
    error(pointer, what + ": missing field '" + r + "'");
    ok = false;
  }
  return ok;
}

bool ReaderContext::readName(const Json &j, const std::string &pointer,
                             const std::string &what, std::string &out) {
  if (!j.is_string()) {
    error(pointer, what + " must be a string, got " + kindOf(j));
    return false;
  }
  out = j.get<std::string>();
  if (isValidName(out))
    return true;
  error(pointer, what + " '" + quoteName(out) +
                     "' is not a valid name (use 1 to 256 letters, digits "
                     "and _ . : / -)");
  return false;
}

bool ReaderContext::readDType(const Json &j, const std::string &pointer,
                              const std::string &what, DType &out) {
  if (j.is_string())
    if (auto d = parseDType(j.get<std::string>())) {
      out = *d;
      return true;
    }
  error(pointer, what + ": unknown dtype " + quoteName(j.dump()) +
                     " (expected f32, f16, bf16, i32, i64 or bool)");
  return false;
}

bool ReaderContext::readShape(const Json &j, const std::string &pointer,
                              const std::string &what, const DimTable &dims,
                              std::vector<Dim> &out) {
  out.clear();
  if (!j.is_array()) {
    error(pointer, what + ": shape must be an array, got " + kindOf(j));
    return false;
  }
  if (j.size() > 8) {
    error(pointer, what + ": rank " + std::to_string(j.size()) +
                       " exceeds the limit of 8");
    return false;
  }
  double elements = 1;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = pointer + "/" + std::to_string(i);
    const Json &d = j[i];
    if (d.is_string()) {
      auto symbol = dims.lookup(d.get<std::string>());
      if (!symbol) {
        error(p, what + ": unknown dim '" + quoteName(d.get<std::string>()) +
                     "' (declare it in 'dims')");
        return false;
      }
      out.push_back(Dim::symbol(*symbol));
      elements *= dims.get(*symbol).max;
      continue;
    }
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      error(p, what + ": dim #" + std::to_string(i) +
                   " must be a non-negative integer or a dim name, got " +
                   quoteName(d.dump()));
      return false;
    }
    out.push_back(Dim::fixed(d.get<int64_t>()));
    elements *= double(d.get<int64_t>());
  }
  if (elements > double(int64_t(1) << 40)) {
    error(pointer, what + ": shape has more than 2^40 elements");
    return false;
  }
  return true;
}

bool ReaderContext::readTensorType(const Json &j, const std::string &pointer,
                                   const std::string &what,
                                   const DimTable &dims, TensorType &out) {
  std::vector<Dim> shape;
  if (!readDType(j["dtype"], pointer + "/dtype", what, out.dtype) ||
      !readShape(j["shape"], pointer + "/shape", what, dims, shape))
    return false;
  out.dims.assign(shape.begin(), shape.end());
  return true;
}

bool cgc::readRegion(ReaderContext &ctx, const Json &j,
                     const std::string &pointer, Graph &region) {
  // Name the node and the region in every message: "node 'r' (if): region
  // 'then'". The region's name is the last token of its pointer.
  const Node *parent = region.getParentNode();
  std::string what = "node '" + parent->getName() + "' (" +
                     mnemonic(parent->getOp()).str() + "): region '" +
                     llvm::StringRef(pointer).rsplit('/').second.str() + "'";
  if (!ctx.expectObject(j, pointer, what) ||
      !ctx.checkFields(j, pointer, {"inputs", "nodes", "outputs"},
                       {"inputs", "nodes", "outputs"}, what))
    return false;
  const Json &inputs = j["inputs"];
  if (!inputs.is_array() || !j["nodes"].is_array() || !j["outputs"].is_array()) {
    ctx.error(pointer, what + ": 'inputs', 'nodes' and 'outputs' must be arrays");
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string p = pointer + "/inputs/" + std::to_string(i);
    std::string name;
    TensorType type;
    if (!ctx.expectObject(inputs[i], p, what + ": an input") ||
        !ctx.checkFields(inputs[i], p, {"name", "dtype", "shape"},
                         {"name", "dtype", "shape"}, what + ": input") ||
        !ctx.readName(inputs[i]["name"], p + "/name", what + ": input name",
                      name) ||
        !ctx.readTensorType(inputs[i], p, what + ": input '" + name + "'",
                            region.dims(), type))
      return false;
    if (region.lookupValue(name)) {
      ctx.error(p + "/name", what + ": input '" + name + "' is defined twice");
      return false;
    }
    region.addInput(name, type);
    region.input(i).loc = ctx.at(p);
  }
  if (!readNodes(ctx, j["nodes"], pointer + "/nodes", region))
    return false;
  const Json &outputs = j["outputs"];
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string p = pointer + "/outputs/" + std::to_string(i);
    std::string name;
    if (!ctx.readName(outputs[i], p, what + ": output #" + std::to_string(i),
                      name))
      return false;
    Value *v = region.lookupValue(name);
    if (!v) {
      ctx.error(p, what + ": output #" + std::to_string(i) +
                       " refers to undefined value '" + name + "'");
      return false;
    }
    region.outputs.push_back({name, v, OutputKind::Output, "", ctx.at(p)});
  }
  return true;
}
