//===- JsonScanner.cpp - Validating JSON scanner with offsets ---------------===//
#include "ir/JsonScanner.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace cgc;

uint32_t JsonOffsets::value(llvm::StringRef pointer) const {
  while (true) {
    auto it = values.find(pointer);
    if (it != values.end())
      return it->second;
    if (pointer.empty())
      return 0;
    pointer = pointer.rsplit('/').first;
  }
}

uint32_t JsonOffsets::key(llvm::StringRef pointer) const {
  auto it = keys.find(pointer);
  return it != keys.end() ? it->second : value(pointer);
}

std::string cgc::escapePointerToken(llvm::StringRef key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

namespace {
class Scanner {
public:
  Scanner(llvm::StringRef text, bool allowComments, unsigned maxDepth,
          uint64_t maxValues, JsonOffsets &offsets)
      : text(text), allowComments(allowComments), maxDepth(maxDepth),
        maxValues(maxValues), offsets(offsets) {}

  llvm::Optional<JsonSyntaxError> run() {
    skipSpace();
    if (failed)
      return error;
    if (pos == text.size())
      return fail("expected a JSON value, found the end of the file");
    std::string pointer;
    if (!scanValue(pointer, 0))
      return error;
    skipSpace();
    if (!failed && pos != text.size())
      fail("unexpected text after the JSON value");
    return failed ? llvm::Optional<JsonSyntaxError>(error) : llvm::None;
  }

private:
  llvm::Optional<JsonSyntaxError> fail(const std::string &message) {
    return failAt(pos, message);
  }
  llvm::Optional<JsonSyntaxError> failAt(size_t at, const std::string &msg) {
    if (!failed)
      error = {uint32_t(std::min(at, text.size())), msg};
    failed = true;
    return error;
  }

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipSpace() {
    while (!atEnd()) {
      char c = text[pos];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos;
      } else if (c == '/' && allowComments && pos + 1 < text.size() &&
                 text[pos + 1] == '/') {
        while (!atEnd() && text[pos] != '\n')
          ++pos;
      } else if (c == '/' && allowComments && pos + 1 < text.size() &&
                 text[pos + 1] == '*') {
        size_t end = text.find("*/", pos + 2);
        if (end == llvm::StringRef::npos) {
          fail("unterminated comment");
          return;
        }
        pos = end + 2;
      } else {
        return;
      }
    }
  }

  bool scanValue(const std::string &pointer, unsigned depth) {
    if (++values > maxValues) {
      fail("more than " + std::to_string(maxValues) +
           " JSON values in one file (cgc's limit, about a million nodes)");
      return false;
    }
    offsets.setValue(pointer, pos);
    char c = peek();
    if (c == '{' || c == '[') {
      if (depth >= maxDepth) {
        fail("JSON nesting deeper than " + std::to_string(maxDepth) +
             " levels");
        return false;
      }
      return c == '{' ? scanObject(pointer, depth + 1)
                      : scanArray(pointer, depth + 1);
    }
    if (c == '"') {
      std::string ignored;
      return scanString(ignored);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return scanNumber();
    for (llvm::StringRef word : {"true", "false", "null"}) {
      if (text.substr(pos).startswith(word)) {
        pos += word.size();
        return true;
      }
    }
    if (atEnd())
      fail("expected a JSON value, found the end of the file");
    else
      fail(std::string("invalid JSON: unexpected character '") +
           printable(c) + "'");
    return false;
  }

  static std::string printable(char c) {
    if (c >= 0x20 && c < 0x7f)
      return std::string(1, c);
    char buf[8];
    snprintf(buf, sizeof buf, "\\x%02x", unsigned(uint8_t(c)));
    return buf;
  }

  bool expect(char c, const char *what) {
    skipSpace();
    if (failed)
      return false;
    if (peek() != c) {
      fail(std::string("invalid JSON: expected ") + what +
           (atEnd() ? ", found the end of the file"
                    : std::string(", found '") + printable(peek()) + "'"));
      return false;
    }
    ++pos;
    return true;
  }

  bool scanObject(const std::string &pointer, unsigned depth) {
    ++pos; // '{'
    skipSpace();
    if (peek() == '}') {
      ++pos;
      return true;
    }
    llvm::StringMap<uint32_t> seen;
    while (true) {
      skipSpace();
      if (failed)
        return false;
      if (peek() != '"') {
        fail(atEnd() ? "invalid JSON: unterminated object"
                     : "invalid JSON: expected a string key");
        return false;
      }
      size_t keyPos = pos;
      std::string key;
      if (!scanString(key))
        return false;
      auto inserted = seen.try_emplace(key, uint32_t(keyPos));
      if (!inserted.second) {
        std::string shown;
        for (char k : key)
          shown += uint8_t(k) < 0x20 ? "\\u00" + printable(k).substr(2)
                                     : std::string(1, k);
        failAt(keyPos, "duplicate key '" + shown + "'");
        error.previousOffset = inserted.first->second;
        return false;
      }
      std::string child = pointer + "/" + escapePointerToken(key);
      offsets.setKey(child, keyPos);
      if (!expect(':', "':' after an object key"))
        return false;
      skipSpace();
      if (failed || !scanValue(child, depth))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      return expect('}', "',' or '}' in an object");
    }
  }

  bool scanArray(const std::string &pointer, unsigned depth) {
    ++pos; // '['
    skipSpace();
    if (peek() == ']') {
      ++pos;
      return true;
    }
    for (size_t index = 0;; ++index) {
      skipSpace();
      if (failed || !scanValue(pointer + "/" + std::to_string(index), depth))
        return false;
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      return expect(']', "',' or ']' in an array");
    }
  }

  bool scanString(std::string &out) {
    size_t start = pos++;
    while (!atEnd()) {
      char c = text[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (uint8_t(c) < 0x20) {
        fail("invalid JSON: control character in a string");
        return false;
      }
      if (c == '\\') {
        if (!scanEscape(out))
          return false;
        continue;
      }
      out += c;
      ++pos;
    }
    failAt(start, "invalid JSON: unterminated string");
    return false;
  }

  bool scanHex4(unsigned &code) {
    if (pos + 4 > text.size() ||
        !llvm::all_of(text.substr(pos, 4), llvm::isHexDigit)) {
      fail("invalid JSON: '\\u' must be followed by four hex digits");
      return false;
    }
    text.substr(pos, 4).getAsInteger(16, code);
    pos += 4;
    return true;
  }

  static void appendUtf8(unsigned code, std::string &out) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xC0 | (code >> 6));
      out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += char(0xE0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    } else {
      out += char(0xF0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3F));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    }
  }

  bool scanEscape(std::string &out) {
    ++pos;
    char e = peek();
    switch (e) {
    case '"': case '\\': case '/': out += e; ++pos; return true;
    case 'b': out += '\b'; ++pos; return true;
    case 'f': out += '\f'; ++pos; return true;
    case 'n': out += '\n'; ++pos; return true;
    case 'r': out += '\r'; ++pos; return true;
    case 't': out += '\t'; ++pos; return true;
    case 'u': {
      ++pos;
      unsigned code;
      if (!scanHex4(code))
        return false;
      // Decode as nlohmann_json does, so keys compare and locate alike.
      if (code >= 0xDC00 && code <= 0xDFFF) {
        failAt(pos - 6, "invalid JSON: lone UTF-16 surrogate in a '\\u' "
                        "escape");
        return false;
      }
      if (code >= 0xD800 && code <= 0xDBFF) {
        unsigned low = 0;
        if (!text.substr(pos).startswith("\\u")) {
          failAt(pos - 6, "invalid JSON: lone UTF-16 surrogate in a '\\u' "
                          "escape");
          return false;
        }
        pos += 2;
        if (!scanHex4(low))
          return false;
        if (low < 0xDC00 || low > 0xDFFF) {
          failAt(pos - 12, "invalid JSON: lone UTF-16 surrogate in a '\\u' "
                           "escape");
          return false;
        }
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      appendUtf8(code, out);
      return true;
    }
    default:
      fail("invalid JSON: invalid escape sequence in a string");
      return false;
    }
  }

  bool scanNumber() {
    size_t start = pos;
    if (peek() == '-')
      ++pos;
    if (peek() == '0') {
      ++pos;
    } else if (peek() >= '1' && peek() <= '9') {
      while (llvm::isDigit(peek()))
        ++pos;
    } else {
      fail("invalid JSON: malformed number");
      return false;
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos;
      if (!llvm::isDigit(peek())) {
        fail("invalid JSON: malformed number");
        return false;
      }
      while (llvm::isDigit(peek()))
        ++pos;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (!llvm::isDigit(peek())) {
        fail("invalid JSON: malformed number");
        return false;
      }
      while (llvm::isDigit(peek()))
        ++pos;
    }
    std::string literal = text.substr(start, pos - start).str();
    errno = 0;
    double value = std::strtod(literal.c_str(), nullptr);
    if (std::isinf(value) || (!integral && errno == ERANGE && value != 0)) {
      failAt(start, "number out of range: " + literal);
      return false;
    }
    return true;
  }

  llvm::StringRef text;
  bool allowComments;
  unsigned maxDepth;
  uint64_t maxValues;
  uint64_t values = 0;
  JsonOffsets &offsets;
  size_t pos = 0;
  bool failed = false;
  JsonSyntaxError error{0, ""};
};
} // namespace

llvm::Optional<JsonSyntaxError> cgc::scanJson(llvm::StringRef text,
                                              bool allowComments,
                                              unsigned maxDepth,
                                              uint64_t maxValues,
                                              JsonOffsets &offsets) {
  return Scanner(text, allowComments, maxDepth, maxValues, offsets).run();
}
