//===- OpCasesGpuTest.cpp - Codegen'd kernels on the GPU vs the interpreter ===//
//
// Parameterized over the cases staged by test/gpu/stage_cases.py (on the CPU
// machine): DIR/cases.txt lists them, DIR/NAME/{model.cgc, in.safetensors,
// ref.safetensors} hold each one (ref from `cgc-opt --interpret`). DIR is
// $CGC_GPU_CASES, else CGC_DEFAULT_GPU_CASES (<build>/gpu-cases).
//
// Each case is loaded with the runtime, outputs are poisoned (0xFF bytes),
// inputs and state written, then the graph is replayed AND (on a fresh
// engine, so state updates do not leak between modes) run eagerly; outputs
// are compared with the reference under the staged per-output tolerance:
// |got - ref| <= atol + rtol*|ref|, NaN where NaN, equal infinities; exact
// for ints/bool; for dropout outputs the zero pattern must match exactly.
// Cases with staged replay sets (in.K / ref.K) are replayed 20 times on one
// context with new inputs, each result checked.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"
#include "format/Safetensors.h"
#include "cgc/cgc_runtime.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <ostream>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

using namespace cgctest;
using cgc::format::TensorData;
using cgc::format::TensorMap;

namespace {

struct OutSpec {
  std::string name, dtype, mode;
  double rtol = 0, atol = 0;
};
struct Case {
  std::string name;
  int replays = 0;
  std::vector<OutSpec> outputs;
};
struct Staged {
  std::string dir;
  std::vector<Case> cases;
  std::vector<std::string> compileFailures;
  bool found = false;
};

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

double halfToDouble(uint16_t h) {
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

std::vector<double> decode(const std::string &dtype, const uint8_t *p,
                           size_t bytes) {
  std::vector<double> v;
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
      v.push_back(x);
    }
  else if (dtype == "I64" || dtype == "i64")
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      int64_t x;
      std::memcpy(&x, p + i, 8);
      v.push_back(double(x));
    }
  else
    for (size_t i = 0; i < bytes; ++i)
      v.push_back(p[i]);
  return v;
}

