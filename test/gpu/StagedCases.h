//===- StagedCases.h - The cases stage_cases.py stages, loaded and checked -*- C++ -*-===//
//
// test/gpu/stage_cases.py (on the CPU machine) writes DIR/cases.txt and,
// per case, DIR/NAME/{model.cgc, in.safetensors, ref.safetensors} (ref from
// `cgc-opt --interpret`). DIR is $CGC_GPU_CASES, else CGC_DEFAULT_GPU_CASES
// (<build>/gpu-cases). The GPU tests over them share what is here: the
// case list, one engine and context over a case's artifact (Loaded), and
// the comparison with the reference under the staged per-output tolerance:
// |got - ref| <= atol + rtol*|ref|, NaN where NaN, equal infinities; exact
// for ints/bool; for dropout outputs the zero pattern must match exactly.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TEST_GPU_STAGEDCASES_H
#define CGC_TEST_GPU_STAGEDCASES_H

#include "format/Safetensors.h"
#include "cgc/cgc_runtime.h"

#include <ostream>
#include <string>
#include <vector>

namespace cgctest {

using cgc::format::TensorData;
using cgc::format::TensorMap;

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

/// The staged cases, read once.
const Staged &staged();
/// The staged case \p name, or null.
const Case *findCase(const std::string &name);
void PrintTo(const Case &c, std::ostream *os);

/// Elements decoded from safetensors bytes: those of the integer dtypes
/// and bool exactly as int64 (never through a double), floats as doubles.
struct Decoded {
  bool integral = false;
  std::vector<int64_t> ints;  ///< The elements when integral.
  std::vector<double> reals;  ///< The elements otherwise.
  size_t size() const { return integral ? ints.size() : reals.size(); }
  /// Element \p i as a double (an integer past 2^53 rounds: for
  /// tolerances only, never for comparing integers).
  double real(size_t i) const { return integral ? double(ints[i]) : reals[i]; }
};
/// \p bytes of safetensors dtype \p dtype ("F32" or "f32", ...).
Decoded decode(const std::string &dtype, const uint8_t *p, size_t bytes);
/// Empty string if \p got matches \p ref under \p o, else the first
/// problem. Integer and bool elements must be equal as int64, whatever
/// the tolerances; floats compare under \p o's mode and tolerances.
std::string compareOutput(const OutSpec &o, const Decoded &got,
                          const Decoded &ref);
/// \p s and the runtime's last error, as one line.
std::string fmtStatus(cgc_status s);
/// Device memory in use on the current GPU, in bytes.
size_t deviceBytesInUse();
/// This process's resident set, in bytes.
size_t hostResidentBytes();

/// Reads a safetensors file (a failed read is a test failure).
bool readTensors(const std::string &path, TensorMap &out);
/// Input set \p k of the case in \p dir and its reference (k = 0: the
/// first set, in.safetensors; k >= 1: in.k.safetensors, the replays').
bool readInputSet(const std::string &dir, int k, TensorMap &in,
                  TensorMap &ref);

/// One engine + context over a staged artifact. Each call returns an
/// empty string on success, else what went wrong.
struct Loaded {
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  /// The dim values of the inputs feed() wrote (each dim's maximum unless
  /// an input was smaller), which runAndCompare runs.
  std::vector<int64_t> dims;
  ~Loaded() {
    cgc_context_destroy(ctx);
    cgc_engine_destroy(engine);
  }
  std::string open(const std::string &path);
  std::vector<cgc_tensor_info> tensors(cgc_tensor_role role) const;
  /// Writes inputs (and state tensors named in \p in), poisons outputs.
  std::string feed(const TensorMap &in);
  /// Runs (graph or eager), compares every output of \p c with \p ref.
  std::string runAndCompare(bool eager, const Case &c, const TensorMap &ref);
  /// Reads output \p name after a run (its view must have \p want's
  /// shape) and compares it with \p want: ints and bools exactly, floats
  /// within 1e-4 relative plus 1e-4 of max(1, max|want|) (sums in another
  /// order than the interpreter's).
  std::string readAndCompare(const std::string &name, const TensorData &want);
};

} // namespace cgctest

#endif
