#!/usr/bin/env bash
# wheel_test.sh BUILD_DIR : the wheel scripts/build-wheel.sh makes, installed
# into a fresh virtual environment (with the system's site-packages for
# NumPy and onnx) and used from outside the source tree: the package and
# its extension import from the environment, the bundled driver compiles an
# IR file and an ONNX model, a bad IR is refused with its diagnostic and no
# artifact, and an artifact loads (or, without a GPU, is refused with the
# runtime's "no CUDA device"). The wheel and cgc.__version__ carry
# project()'s version (CGC_VERSION, which ctest passes; else read from
# CMakeLists.txt here).
set -euo pipefail
BUILD=$(cd "${1:?usage: wheel_test.sh BUILD_DIR}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${CGC_VERSION:-$(sed -n 's/^project(cgc VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel=$(bash "$ROOT/scripts/build-wheel.sh" "$BUILD" "$work/dist")
case "$(basename "$wheel")" in
  "cgc-$VERSION-"*) echo "wheel: $(basename "$wheel")" ;;
  *) echo "wheel: $(basename "$wheel") is not version $VERSION" >&2; exit 1 ;;
esac
PY=${CGC_PYTHON:-python3}  # the Python the extension is built for
"$PY" -m venv --system-site-packages "$work/env"
"$work/env/bin/python" -m pip install -q --no-deps --disable-pip-version-check "$wheel"
cd "$work"
env -u PYTHONPATH -u CGC "$work/env/bin/python" - "$ROOT" "$work" "$VERSION" <<'PY'
import os, subprocess, sys
root, work, version = sys.argv[1], sys.argv[2], sys.argv[3]
import cgc
from cgc import _native
assert cgc.__file__.startswith(os.path.join(work, "env")), cgc.__file__
assert cgc.__version__ == version, (cgc.__version__, version)
# The subpackages are in the wheel (cgc.torch imports without torch).
import cgc.onnx.cli, cgc.torch.export, cgc.dtypes, cgc.errors
for sub in (cgc.onnx, cgc.torch):
    assert sub.__file__.startswith(os.path.join(work, "env")), sub.__file__
assert cgc.CgcError is _native.CgcError and cgc.RefusedError is cgc.errors.RefusedError
bundled = os.path.join(os.path.dirname(cgc.__file__), "bin", "cgc")
if os.path.exists(bundled):
    said = subprocess.run([bundled, "--version"], capture_output=True, text=True).stdout
    assert said == f"cgc {version}\n", said
print("wheel: cgc.__version__", cgc.__version__)
print("wheel: cgc", cgc.__file__, "runtime ABI", _native.abi_version())
art = cgc.compile_file(os.path.join(root, "examples", "mlp8_infer_b1.json"), "mlp.cgc")
assert os.path.getsize(art) > 0
with open("bad.json", "w") as f:
    f.write('{"format_version": 1, "name": "bad", "inputs": [], "nodes": [\n'
            ' {"name": "y", "op": "no_such_op", "inputs": []}], "outputs": ["y"]}\n')
try:
    cgc.compile_file("bad.json", "bad.cgc")
    sys.exit("wheel: a bad IR compiled")
except _native.CgcError as e:
    assert "error:" in str(e) and "no_such_op" in str(e), str(e)
    assert not os.path.exists("bad.cgc")
    print("wheel: refused:", str(e).splitlines()[0])
try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    print("wheel: onnx is not installed: the ONNX import is not checked")
else:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "relu.onnx")
    assert os.path.getsize(cgc.compile_file("relu.onnx", "relu.cgc")) > 0
    print("wheel: relu.onnx compiled by the bundled driver")
try:
    _native.Runner(art, 0)
    print("wheel: the artifact loaded on the GPU")
except _native.CgcError as e:
    assert "no CUDA device" in str(e), str(e)
    print("wheel: without a GPU, loading says:", e)
PY
