//===- StagedCases.cpp - The cases stage_cases.py stages, loaded and checked ===//
#include "StagedCases.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace cgctest;

namespace cgctest {

const Staged &staged() {
  static Staged s = [] {
    Staged st;
    const char *env = std::getenv("CGC_GPU_CASES");
    st.dir = env && *env ? env : CGC_DEFAULT_GPU_CASES;
    std::ifstream in(st.dir + "/cases.txt");
    st.found = bool(in);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string kind;
      ls >> kind;
      if (kind == "case") {
        Case c;
        ls >> c.name >> c.replays;
        st.cases.push_back(c);
      } else if (kind == "out" && !st.cases.empty()) {
        OutSpec o;
        ls >> o.name >> o.dtype >> o.mode >> o.rtol >> o.atol;
        st.cases.back().outputs.push_back(o);
      } else if (kind == "compile_failure") {
        std::string n;
        ls >> n;
        st.compileFailures.push_back(n);
      }
    }
    return st;
  }();
  return s;
}

static double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v;
  if (exp == 0)
    v = std::ldexp(double(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(double(man | 1024), exp - 25);
  return sign ? -v : v;
}

Decoded decode(const std::string &dtype, const uint8_t *p, size_t bytes) {
  Decoded d;
  std::vector<double> &v = d.reals;
  std::vector<int64_t> &n = d.ints;
  d.integral = !(dtype == "F32" || dtype == "f32" || dtype == "F16" ||
                 dtype == "f16" || dtype == "BF16" || dtype == "bf16");
  if (dtype == "F32" || dtype == "f32")
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float f;
      std::memcpy(&f, p + i, 4);
      v.push_back(f);
    }
  else if (dtype == "F16" || dtype == "f16")
    for (size_t i = 0; i + 2 <= bytes; i += 2) {
      uint16_t h;
      std::memcpy(&h, p + i, 2);
      v.push_back(halfToDouble(h));
    }
  else if (dtype == "BF16" || dtype == "bf16")
    for (size_t i = 0; i + 2 <= bytes; i += 2) {
      uint16_t h;
      std::memcpy(&h, p + i, 2);
      uint32_t u = uint32_t(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      v.push_back(f);
    }
  else if (dtype == "I32" || dtype == "i32")
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      int32_t x;
      std::memcpy(&x, p + i, 4);
      n.push_back(x);
    }
  else if (dtype == "I64" || dtype == "i64")
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      int64_t x;
      std::memcpy(&x, p + i, 8);
      n.push_back(x);
    }
  else // bool: one byte each.
    for (size_t i = 0; i < bytes; ++i)
      n.push_back(p[i]);
  return d;
}

/// Integers and bools: every element equal, exactly.
static std::string compareIntegers(const OutSpec &o, const Decoded &got,
                                   const Decoded &ref) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ref.ints.size(); ++i)
    if (got.ints[i] != ref.ints[i] && bad++ == 0)
      first = i;
  if (!bad)
    return "";
  return "output '" + o.name + "' (" + o.dtype + ", exact): " +
         std::to_string(bad) + " of " + std::to_string(ref.ints.size()) +
         " elements differ, first at flat index " + std::to_string(first) +
         ": got " + std::to_string(got.ints[first]) + ", want " +
         std::to_string(ref.ints[first]);
}

