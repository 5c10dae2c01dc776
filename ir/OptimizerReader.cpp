//===- OptimizerReader.cpp - The JSON's "optimizer" declaration ------------===//
//
// Part of the JSON reader (ReaderContext.h): a training model's optimizer,
// {"kind": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": false,
//  "weight_decay": 0} or {"kind": "adam" | "adamw", "lr": 1e-3,
//  "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0}, either with
// "skip_nonfinite": true, "accumulate": k and "max_grad_norm": c, and
// "groups": [{"params":
// [names], "lr": ..., ...}], each group overriding any hyperparameter for
// its parameters (torch.optim's param groups after the first). Every field
// but "kind" and "lr" has PyTorch's default; each is checked where it
// stands.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"
#include "ir/ReaderContext.h"

using namespace cgc;

namespace {

/// A number at \p key of \p j in [lo, hi) (hi excluded when open).
bool readNumber(ReaderContext &ctx, const Json &j, const std::string &p,
                const char *key, double lo, double hi, bool hiOpen,
                double &out) {
  if (!j.contains(key))
    return true;
  const Json &v = j[key];
  double x = v.is_number() ? v.get<double>() : -1e300;
  if (!v.is_number() || x < lo || x > hi || (hiOpen && x == hi)) {
    ctx.error(p + "/" + key, std::string("optimizer: '") + key +
                                 "' must be a number in [" + formatDouble(lo) +
                                 ", " + formatDouble(hi) + (hiOpen ? ")" : "]"));
    return false;
  }
  out = x;
  return true;
}

/// An integer at \p key of \p j in [lo, 2^hiLog2].
bool readInteger(ReaderContext &ctx, const Json &j, const std::string &p,
                 const char *key, int64_t lo, unsigned hiLog2, int64_t &out) {
  if (!j.contains(key))
    return true;
  const Json &v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo ||
      v.get<int64_t>() > (int64_t(1) << hiLog2)) {
    ctx.error(p + "/" + key, std::string("optimizer: '") + key +
                                 "' must be an integer in [" + std::to_string(lo) +
                                 ", 2^" + std::to_string(hiLog2) + "]");
    return false;
  }
  out = v.get<int64_t>();
  return true;
}

/// The hyperparameters at \p j (\p p) over \p out, which holds their
/// defaults (or the declaration's, for a group).
bool readHyper(ReaderContext &ctx, const Json &j, const std::string &p,
               OptimizerHyper &out) {
  if (!readNumber(ctx, j, p, "lr", 0, 1e6, false, out.lr) ||
      !readNumber(ctx, j, p, "momentum", 0, 1, true, out.momentum) ||
      !readNumber(ctx, j, p, "weight_decay", 0, 1e6, false, out.weightDecay) ||
      !readNumber(ctx, j, p, "eps", 0, 1, false, out.eps))
    return false;
  if (out.lr <= 0) {
    ctx.error(p + "/lr", "optimizer: 'lr' must be positive");
    return false;
  }
  if (j.contains("nesterov")) {
    if (!j["nesterov"].is_boolean()) {
      ctx.error(p + "/nesterov", "optimizer: 'nesterov' must be a boolean");
      return false;
    }
    out.nesterov = j["nesterov"].get<bool>();
  }
  if (out.nesterov && out.momentum == 0) {
    ctx.error(p + "/nesterov", "optimizer: nesterov needs a momentum above 0");
    return false;
  }
  if (j.contains("betas")) {
    const Json &b = j["betas"];
    bool ok = b.is_array() && b.size() == 2 && b[0].is_number() && b[1].is_number();
    double b1 = ok ? b[0].get<double>() : -1, b2 = ok ? b[1].get<double>() : -1;
    if (!ok || b1 < 0 || b1 >= 1 || b2 < 0 || b2 >= 1) {
      ctx.error(p + "/betas", "optimizer: 'betas' must be two numbers in [0, 1)");
      return false;
    }
    out.beta1 = b1;
    out.beta2 = b2;
  }
  return true;
}

/// "groups": each an object of "params" (parameter names) and the
/// hyperparameters of the optimizer's kind.
bool readGroups(ReaderContext &ctx, const Json &j, const std::string &p,
                llvm::ArrayRef<llvm::StringRef> fields, OptimizerDecl &out) {
  if (!j.is_array()) {
    ctx.error(p, "optimizer: 'groups' must be an array");
    return false;
  }
  for (size_t k = 0; k < j.size(); ++k) {
    std::string at = p + "/" + std::to_string(k);
    std::vector<llvm::StringRef> allowed(fields.begin(), fields.end());
    allowed.push_back("params");
    if (!ctx.expectObject(j[k], at, "an optimizer group") ||
        !ctx.checkFields(j[k], at, allowed, {"params"}, "optimizer group"))
      return false;
    OptimizerGroup group;
    group.hyper = out;
    const Json &params = j[k]["params"];
    bool names = params.is_array();
    for (size_t i = 0; names && i < params.size(); ++i)
      names = params[i].is_string();
    if (!names) {
      ctx.error(at + "/params", "optimizer: a group's 'params' must be parameter names");
      return false;
    }
    for (const Json &name : params)
      group.params.push_back(name.get<std::string>());
    if (!readHyper(ctx, j[k], at, group.hyper))
      return false;
    out.groups.push_back(std::move(group));
  }
  return true;
}

