#!/usr/bin/env python3
"""Fails if a switch over OpKind, OpFamily or DType has a `default:`.

Such switches list their cases (the ops outside a family as unreachable,
the idiom of ir/Ops.def's header), so that -Werror=switch makes a new op,
family or dtype an error until each switch handles it; a default would let
it through silently.

    scripts/check-switch-defaults.py [DIR...]   (default: ir target passes codegen driver)

A heuristic over the source text, not a parser. Comments, string and
character literals are blanked first; then each braced `switch (...) { }`
is matched with its own `default:` labels (those of a switch nested inside
belong to that one). A switch counts as one over these enums when a case
label names `OpKind::X` or `DType::X` or is an OpFamily enumerator (read
from ir/Ops.h), or when its condition names getOp(), family, OpKind or
DType. Its limits: a `default:` or case labels that only a macro expands
to are not seen (a switch whose labels all come from Ops.def and whose
condition names none of the above is not recognized); a switch without
braces is skipped; both sides of an #if are read.
"""
import bisect
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXTENSIONS = {".cpp", ".h", ".def", ".inc"}
TOKEN = re.compile(r"[A-Za-z_]\w*|::|\S")
CONDITION = re.compile(r"\bgetOp\s*\(|\bfamily\b|\bOpKind\b|\bDType\b")


def blank_comments_and_literals(text):
    """The text with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == '"' and i > 0 and text[i - 1] == "R":
            # A raw string R"delim( ... )delim" (the CUDA prelude's).
            open_paren = text.find("(", i)
            close = ")" + text[i + 1:open_paren] + '"'
            j = text.find(close, open_paren)
            j = n if j < 0 or open_paren < 0 else j + len(close)
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def op_families():
    header = (ROOT / "ir" / "Ops.h").read_text()
    body = re.search(r"enum\s+OpFamily\b[^{]*\{(.*?)\}", header, re.S)
    if not body:
        sys.exit("check-switch-defaults: no `enum OpFamily` in ir/Ops.h")
    text = blank_comments_and_literals(body.group(1))
    return set(re.findall(r"\b([A-Za-z_]\w*)\b", text))


def check(path, families):
    text = blank_comments_and_literals(path.read_text(errors="replace"))
    newlines = [m.start() for m in re.finditer("\n", text)]
    tokens = [(m.group(), bisect.bisect(newlines, m.start()) + 1)
              for m in TOKEN.finditer(text)]
    findings = []
    stack = []  # Open switches: [depth of their body, line, enum?, defaults]
    depth = 0
    i = 0
    while i < len(tokens):
        tok, line = tokens[i]
        if tok == "switch" and i + 1 < len(tokens) and tokens[i + 1][0] == "(":
            j, parens = i + 1, 0
            while j < len(tokens):
                parens += {"(": 1, ")": -1}.get(tokens[j][0], 0)
                if parens == 0:
                    break
                j += 1
            condition = " ".join(t for t, _ in tokens[i + 2:j])
            if j + 1 < len(tokens) and tokens[j + 1][0] == "{":
                depth += 1
                stack.append([depth, line, bool(CONDITION.search(condition)), []])
                i = j + 2
                continue
            i = j + 1
            continue
        if tok == "{":
            depth += 1
        elif tok == "}":
            if stack and stack[-1][0] == depth:
                _, at, enum, defaults = stack.pop()
                if enum:
                    findings += [(d, at) for d in defaults]
            depth -= 1
        elif tok == "case" and stack:
            j = i + 1
            label = []
            while j < len(tokens) and tokens[j][0] != ":":
                label.append(tokens[j][0])
                j += 1
            joined = "".join(label)
            if (re.match(r"(cgc::)?(OpKind|DType)::\w+$", joined) or
                    (len(label) == 1 and label[0] in families)):
                stack[-1][2] = True
        elif (tok == "default" and stack and i + 1 < len(tokens) and
              tokens[i + 1][0] == ":"):
            stack[-1][3].append(line)
        i += 1
    return [(path, d, at) for d, at in findings]


def main(argv):
    dirs = argv[1:] or ["ir", "target", "passes", "codegen", "driver"]
    families = op_families()
    findings = []
    for d in dirs:
        base = pathlib.Path(d)
        base = base if base.is_absolute() else ROOT / base
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in files:
            if path.suffix in EXTENSIONS and path.is_file():
                findings += check(path, families)
    for path, line, at in findings:
        try:
            shown = path.relative_to(ROOT)
        except ValueError:
            shown = path
        print(f"{shown}:{line}: `default:` in the switch of line {at} over "
              "OpKind, OpFamily or DType: list the cases instead (the ops "
              "outside a family as unreachable, see ir/Ops.def)",
              file=sys.stderr)
    if findings:
        return 1
    print(f"check-switch-defaults: no default in a switch over OpKind, "
          f"OpFamily or DType in {', '.join(dirs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