std::string compareOutput(const OutSpec &o, const Decoded &gotElements,
                          const Decoded &refElements) {
  if (gotElements.size() != refElements.size())
    return "output '" + o.name + "': " + std::to_string(gotElements.size()) +
           " elements, reference has " + std::to_string(refElements.size());
  if (gotElements.integral != refElements.integral)
    return "output '" + o.name + "': integer and float elements compared";
  if (refElements.integral)
    return compareIntegers(o, gotElements, refElements);
  const std::vector<double> &got = gotElements.reals, &ref = refElements.reals;
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = got[i], w = ref[i];
    bool ok;
    if (o.mode == "dropout" && ((g == 0) != (w == 0)))
      ok = false;
    else if (std::isnan(w) || std::isnan(g))
      ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g))
      ok = g == w;
    else {
      double err = std::fabs(g - w);
      ok = err <= o.atol + o.rtol * std::fabs(w);
      worst = std::max(worst, err);
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (!bad)
    return "";
  std::ostringstream os;
  os.precision(9);
  os << "output '" << o.name << "' (" << o.dtype << ", " << o.mode
     << ", rtol " << o.rtol << " atol " << o.atol << "): " << bad << " of "
     << ref.size() << " elements differ, first at flat index " << first
     << ": got " << got[first] << ", want " << ref[first]
     << "; max abs err " << worst;
  return os.str();
}

std::string fmtStatus(cgc_status s) {
  return std::string(cgc_status_message(s)) + ": " + cgc_last_error();
}

size_t deviceBytesInUse() {
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return total - free;
}

size_t hostResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

bool readTensors(const std::string &path, TensorMap &out) {
  std::string err;
  bool ok = cgc::format::readSafetensors(path, out, err);
  EXPECT_TRUE(ok) << path << ": " << err;
  return ok;
}

bool readInputSet(const std::string &dir, int k, TensorMap &in,
                  TensorMap &ref) {
  std::string tag = k == 0 ? "" : "." + std::to_string(k);
  return readTensors(dir + "in" + tag + ".safetensors", in) &&
         readTensors(dir + "ref" + tag + ".safetensors", ref);
}

const Case *findCase(const std::string &name) {
  for (const Case &c : staged().cases)
    if (c.name == name)
      return &c;
  return nullptr;
}

std::string Loaded::open(const std::string &path) {
  if (cgc_status s = cgc_engine_load_file(path.c_str(), 0, &engine))
    return "load: " + fmtStatus(s);
  if (cgc_status s = cgc_context_create(engine, nullptr, 0, &ctx))
    return "context: " + fmtStatus(s);
  return "";
}

std::vector<cgc_tensor_info> Loaded::tensors(cgc_tensor_role role) const {
  std::vector<cgc_tensor_info> v(cgc_engine_num_tensors(engine, role));
  for (size_t i = 0; i < v.size(); ++i)
    cgc_engine_tensor_info(engine, role, i, &v[i]);
  return v;
}

std::string Loaded::feed(const TensorMap &in) {
  dims.assign(cgc_engine_num_dims(engine), 0);
  for (size_t d = 0; d < dims.size(); ++d) {
    const char *name = nullptr;
    int64_t min = 0;
    cgc_engine_dim_info(engine, d, &name, &min, &dims[d]);
  }
  // Poison plain outputs first (not parameter updates: they live in the
  // state they update), then write inputs (an output may alias one).
  for (const cgc_tensor_info &t : tensors(CGC_ROLE_OUTPUT)) {
    if (std::string(t.kind) != "output")
      continue;
    cgc_tensor view;
    if (cgc_status s = cgc_context_output(ctx, t.name, &view))
      return "output view: " + fmtStatus(s);
    if (t.bytes && cudaMemset(view.data, 0xFF, t.bytes) != cudaSuccess)
      return "cudaMemset failed";
  }
  if (cudaDeviceSynchronize() != cudaSuccess)
    return "cudaDeviceSynchronize failed";
  for (const cgc_tensor_info &t : tensors(CGC_ROLE_INPUT)) {
    if (std::string(t.kind) == "dim_size")
      continue; // cgc_run writes the real dims.
    auto it = in.find(t.name);
    if (it == in.end())
      return std::string("input '") + t.name + "' missing from inputs";
    // A padded artifact's input below its largest size (an artifact of one
    // dim: the extent that differs is that dim's real value).
    const std::vector<int64_t> &shape = it->second.shape;
    for (size_t a = 0; a < shape.size() && a < size_t(t.ndim); ++a)
      if (shape[a] != t.shape[a] && dims.size() == 1)
        dims[0] = shape[a];
    if (it->second.bytes.size() > t.bytes ||
        (it->second.bytes.size() != t.bytes && dims.size() != 1))
      return std::string("input '") + t.name + "' has " +
             std::to_string(it->second.bytes.size()) + " bytes, artifact wants " +
             std::to_string(t.bytes);
    if (cgc_status s = cgc_context_write_input(ctx, t.name, it->second.bytes.data(),
                                               it->second.bytes.size(), nullptr))
      return "write_input: " + fmtStatus(s);
  }
  for (const cgc_tensor_info &t : tensors(CGC_ROLE_STATE)) {
    auto it = in.find(t.name);
    if (it == in.end())
      continue;
    if (it->second.bytes.size() != t.bytes)
      return std::string("state '") + t.name + "' size mismatch";
    if (cgc_status s = cgc_engine_state_write(engine, t.name, it->second.bytes.data(),
                                              t.bytes))
      return "state_write: " + fmtStatus(s);
  }
  if (cudaDeviceSynchronize() != cudaSuccess)
    return "cudaDeviceSynchronize failed";
  return "";
}

