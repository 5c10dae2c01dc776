//===- Interpolation.cpp - interpolate's source taps ----------------------===//
//
// ONNX Resize's coordinate rules, with scale = out / in unless `scales`
// gives it and the resized length r = in * scale (out but for a scale
// that does not divide): half_pixel (o + 0.5) / scale - 0.5;
// pytorch_half_pixel the same but 0 where r <= 1; align_corners o * (in -
// 1) / (r - 1) (0 where r <= 1); asymmetric o / scale;
// tf_half_pixel_for_nearest (o + 0.5) / scale. Nearest rounds that source coordinate by `nearest`
// (round_prefer_floor, round_prefer_ceil, floor, ceil); linear clamps it
// to [0, in - 1] and mixes its floor and the next index. Indices are
// clamped to [0, in - 1].
//
//===----------------------------------------------------------------------===//
#include "ir/Interpolation.h"

#include <algorithm>
#include <cmath>

using namespace cgc;

static const char *const Coordinates[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                          "asymmetric", "tf_half_pixel_for_nearest"};
static const char *const Roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                        "ceil"};

static bool oneOf(const std::string &s, llvm::ArrayRef<const char *> names) {
  return std::find_if(names.begin(), names.end(), [&](const char *n) { return s == n; }) !=
         names.end();
}

static std::vector<double> scalesOf(const Node &n) {
  const Attribute *a = n.attr("scales");
  if (auto *v = a ? std::get_if<std::vector<double>>(a) : nullptr)
    return *v;
  return {};
}

bool InterpolationTaps::isIdentity(int64_t in) const {
  if (int64_t(low.size()) != in)
    return false;
  for (size_t o = 0; o < low.size(); ++o)
    if (low[o] != int64_t(o) || weight[o] != 0)
      return false;
  return true;
}

bool cgc::checkInterpolation(const Node &n, const std::vector<int64_t> &in, std::string &why) {
  std::vector<int64_t> sizes = n.intsAttr("sizes");
  std::string mode = n.strAttr("mode", "nearest");
  std::vector<double> scales = scalesOf(n);
  constexpr int64_t kMost = (int64_t(1) << 31) - 1;
  if (sizes.size() != in.size())
    why = "attribute 'sizes' must have one size per spatial dim (" +
          std::to_string(in.size()) + ")";
  else if (std::any_of(sizes.begin(), sizes.end(),
                       [](int64_t s) { return s < 1 || s > kMost; }))
    why = "attribute 'sizes' must hold sizes from 1 to 2^31 - 1";
  else if (std::any_of(in.begin(), in.end(), [](int64_t d) { return d < 1; }))
    why = "interpolate needs spatial dims of at least 1";
  else if (mode != "nearest" && mode != "linear")
    why = "attribute 'mode' must be nearest or linear, got '" + mode + "'";
  else if (!oneOf(n.strAttr("coordinate", "half_pixel"), Coordinates))
    why = "attribute 'coordinate' must be one of half_pixel, pytorch_half_pixel, "
          "align_corners, asymmetric, tf_half_pixel_for_nearest";
  else if (!oneOf(n.strAttr("nearest", "round_prefer_floor"), Roundings))
    why = "attribute 'nearest' must be one of round_prefer_floor, round_prefer_ceil, "
          "floor, ceil";
  else if (!scales.empty() &&
           (scales.size() != in.size() ||
            std::any_of(scales.begin(), scales.end(), [](double s) { return !(s > 0); })))
    why = "attribute 'scales' must hold one positive scale per spatial dim";
  return why.empty();
}

static double sourceCoordinate(const std::string &rule, int64_t o, int64_t in, double scale) {
  double x = double(o), resized = double(in) * scale;
  if (rule == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (rule == "pytorch_half_pixel")
    return resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (rule == "align_corners")
    return resized > 1 ? x * double(in - 1) / (resized - 1) : 0.0;
  if (rule == "asymmetric")
    return x / scale;
  return (x + 0.5) / scale; // tf_half_pixel_for_nearest
}

static double rounded(const std::string &rule, double x) {
  if (rule == "floor")
    return std::floor(x);
  if (rule == "ceil")
    return std::ceil(x);
  if (rule == "round_prefer_ceil")
    return std::floor(x + 0.5);
  return std::ceil(x - 0.5); // round_prefer_floor
}

InterpolationTaps cgc::interpolationTaps(const Node &n, size_t a, int64_t in) {
  int64_t out = n.intsAttr("sizes")[a];
  std::vector<double> scales = scalesOf(n);
  double scale = scales.empty() ? double(out) / double(in) : scales[a];
  std::string coordinate = n.strAttr("coordinate", "half_pixel");
  std::string nearest = n.strAttr("nearest", "round_prefer_floor");
  bool linear = n.strAttr("mode", "nearest") == "linear";
  auto clamp = [&](double i) { return std::min(std::max(i, 0.0), double(in - 1)); };
  InterpolationTaps taps;
  for (int64_t o = 0; o < out; ++o) {
    double x = sourceCoordinate(coordinate, o, in, scale);
    if (!linear) {
      taps.low.push_back(int64_t(clamp(rounded(nearest, x))));
      taps.high.push_back(taps.low.back());
      taps.weight.push_back(0.0);
      continue;
    }
    x = clamp(x);
    int64_t low = int64_t(std::floor(x));
    taps.low.push_back(low);
    taps.high.push_back(std::min(low + 1, in - 1));
    taps.weight.push_back(x - double(low));
  }
  return taps;
}
