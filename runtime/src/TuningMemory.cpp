//===- TuningMemory.cpp - Tuning choices remembered across loads ----------===//
#include "TuningMemory.h"

#include "format/ArtifactFormat.h"
#include "format/CacheFolder.h"
#include "format/FileIO.h"

#include <cctype>
#include <cstdio>
#include <sys/stat.h>
#include <vector>

namespace cgc {
namespace rt {
namespace {

constexpr uint64_t kMaxFileBytes = uint64_t(16) << 20; // Far past any use.

std::string checksumOf(const std::string &key, const std::string &value) {
  std::string line = key + "\t" + value;
  uint64_t hash =
      format::fnv1a64(reinterpret_cast<const uint8_t *>(line.data()), line.size());
  return toHex(&hash, sizeof hash);
}

/// The choices of the file at \p path whose lines parse and check.
std::map<std::string, std::string> readChoices(const std::string &path) {
  std::map<std::string, std::string> choices;
  std::vector<uint8_t> bytes;
  std::string error;
  if (!format::readFileBounded(path, bytes, error, kMaxFileBytes))
    return choices;
  std::string text(bytes.begin(), bytes.end());
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos)
      break; // A last line without its newline was cut short: ignored.
    std::string line = text.substr(start, end - start);
    size_t space = line.find(' '), tab = line.find('\t');
    if (space == std::string::npos || tab == std::string::npos || tab < space)
      continue;
    std::string key = line.substr(space + 1, tab - space - 1),
                value = line.substr(tab + 1);
    if (line.compare(0, space, checksumOf(key, value)) == 0)
      choices[key] = value;
  }
  return choices;
}

/// A file name's part from \p text: letters, digits and '-', the rest '-'.
std::string fileNamePart(const std::string &text) {
  std::string out;
  for (char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '-';
  return out;
}

} // namespace

std::string toHex(const void *data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  const auto *bytes = static_cast<const uint8_t *>(data);
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

bool fromHex(const std::string &hex, void *data, size_t size) {
  if (hex.size() != 2 * size)
    return false;
  auto digit = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  auto *bytes = static_cast<uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    int high = digit(hex[2 * i]), low = digit(hex[2 * i + 1]);
    if (high < 0 || low < 0)
      return false;
    bytes[i] = uint8_t(high << 4 | low);
  }
  return true;
}

TuningMemory TuningMemory::fromFile(std::string path) {
  TuningMemory memory;
  memory.choices = readChoices(path);
  memory.path = std::move(path);
  return memory;
}

TuningMemory TuningMemory::forDevice(const std::string &device, int major,
                                     int minor, int driverVersion) {
  std::string folder = format::cacheFolderFromEnvironment(), why;
  if (folder.empty())
    return TuningMemory();
  // A folder that exists must be private, the cache folder and tuning/
  // both (else another user could plant choices); a missing one is made
  // by save(), when there is something to keep.
  struct stat st;
  for (const std::string &dir : {folder, folder + "/tuning"})
    if (::stat(dir.c_str(), &st) == 0 && !format::isPrivateFolder(dir, why))
      return TuningMemory();
  TuningMemory memory =
      fromFile(folder + "/tuning/" + fileNamePart(device) + "-sm" +
               std::to_string(major) + std::to_string(minor) + "-driver" +
               std::to_string(driverVersion) + ".txt");
  memory.folders = {folder, folder + "/tuning"};
  return memory;
}

const std::string *TuningMemory::recall(const std::string &key) const {
  auto it = choices.find(key);
  return it == choices.end() ? nullptr : &it->second;
}

void TuningMemory::remember(const std::string &key, const std::string &value) {
  if (path.empty() || key.find_first_of("\t\n") != std::string::npos ||
      value.find_first_of("\t\n") != std::string::npos)
    return;
  choices[key] = value;
  fresh[key] = value;
}

void TuningMemory::save() {
  if (path.empty() || fresh.empty())
    return;
  std::string why;
  for (const std::string &folder : folders)
    if (!format::ensurePrivateFolder(folder, why))
      return;
  std::map<std::string, std::string> merged = readChoices(path);
  for (const auto &[key, value] : fresh)
    merged[key] = value;
  std::string text;
  for (const auto &[key, value] : merged)
    text += checksumOf(key, value) + " " + key + "\t" + value + "\n";
  std::string error;
  if (format::writeFileReplacing(path, text.data(), text.size(),
                                 /*overwrite=*/true, error))
    fresh.clear();
}

} // namespace rt
} // namespace cgc