std::string Loaded::readAndCompare(const std::string &name,
                                   const TensorData &want) {
  std::vector<uint8_t> got(want.bytes.size());
  if (cgc_status s = cgc_context_read_output(ctx, name.c_str(), got.data(),
                                             got.size(), nullptr))
    return name + ": " + fmtStatus(s);
  cgc_tensor view;
  if (cgc_status s = cgc_context_output(ctx, name.c_str(), &view))
    return name + ": " + fmtStatus(s);
  if (std::vector<int64_t>(view.shape, view.shape + view.ndim) != want.shape)
    return name + ": the view's shape is not the run's";
  Decoded w = decode(want.dtype, want.bytes.data(), want.bytes.size());
  double largest = 1;
  for (double v : w.reals)
    largest = std::isfinite(v) ? std::max(largest, std::abs(v)) : largest;
  bool exact = want.dtype == "I64" || want.dtype == "I32" || want.dtype == "BOOL";
  OutSpec spec{name, want.dtype, exact ? "exact" : "close", exact ? 0 : 1e-4,
               exact ? 0 : 1e-4 * largest};
  std::string problem = compareOutput(spec, decode(want.dtype, got.data(), got.size()), w);
  return problem.empty() ? "" : name + ": " + problem;
}

std::string Loaded::runAndCompare(bool eager, const Case &c, const TensorMap &ref) {
  // The dims feed() found (each dim's maximum unless an input was smaller):
  // the graph that runs that size (a padded artifact's smallest bucket).
  size_t graph = 0;
  if (!dims.empty())
    if (cgc_status s = cgc_engine_select_graph(engine, dims.data(), dims.size(), &graph))
      return "select_graph: " + fmtStatus(s);
  cgc_status s = eager ? cgc_run_eager(ctx, graph, dims.data(), dims.size(), nullptr)
                       : cgc_run(ctx, graph, dims.data(), dims.size(), nullptr);
  if (s || (s = cgc_stream_synchronize(nullptr)))
    return std::string(eager ? "run_eager: " : "run: ") + fmtStatus(s);
  std::string problems;
  for (const OutSpec &o : c.outputs) {
    auto it = ref.find(o.name);
    if (it == ref.end()) {
      problems += "reference has no output '" + o.name + "'\n";
      continue;
    }
    std::vector<uint8_t> host(it->second.bytes.size());
    if (!host.empty())
      if ((s = cgc_context_read_output(ctx, o.name.c_str(), host.data(),
                                       host.size(), nullptr)))
        return "read_output '" + o.name + "': " + fmtStatus(s);
    std::string p = compareOutput(
        o, decode(it->second.dtype, host.data(), host.size()),
        decode(it->second.dtype, it->second.bytes.data(), it->second.bytes.size()));
    if (!p.empty())
      problems += p + "\n";
  }
  return problems;
}

} // namespace cgctest
