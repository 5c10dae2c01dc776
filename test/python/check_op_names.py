#!/usr/bin/env python3
"""The Python package keeps no list of cgc's ops or dtypes: every op name
its rules build and every dtype it writes must be in the compiler's table
(`cgc-opt --list-ops --emit=json`, generated from ir/Ops.def). Prints the
names it checked; exit status 1 naming any unknown one.

Usage: check_op_names.py TABLE.json
"""
import glob, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "python", "cgc")
sys.path.insert(0, os.path.join(PACKAGE, ".."))


def used_ops():
    """Op names in the front ends' sources (cgc/onnx, cgc/torch): the first
    string argument of every op(...) call, and the values of the one-to-one
    tables."""
    names = set()
    for f in glob.glob(os.path.join(PACKAGE, "onnx", "*.py")) + \
            glob.glob(os.path.join(PACKAGE, "torch", "*.py")):
        text = open(f).read()
        names.update(re.findall(r'\bop\(\s*"([a-z_0-9]+)"', text))
    from cgc.onnx import ops
    names.update(ops.UNARY.values())
    names.update(ops.BINARY.values())
    names.update(v for k, v in re.findall(r'"([a-z_]+)": "([a-z_]+)"',
                                          open(os.path.join(PACKAGE, "torch", "aten_rules.py")).read())
                 if not k.startswith("torch") and k != "dtype")  # (not {"dtype": "bool"})
    return names


def used_dtypes():
    """The IR names of cgc.dtypes, the one table both front ends map through."""
    from cgc import dtypes
    return {d.ir for d in dtypes.DTYPES}


def main():
    table = json.load(open(sys.argv[1]))
    ops = {o["name"] for o in table["ops"]}
    dtypes = set(table["dtypes"])
    bad = sorted(used_ops() - ops) + sorted(used_dtypes() - dtypes)
    print(f"checked {len(used_ops())} op names and {len(used_dtypes())} dtypes against "
          f"the compiler's {len(ops)} ops and {len(dtypes)} dtypes")
    for name in bad:
        print(f"error: '{name}' is not in the compiler's table")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
