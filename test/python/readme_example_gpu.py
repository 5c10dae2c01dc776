#!/usr/bin/env python3
"""The README's PyTorch example, run as a user would paste it: the indented
block under "## From PyTorch", executed in a fresh folder with the `cgc`
package on the path (the installed wheel in scripts/gpu-run.sh). Exit 1 if
it raises (its assert_close compares the callable with the module); 77
without PyTorch or a GPU.

Usage: readme_example_gpu.py [README]
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cuda_torch import SKIPPED, cuda_torch  # noqa: E402


def example(readme):
    """The first indented block after the "## From PyTorch" heading."""
    lines = open(readme).read().split("## From PyTorch", 1)[1].splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("    "))
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip() + "\n"


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "README.md")
    code = example(readme)
    torch = cuda_torch()
    if torch is None:
        return SKIPPED
    os.chdir(tempfile.mkdtemp(prefix="cgc-readme-"))
    try:
        exec(compile(code, "README.md (From PyTorch)", "exec"), {"__name__": "__main__"})
    except Exception as e:  # noqa: BLE001 - the example failed: say how
        print(f"FAIL README example: {type(e).__name__}: {e}")
        return 1
    print(f"OK README example ({len(code.splitlines())} lines) ran and matched the module")
    return 0


if __name__ == "__main__":
    sys.exit(main())
