"""Names from an ONNX model as the importer shows and keeps them: shown
with control characters escaped and long names cut (a name is the
model's text, never the terminal's), and made unique after the IR's
sanitizing (docs/onnx.md, Names)."""
import re
import unicodedata

from ..ir_builder import safe_name

SHOWN_NAME_CHARS = 200   # a name in a message is cut after this many
MESSAGE_CHARS = 4000     # a whole message is cut after this many
ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text):
    """`text` with control and format characters (newlines, ESC, bidi
    overrides, ...) written as escapes."""
    out = []
    for ch in text:
        if ch in ESCAPES:
            out.append(ESCAPES[ch])
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def shown(name, limit=SHOWN_NAME_CHARS):
    """`name` as a message shows it: escaped, cut to `limit` characters."""
    text = escape(str(name))
    return text if len(text) <= limit else text[:limit] + "..."


def printable(message):
    """A whole message made safe to print: control characters escaped,
    every quoted name longer than SHOWN_NAME_CHARS cut, the whole cut to
    MESSAGE_CHARS."""
    text = escape(str(message))
    text = re.sub(r"'([^']{%d,})'" % (SHOWN_NAME_CHARS + 1),
                  lambda m: "'" + m.group(1)[:SHOWN_NAME_CHARS] + "...'", text)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + "..."


def unique_names(names, taken=()):
    """{ONNX name: IR name} for `names` (in order), each IR name unique and
    not in `taken`: a name the IR can hold as it is keeps it; the others
    are sanitized (safe_name) and suffixed `_1`, `_2`, ... where needed.
    Deterministic: the same names give the same mapping."""
    used = set(taken)
    mapping = {}
    for n in names:
        if n not in mapping and safe_name(n) == n and n not in used:
            mapping[n] = n
            used.add(n)
    for n in names:
        if n in mapping:
            continue
        base = safe_name(n)[:240]
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        mapping[n] = name
        used.add(name)
    return mapping