/// Empty string if \p got matches \p ref under \p o, else the first problem.
std::string compareOutput(const OutSpec &o, const std::vector<double> &got,
                          const std::vector<double> &ref) {
  if (got.size() != ref.size())
    return "output '" + o.name + "': " + std::to_string(got.size()) +
           " elements, reference has " + std::to_string(ref.size());
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

/// One engine + context over a staged artifact.
struct Loaded {
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  ~Loaded() {
    cgc_context_destroy(ctx);
    cgc_engine_destroy(engine);
  }
  std::string open(const std::string &path) {
    if (cgc_status s = cgc_engine_load_file(path.c_str(), 0, &engine))
      return "load: " + fmtStatus(s);
    if (cgc_status s = cgc_context_create(engine, nullptr, 0, &ctx))
      return "context: " + fmtStatus(s);
    return "";
  }
  std::vector<cgc_tensor_info> tensors(cgc_tensor_role role) const {
    std::vector<cgc_tensor_info> v(cgc_engine_num_tensors(engine, role));
    for (size_t i = 0; i < v.size(); ++i)
      cgc_engine_tensor_info(engine, role, i, &v[i]);
    return v;
  }
  /// Writes inputs (and state tensors named in \p in), poisons outputs.
  std::string feed(const TensorMap &in) {
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
      auto it = in.find(t.name);
      if (it == in.end())
        return std::string("input '") + t.name + "' missing from inputs";
      if (it->second.bytes.size() != t.bytes)
        return std::string("input '") + t.name + "' has " +
               std::to_string(it->second.bytes.size()) + " bytes, artifact wants " +
               std::to_string(t.bytes);
      if (cgc_status s = cgc_context_write_input(ctx, t.name, it->second.bytes.data(),
                                                 t.bytes, nullptr))
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
  std::string runAndCompare(bool eager, const Case &c, const TensorMap &ref) {
    cgc_status s = eager ? cgc_run_eager(ctx, 0, nullptr, 0, nullptr)
                         : cgc_run(ctx, 0, nullptr, 0, nullptr);
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
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

bool readTensors(const std::string &path, TensorMap &out) {
  std::string err;
  bool ok = cgc::format::readSafetensors(path, out, err);
  EXPECT_TRUE(ok) << path << ": " << err;
  return ok;
}

/// Input set \p k of the case in \p dir and its reference (k = 0: the
/// first set, in.safetensors; k >= 1: in.k.safetensors, the replays').
bool readInputSet(const std::string &dir, int k, TensorMap &in,
                  TensorMap &ref) {
  std::string tag = k == 0 ? "" : "." + std::to_string(k);
  return readTensors(dir + "in" + tag + ".safetensors", in) &&
         readTensors(dir + "ref" + tag + ".safetensors", ref);
}

class OpCase : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override { CGC_REQUIRE_GPU(); }
  std::string path(const std::string &file) const {
    return staged().dir + "/" + GetParam().name + "/" + file;
  }
};

TEST_P(OpCase, GraphAndEagerMatchInterpreter) {
  const Case &c = GetParam();
  TensorMap in, ref;
  ASSERT_TRUE(readTensors(path("in.safetensors"), in));
  ASSERT_TRUE(readTensors(path("ref.safetensors"), ref));
  for (bool eager : {false, true}) {
    SCOPED_TRACE(eager ? "eager" : "graph");
    Loaded l; // fresh engine per mode: state updates must not leak
    std::string err = l.open(path("model.cgc"));
    ASSERT_EQ(err, "");
    ASSERT_EQ(l.feed(in), "");
    EXPECT_EQ(l.runAndCompare(eager, c, ref), "");
  }
}

class ReplayCase : public OpCase {};

TEST_P(ReplayCase, TwentyReplaysWithNewInputs) {
  const Case &c = GetParam();
  Loaded l;
  ASSERT_EQ(l.open(path("model.cgc")), "");
  for (int k = 1; k <= c.replays; ++k) {
    SCOPED_TRACE("replay " + std::to_string(k));
    TensorMap in, ref;
    ASSERT_TRUE(readTensors(path("in." + std::to_string(k) + ".safetensors"), in));
    ASSERT_TRUE(readTensors(path("ref." + std::to_string(k) + ".safetensors"), ref));
    ASSERT_EQ(l.feed(in), "");
    ASSERT_EQ(l.runAndCompare(false, c, ref), "");
  }
}

std::vector<Case> replayCases() {
  std::vector<Case> v;
  for (const Case &c : staged().cases)
    if (c.replays > 0)
      v.push_back(c);
  return v;
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string n = info.param.name;
  for (char &ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Staged, OpCase, ::testing::ValuesIn(staged().cases),
                         caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCase);
INSTANTIATE_TEST_SUITE_P(Staged, ReplayCase, ::testing::ValuesIn(replayCases()),
                         caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReplayCase);

TEST(StagedCases, PresentAndCompiled) {
  CGC_REQUIRE_GPU();
  ASSERT_TRUE(staged().found)
      << "no staged cases at " << staged().dir
      << "/cases.txt (run test/gpu/stage_cases.py, set CGC_GPU_CASES)";
  EXPECT_FALSE(staged().cases.empty());
  std::string failed;
  for (const std::string &n : staged().compileFailures)
    failed += " " + n;
  EXPECT_TRUE(failed.empty()) << "cgc failed to compile (not 'unsupported'):"
                              << failed;
}

/// A simple elementwise graph built on the CPU side: 20 replays with new
/// random inputs, each checked against a CPU computation (independent of the
/// staged references). Uses the staged own_add_f32_4097 case's artifact.
TEST(StagedCases, TwentyReplaysOfAddAgainstCpu) {
  CGC_REQUIRE_GPU();
  std::string model = staged().dir + "/own_add_f32_4097/model.cgc";
  if (!std::ifstream(model))
    GTEST_FAIL() << "missing " << model;
  Loaded l;
  ASSERT_EQ(l.open(model), "");
  const size_t n = 4097;
  std::vector<float> a(n), b(n), y(n);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return float(int32_t(state >> 8) % 2000001 - 1000000) / 1000.0f;
  };
  for (int it = 0; it < 20; ++it) {
    for (size_t i = 0; i < n; ++i) {
      a[i] = next();
      b[i] = next();
    }
    ASSERT_EQ(cgc_context_write_input(l.ctx, "a", a.data(), n * 4, nullptr), CGC_OK);
    ASSERT_EQ(cgc_context_write_input(l.ctx, "b", b.data(), n * 4, nullptr), CGC_OK);
    cgc_tensor view;
    ASSERT_EQ(cgc_context_output(l.ctx, "y", &view), CGC_OK);
    ASSERT_EQ(cudaMemset(view.data, 0xFF, n * 4), cudaSuccess);
    ASSERT_EQ(cgc_run(l.ctx, 0, nullptr, 0, nullptr), CGC_OK);
    ASSERT_EQ(cgc_context_read_output(l.ctx, "y", y.data(), n * 4, nullptr), CGC_OK);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], a[i] + b[i]) << "replay " << it << " i=" << i;
  }
}

/// examples/dynamic_rows.json compiled with --bind-dim B=8,16,64 (staged in
/// DIR/multigraph): each graph picked by its batch size, run in mixed order
/// on one context, checked against the interpreter; the graphs share the
/// run counter in the persistent state; sizes without a graph are refused.
TEST(StagedCases, MultiGraphAnyOrder) {
  CGC_REQUIRE_GPU();
  std::string dir = staged().dir + "/multigraph/";
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  ASSERT_EQ(cgc_engine_num_graphs(l.engine), 3u);
  const int64_t order[] = {16, 8, 64, 8, 16};
  for (int64_t b : order) {
    SCOPED_TRACE("B=" + std::to_string(b));
    size_t graph = 99;
    ASSERT_EQ(cgc_engine_select_graph(l.engine, &b, 1, &graph), CGC_OK)
        << cgc_last_error();
    EXPECT_EQ(std::string(cgc_engine_graph_name(l.engine, graph)),
              "B=" + std::to_string(b));
    TensorMap in, ref;
    std::string tag = "B" + std::to_string(b);
    ASSERT_TRUE(readTensors(dir + "in." + tag + ".safetensors", in));
    ASSERT_TRUE(readTensors(dir + "ref." + tag + ".safetensors", ref));
    const std::vector<uint8_t> &x = in.at("x").bytes;
    ASSERT_EQ(cgc_context_write_input(l.ctx, "x", x.data(), x.size(), nullptr),
              CGC_OK);
    for (const char *out : {"y", "r"}) {
      cgc_tensor view;
      ASSERT_EQ(cgc_context_output(l.ctx, out, &view), CGC_OK);
      ASSERT_EQ(cudaMemset(view.data, 0xFF, ref.at(out).bytes.size()),
                cudaSuccess);
    }
    ASSERT_EQ(cgc_run(l.ctx, graph, &b, 1, nullptr), CGC_OK) << cgc_last_error();
    ASSERT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
    for (const char *out : {"y", "r"}) {
      const TensorData &want = ref.at(out);
      std::vector<uint8_t> got(want.bytes.size());
      ASSERT_EQ(cgc_context_read_output(l.ctx, out, got.data(), got.size(),
                                        nullptr),
                CGC_OK);
      cgc_tensor view;
      ASSERT_EQ(cgc_context_output(l.ctx, out, &view), CGC_OK);
      EXPECT_EQ(view.shape[0], b) << "the output view has the run's shape";
      OutSpec spec{out, "f32", "close", 1e-4, 1e-4};
      EXPECT_EQ(compareOutput(spec, decode("f32", got.data(), got.size()),
                              decode("f32", want.bytes.data(), want.bytes.size())),
                "");
    }
  }
  float runs = 0;
  ASSERT_EQ(cgc_engine_state_read(l.engine, "runs", &runs, sizeof runs), CGC_OK);
  EXPECT_EQ(runs, 5.0f) << "every graph updates the one shared counter";
  int64_t missing = 10;
  size_t graph = 0;
  EXPECT_EQ(cgc_engine_select_graph(l.engine, &missing, 1, &graph),
            CGC_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(cgc_last_error()).find("B=8, B=16, B=64"),
            std::string::npos)
      << cgc_last_error();
  int64_t wrong = 16;
  EXPECT_EQ(cgc_run(l.ctx, 0, &wrong, 1, nullptr), CGC_ERROR_INVALID_ARGUMENT)
      << "graph B=8 refuses B=16";
}

} // namespace

