// The dynamic linker's cache, /etc/ld.so.cache (written by ldconfig), read as
// glibc's dl-cache.c reads it: the "glibc-ld.so.cache1.1" format, alone or
// after the old "ld.so-1.7.0" table. Each entry maps a library name (the
// SONAME ldconfig found) to a path, with flags that say which ABI it is for;
// the linker uses the first entry of its own ABI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::tools {

struct LdSoCacheEntry {
  std::string name;
  std::string path;
  int32_t flags = 0;
};

struct LdSoCache {
  bool readable = false;
  std::string error;  // missing, unreadable or malformed cache
  std::vector<LdSoCacheEntry> entries;
};

inline constexpr int32_t kCacheFlagElfLibc6 = 0x0003;
inline constexpr int32_t kCacheFlagX8664Lib64 = 0x0300;
inline constexpr int32_t kCacheFlagAarch64Lib64 = 0x0a00;

LdSoCache parseLdSoCache(const std::string& bytes);
LdSoCache readLdSoCache(const std::string& path);

// Whether an entry with `flags` is for this process's ABI (as _dl_cache_check_flags).
bool cacheFlagsMatchHost(int32_t flags);

// The flags ldconfig writes for a library of this host's ABI (tests write caches with it).
int32_t hostCacheFlags();

// Serializes entries in the new format, as ldconfig does (tests build caches with it).
std::string serializeLdSoCache(const std::vector<LdSoCacheEntry>& entries);

}  // namespace npusim::tools