/// "schedule": {"kind": "linear" | "cosine", "warmup_steps": W,
/// "total_steps": T}, 0 <= W <= T, T >= 1.
bool readSchedule(ReaderContext &ctx, const Json &j, const std::string &p,
                  OptimizerDecl &out) {
  if (!ctx.expectObject(j, p, "a learning-rate schedule") ||
      !ctx.checkFields(j, p, {"kind", "warmup_steps", "total_steps"},
                       {"kind", "total_steps"}, "schedule"))
    return false;
  std::string kind = j["kind"].is_string() ? j["kind"].get<std::string>() : "";
  if (kind != "linear" && kind != "cosine") {
    ctx.error(p + "/kind", "optimizer: a schedule's 'kind' must be \"linear\" or \"cosine\"");
    return false;
  }
  out.lrSchedule = kind == "linear" ? OptimizerDecl::LrSchedule::Linear
                                    : OptimizerDecl::LrSchedule::Cosine;
  if (!readInteger(ctx, j, p, "warmup_steps", 0, 40, out.warmupSteps) ||
      !readInteger(ctx, j, p, "total_steps", 1, 40, out.totalSteps))
    return false;
  if (out.warmupSteps > out.totalSteps) {
    ctx.error(p + "/warmup_steps", "optimizer: 'warmup_steps' exceeds 'total_steps'");
    return false;
  }
  return true;
}

} // namespace

bool cgc::readOptimizer(ReaderContext &ctx, const Json &j, OptimizerDecl &out) {
  const std::string p = "/optimizer";
  if (!ctx.expectObject(j, p, "optimizer"))
    return false;
  std::string kind = j.contains("kind") && j["kind"].is_string()
                         ? j["kind"].get<std::string>()
                         : "";
  using K = OptimizerDecl::Kind;
  if (kind == "sgd")
    out.kind = K::Sgd;
  else if (kind == "adam" || kind == "adamw")
    out.kind = kind == "adam" ? K::Adam : K::AdamW;
  else {
    ctx.error(p + (j.contains("kind") ? "/kind" : ""),
              "optimizer: 'kind' must be \"sgd\", \"adam\" or \"adamw\"");
    return false;
  }
  bool sgd = out.kind == K::Sgd;
  std::vector<llvm::StringRef> hyper =
      sgd ? std::vector<llvm::StringRef>{"lr", "momentum", "nesterov", "weight_decay"}
          : std::vector<llvm::StringRef>{"lr", "betas", "eps", "weight_decay"};
  std::vector<llvm::StringRef> fields = hyper;
  fields.insert(fields.end(), {"kind", "skip_nonfinite", "accumulate", "max_grad_norm",
                              "schedule", "groups"});
  if (!ctx.checkFields(j, p, fields, {"kind", "lr"}, "optimizer (" + kind + ")"))
    return false;
  if (j.contains("skip_nonfinite")) {
    if (!j["skip_nonfinite"].is_boolean()) {
      ctx.error(p + "/skip_nonfinite", "optimizer: 'skip_nonfinite' must be a boolean");
      return false;
    }
    out.skipNonFinite = j["skip_nonfinite"].get<bool>();
  }
  if (!readInteger(ctx, j, p, "accumulate", 1, 20, out.accumulate))
    return false;
  out.loc = ctx.at(p);
  if (out.kind == K::AdamW)
    out.weightDecay = 0.01; // torch.optim.AdamW's default.
  if (!readHyper(ctx, j, p, out) ||
      !readNumber(ctx, j, p, "max_grad_norm", 0, 1e30, false, out.maxGradNorm))
    return false;
  if (j.contains("schedule") && !readSchedule(ctx, j["schedule"], p + "/schedule", out))
    return false;
  if (j.contains("max_grad_norm") && out.maxGradNorm <= 0) {
    ctx.error(p + "/max_grad_norm", "optimizer: 'max_grad_norm' must be positive");
    return false;
  }
  if (j.contains("groups") && !readGroups(ctx, j["groups"], p + "/groups", hyper, out))
    return false;
  return true;
}
