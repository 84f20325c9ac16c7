#include "tools/LdSoCache.h"

#include <cstring>

#include "tools/BoundedFile.h"

namespace npusim::tools {

namespace {

constexpr char kNewMagic[] = "glibc-ld.so.cache";
constexpr char kNewVersion[] = "1.1";
constexpr char kOldMagic[] = "ld.so-1.7.0";
constexpr size_t kNewHeaderSize = 48;  // magic 17, version 3, nlibs, len_strings, flags+pad, extension, unused[3]
constexpr size_t kNewEntrySize = 24;   // flags, key, value, osversion, hwcap (8)
constexpr size_t kOldEntrySize = 12;   // flags, key, value
constexpr uint64_t kMaxCacheBytes = 64 << 20;

uint32_t load32(const std::string& bytes, size_t at) {
  uint32_t value;
  std::memcpy(&value, bytes.data() + at, 4);
  return value;  // the cache is in the host's byte order
}

std::string stringAt(const std::string& bytes, size_t base, uint32_t offset) {
  const size_t at = base + offset;
  if (at >= bytes.size()) return "";
  const size_t end = bytes.find('\0', at);
  return bytes.substr(at, (end == std::string::npos ? bytes.size() : end) - at);
}

}  // namespace

int32_t hostCacheFlags() {
#if defined(__x86_64__)
  return kCacheFlagElfLibc6 | kCacheFlagX8664Lib64;
#elif defined(__aarch64__)
  return kCacheFlagElfLibc6 | kCacheFlagAarch64Lib64;
#else
  return kCacheFlagElfLibc6;
#endif
}

bool cacheFlagsMatchHost(int32_t flags) { return flags == hostCacheFlags(); }

LdSoCache parseLdSoCache(const std::string& bytes) {
  LdSoCache cache;
  size_t newStart = std::string::npos;
  if (bytes.size() >= kNewHeaderSize && std::memcmp(bytes.data(), kNewMagic, 17) == 0) {
    newStart = 0;
  } else if (bytes.size() >= 16 && std::memcmp(bytes.data(), kOldMagic, 11) == 0) {
    // Old table first: header of 16 bytes (magic 11, padding to 12, nlibs), then its entries,
    // then the new table aligned to its natural alignment (8 bytes).
    const uint32_t oldCount = load32(bytes, 12);
    const uint64_t end = 16 + uint64_t(oldCount) * kOldEntrySize;
    const uint64_t aligned = (end + 7) & ~uint64_t(7);
    if (aligned + kNewHeaderSize <= bytes.size() && std::memcmp(bytes.data() + aligned, kNewMagic, 17) == 0) {
      newStart = aligned;
    } else {
      cache.error = "old-format ld.so.cache without the glibc 1.1 table (not read)";
      return cache;
    }
  } else {
    cache.error = "not an ld.so.cache file";
    return cache;
  }
  if (std::memcmp(bytes.data() + newStart + 17, kNewVersion, 3) != 0) {
    cache.error = "unknown ld.so.cache version";
    return cache;
  }
  const uint32_t count = load32(bytes, newStart + 20);
  if (uint64_t(count) * kNewEntrySize > bytes.size() - newStart - kNewHeaderSize) {
    cache.error = "truncated ld.so.cache (" + std::to_string(count) + " entries announced)";
    return cache;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = newStart + kNewHeaderSize + size_t(i) * kNewEntrySize;
    LdSoCacheEntry entry;
    entry.flags = static_cast<int32_t>(load32(bytes, at));
    // String offsets are relative to the start of the new table.
    entry.name = stringAt(bytes, newStart, load32(bytes, at + 4));
    entry.path = stringAt(bytes, newStart, load32(bytes, at + 8));
    cache.entries.push_back(std::move(entry));
  }
  cache.readable = true;
  return cache;
}

LdSoCache readLdSoCache(const std::string& path) {
  const BoundedRead read = readBounded(path, kMaxCacheBytes);
  if (!read.ok) {
    LdSoCache cache;
    cache.error = path + ": " + read.error;
    return cache;
  }
  LdSoCache cache = parseLdSoCache(read.content);
  if (!cache.error.empty()) cache.error = path + ": " + cache.error;
  return cache;
}

std::string serializeLdSoCache(const std::vector<LdSoCacheEntry>& entries) {
  std::string strings;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  const size_t stringsStart = kNewHeaderSize + entries.size() * kNewEntrySize;
  for (const auto& entry : entries) {
    const uint32_t key = static_cast<uint32_t>(stringsStart + strings.size());
    strings += entry.name;
    strings += '\0';
    const uint32_t value = static_cast<uint32_t>(stringsStart + strings.size());
    strings += entry.path;
    strings += '\0';
    offsets.emplace_back(key, value);
  }
  std::string bytes(kNewHeaderSize, '\0');
  std::memcpy(bytes.data(), kNewMagic, 17);
  std::memcpy(bytes.data() + 17, kNewVersion, 3);
  const auto put32 = [&bytes](size_t at, uint32_t value) { std::memcpy(bytes.data() + at, &value, 4); };
  put32(20, static_cast<uint32_t>(entries.size()));
  put32(24, static_cast<uint32_t>(strings.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string entry(kNewEntrySize, '\0');
    const uint32_t flags = static_cast<uint32_t>(entries[i].flags);
    std::memcpy(entry.data(), &flags, 4);
    std::memcpy(entry.data() + 4, &offsets[i].first, 4);
    std::memcpy(entry.data() + 8, &offsets[i].second, 4);
    bytes += entry;
  }
  bytes += strings;
  return bytes;
}

}  // namespace npusim::tools
