#!/usr/bin/env bash
# build-wheel.sh BUILD_DIR [DIST_DIR] : packs the package's Python modules
# (python/cgc), the runtime's extension the build made (BUILD_DIR/python/cgc/
# _native*.so), the version file CMake wrote (BUILD_DIR/python/cgc/
# _version.py: project()'s version, the wheel's and cgc.__version__) and the
# `cgc` driver (as cgc/bin/cgc) into a wheel in DIST_DIR (default
# BUILD_DIR/dist); prints its path.
#   pip install BUILD_DIR/dist/cgc-*.whl
# The driver links NVRTC (libnvrtc.so.13: the CUDA Toolkit, or PyPI's
# nvidia-cuda-nvrtc wheel); the extension loads the CUDA driver, and
# cuBLASLt for artifacts with matrix products, when it runs. CGC_DRIVER
# overrides the driver's path (a runtime-only build has none: the wheel then
# only loads and calls artifacts).
set -euo pipefail
BUILD=$(cd "${1:?usage: build-wheel.sh BUILD_DIR [DIST_DIR]}" && pwd)
DIST=${2:-$BUILD/dist}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${CGC_PYTHON:-python3}
natives=("$BUILD"/python/cgc/_native*.so)
[ -e "${natives[0]}" ] ||
  { echo "build-wheel: no $BUILD/python/cgc/_native*.so: build with nanobind installed" >&2; exit 1; }
[ ${#natives[@]} -eq 1 ] ||
  { echo "build-wheel: several extensions in $BUILD/python/cgc (${natives[*]}): remove the stale" >&2; exit 1; }
[ -f "$BUILD/python/cgc/_version.py" ] ||
  { echo "build-wheel: no $BUILD/python/cgc/_version.py: configure the build with CMake" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$ROOT/python/pyproject.toml" "$ROOT/python/setup.py" "$stage/"
mkdir "$stage/cgc"
# The package's modules and its subpackages (cgc/onnx, cgc/torch), without
# caches (pyproject.toml finds the packages).
(cd "$ROOT/python" && find cgc -name '*.py' -exec cp --parents {} "$stage/" \;)
cp "${natives[0]}" "$BUILD/python/cgc/_version.py" "$stage/cgc/"
driver=${CGC_DRIVER:-$BUILD/tools/cgc}
if [ -x "$driver" ]; then
  mkdir -p "$stage/cgc/bin" && cp "$driver" "$stage/cgc/bin/cgc"
fi
mkdir -p "$DIST"
rm -f "$DIST"/cgc-*.whl
"$PY" -m pip wheel --no-deps --no-build-isolation --disable-pip-version-check -q -w "$DIST" \
  "$stage" >&2
# The tags of the Python the extension is built for (not of the one that
# packed it): _native.cpython-312-*.so is cp312-cp312, _native.abi3.so
# (a stable-ABI build: Python 3.12 or later, CMake 3.26 or later) cp312-abi3.
native=$(basename "${natives[0]}")
case "$native" in
  _native.abi3.so) tags=(--python-tag cp312 --abi-tag abi3) ;;
  _native.cpython-*) v=${native#_native.cpython-}; v=${v%%-*}; tags=(--python-tag "cp$v" --abi-tag "cp$v") ;;
  *) echo "build-wheel: cannot tell the Python of $native" >&2; exit 1 ;;
esac
"$PY" -m wheel tags --remove "${tags[@]}" "$DIST"/cgc-*.whl >/dev/null
ls "$DIST"/cgc-*.whl