namespace {

const Case *findCase(const std::string &name) {
  for (const Case &c : staged().cases)
    if (c.name == name)
      return &c;
  return nullptr;
}

/// Writes \p bytes to a fresh device buffer.
void *deviceCopy(const std::vector<uint8_t> &bytes) {
  void *p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, bytes.size()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
            cudaSuccess);
  return p;
}

/// Runs with the product's input x and output bound to caller buffers (the
/// captured cuBLASLt call is re-captured), compares with the reference.
std::string runBound(Loaded &l, const Case &c, const TensorMap &in,
                     const TensorMap &ref, bool eager) {
  const OutSpec &o = c.outputs.at(0);
  void *dx = deviceCopy(in.at("x").bytes);
  void *dy = nullptr;
  EXPECT_EQ(cudaMalloc(&dy, ref.at(o.name).bytes.size()), cudaSuccess);
  EXPECT_EQ(cudaMemset(dy, 0xFF, ref.at(o.name).bytes.size()), cudaSuccess);
  std::string problem;
  TensorMap rest = in;
  rest.erase("x");
  for (const auto &[name, t] : rest)
    if (cgc_status s = cgc_context_write_input(l.ctx, name.c_str(),
                                               t.bytes.data(), t.bytes.size(),
                                               nullptr))
      problem += "write " + name + ": " + fmtStatus(s) + "\n";
  if (cgc_status s = cgc_context_bind(l.ctx, "x", dx))
    problem += "bind x: " + fmtStatus(s) + "\n";
  if (cgc_status s = cgc_context_bind(l.ctx, o.name.c_str(), dy))
    problem += "bind " + o.name + ": " + fmtStatus(s) + "\n";
  cgc_status s = eager ? cgc_run_eager(l.ctx, 0, nullptr, 0, nullptr)
                       : cgc_run(l.ctx, 0, nullptr, 0, nullptr);
  if (s || (s = cgc_stream_synchronize(nullptr)))
    problem += "run: " + fmtStatus(s) + "\n";
  std::vector<uint8_t> got(ref.at(o.name).bytes.size());
  EXPECT_EQ(cudaMemcpy(got.data(), dy, got.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  problem += compareOutput(o, decode(o.dtype, got.data(), got.size()),
                           decode(o.dtype, ref.at(o.name).bytes.data(),
                                  got.size()));
  cgc_context_bind(l.ctx, "x", nullptr);
  cgc_context_bind(l.ctx, o.name.c_str(), nullptr);
  cudaFree(dx);
  cudaFree(dy);
  return problem;
}

} // namespace

/// A cuBLASLt product (the staged case own_linear_lib_f32_64x255x17_relu):
/// the algorithm chosen at load is described, read back and pinned before
/// any context exists (and refused after); a context then runs with its
/// input and output bound to caller buffers, rebound to new buffers with
/// new inputs, graph and eager, each checked against the interpreter.
TEST(StagedCases, ProductBindingAndPinnedAlgorithm) {
  CGC_REQUIRE_GPU();
  const std::string name = "own_linear_lib_f32_64x255x17_relu";
  const Case *c = findCase(name);
  ASSERT_NE(c, nullptr) << name << " is not staged";
  ASSERT_GE(c->replays, 2);
  std::string dir = staged().dir + "/" + name + "/";
  Loaded l;
  ASSERT_EQ(cgc_engine_load_file((dir + "model.cgc").c_str(), 0, &l.engine),
            CGC_OK)
      << cgc_last_error();
  ASSERT_EQ(cgc_engine_num_products(l.engine), 1u);
  char line[512];
  ASSERT_EQ(cgc_engine_describe_product(l.engine, 0, line, sizeof line), CGC_OK)
      << cgc_last_error();
  EXPECT_NE(std::string(line).find("heuristic"), std::string::npos) << line;
  uint64_t algo[8];
  ASSERT_EQ(cgc_engine_get_product_algorithm(l.engine, 0, algo), CGC_OK);
  ASSERT_EQ(cgc_engine_pin_product_algorithm(l.engine, 0, algo), CGC_OK)
      << cgc_last_error();
  ASSERT_EQ(cgc_engine_describe_product(l.engine, 0, line, sizeof line), CGC_OK);
  EXPECT_NE(std::string(line).find("pinned"), std::string::npos) << line;
  ASSERT_EQ(cgc_context_create(l.engine, nullptr, 0, &l.ctx), CGC_OK)
      << cgc_last_error();
  EXPECT_NE(cgc_engine_pin_product_algorithm(l.engine, 0, algo), CGC_OK)
      << "pinning while a context exists is refused";
  for (int k : {1, 2}) {
    SCOPED_TRACE("input set " + std::to_string(k));
    TensorMap in, ref;
    ASSERT_TRUE(readInputSet(dir, k, in, ref));
    EXPECT_EQ(runBound(l, *c, in, ref, false), "");
    EXPECT_EQ(runBound(l, *c, in, ref, true), "");
  }
  TensorMap in, ref; // unbound again: the arena slots
  ASSERT_TRUE(readInputSet(dir, 0, in, ref));
  ASSERT_EQ(l.feed(in), "");
  EXPECT_EQ(l.runAndCompare(false, *c, ref), "");
}

/// cuBLASLt products inside the arms of an `if` (the staged case
/// cf_if_linear): binding x and the output y re-captures the child graph
/// nodes inside the conditional bodies; two input sets, graph and eager.
TEST(StagedCases, ProductRebindingInsideIfBodies) {
  CGC_REQUIRE_GPU();
  const std::string name = "cf_if_linear";
  const Case *c = findCase(name);
  ASSERT_NE(c, nullptr) << name << " is not staged";
  ASSERT_GE(c->replays, 2);
  std::string dir = staged().dir + "/" + name + "/";
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  Case yOnly = *c; // runBound compares the first output: y, the if's
  yOnly.outputs.erase(std::remove_if(yOnly.outputs.begin(), yOnly.outputs.end(),
                                     [](const OutSpec &o) { return o.name != "y"; }),
                      yOnly.outputs.end());
  ASSERT_EQ(yOnly.outputs.size(), 1u);
  for (int k : {1, 2}) {
    SCOPED_TRACE("input set " + std::to_string(k));
    TensorMap in, ref;
    ASSERT_TRUE(readInputSet(dir, k, in, ref));
    EXPECT_EQ(runBound(l, yOnly, in, ref, false), "");
    EXPECT_EQ(runBound(l, yOnly, in, ref, true), "");
  }
}

/// Device memory in use on the current GPU, in bytes.
static size_t deviceBytesInUse() {
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return total - free;
}

/// This process's resident set, in bytes.
static size_t hostResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

/// Long runs: CGC_SOAK_REPLAYS (default 10^6) replays of the staged
/// example_mlp8_infer_b1 (cuBLASLt and generated products, layernorm), with
/// fresh inputs every 1000 replays (the staged input sets in turn, outputs
/// poisoned each time), checked against the interpreter's references every
/// 100th input change and at the end. Device memory in use must not grow,
/// and the host's resident set by at most 8 MiB; both are printed.
TEST(StagedCases, SoakReplays) {
  CGC_REQUIRE_GPU();
  const std::string name = "example_mlp8_infer_b1";
  const Case *c = findCase(name);
  ASSERT_NE(c, nullptr) << name << " is not staged";
  ASSERT_GE(c->replays, 2);
  std::string dir = staged().dir + "/" + name + "/";
  std::vector<TensorMap> ins(c->replays), refs(c->replays);
  for (int k = 0; k < c->replays; ++k)
    ASSERT_TRUE(readInputSet(dir, k + 1, ins[k], refs[k]));
  const char *env = std::getenv("CGC_SOAK_REPLAYS");
  const int64_t total = env ? std::atoll(env) : 1000000;
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  ASSERT_EQ(l.feed(ins[0]), "");
  ASSERT_EQ(l.runAndCompare(false, *c, refs[0]), ""); // warm-up
  const size_t device0 = deviceBytesInUse(), host0 = hostResidentBytes();
  size_t deviceMax = device0, hostMax = host0;
  auto start = std::chrono::steady_clock::now();
  int checks = 0;
  for (int64_t r = 0; r < total; r += 1000) {
    const int64_t change = r / 1000;
    const int set = int(change % c->replays);
    ASSERT_EQ(l.feed(ins[set]), "") << "replay " << r;
    const int64_t batch = std::min<int64_t>(1000, total - r);
    for (int64_t k = 0; k + 1 < batch; ++k)
      ASSERT_EQ(cgc_run(l.ctx, 0, nullptr, 0, nullptr), CGC_OK) << "replay " << r + k;
    if (change % 100 == 0 || r + batch >= total) {
      ASSERT_EQ(l.runAndCompare(false, *c, refs[set]), "") << "replay " << r + batch - 1;
      ++checks;
      deviceMax = std::max(deviceMax, deviceBytesInUse());
      hostMax = std::max(hostMax, hostResidentBytes());
    } else {
      ASSERT_EQ(cgc_run(l.ctx, 0, nullptr, 0, nullptr), CGC_OK);
    }
  }
  ASSERT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start).count();
  char report[400];
  std::snprintf(report, sizeof report,
                "%lld replays of %s in %.1f s, %d checked against the "
                "interpreter; device memory in use %zu -> max %zu bytes; "
                "host RSS %zu -> max %zu KiB",
                (long long)total, name.c_str(), seconds, checks, device0,
                deviceMax, host0 / 1024, hostMax / 1024);
  std::printf("soak: %s\n", report);
  RecordProperty("soak", report); // into the gtest XML that gpu-run keeps
  EXPECT_EQ(deviceMax, device0);
  EXPECT_LE(hostMax - host0, size_t(8) << 20);
}
