#!/usr/bin/env bash
# The main job on an example: set up, build, compile examples/gelu_small.json
# into an artifact and print its manifest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target cgc cgc-opt
./build/tools/cgc examples/gelu_small.json
if ./build/tools/cgc --help | grep -q -- '--dump-artifact'; then
  rm -f build/gelu_small.cgc
  ./build/tools/cgc examples/gelu_small.json -o build/gelu_small.cgc
  ./build/tools/cgc --dump-artifact build/gelu_small.cgc
fi
