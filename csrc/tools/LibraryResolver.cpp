#include "tools/LibraryResolver.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "tools/BoundedFile.h"
#include "tools/LdSoCache.h"

namespace npusim::tools {

namespace {

std::vector<std::string> splitSearchPath(const std::string& text) {
  // ld.so splits LD_LIBRARY_PATH on ':' and ';'.
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (c == ':' || c == ';') {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

std::string replaceToken(std::string text, const std::string& token, const std::string& value) {
  for (const std::string& form : {"${" + token.substr(1) + "}", token}) {
    size_t at;
    while ((at = text.find(form)) != std::string::npos) text.replace(at, form.size(), value);
  }
  return text;
}

std::string expandDynamicTokens(const std::string& entry, const std::string& origin) {
  std::string text = replaceToken(entry, "$ORIGIN", origin);
  text = replaceToken(text, "$LIB", sizeof(void*) == 8 ? "lib64" : "lib");
  return replaceToken(text, "$PLATFORM", machineName(hostElfMachine()));
}

std::string directoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string joinPath(const std::string& directory, const std::string& name) {
  // An empty entry means the current directory, as for the linker.
  if (directory.empty()) return "./" + name;
  return directory.back() == '/' ? directory + name : directory + "/" + name;
}

void examine(LibraryCandidate& candidate) {
  struct stat status {};
  if (::stat(candidate.path.c_str(), &status) != 0) {
    const int error = errno;
    struct stat linkStatus {};
    if (::lstat(candidate.path.c_str(), &linkStatus) == 0) {
      // The name exists but does not lead to a file: a dangling link or a loop.
      candidate.status = CandidateStatus::kSkipped;
      candidate.reason = "cannot be opened: " + describeErrno(error);
    } else {
      candidate.status = CandidateStatus::kAbsent;
    }
    return;
  }
  if (!S_ISREG(status.st_mode)) {
    candidate.status = CandidateStatus::kSkipped;
    candidate.reason = "not a regular file";
    return;
  }
  candidate.realPath = resolvePath(candidate.path).value_or("");
  candidate.elf = readElf(candidate.path);
  if (!candidate.elf.valid) {
    candidate.status = CandidateStatus::kSkipped;
    candidate.reason = "rejected by the linker: " + candidate.elf.error;
    return;
  }
  if (candidate.elf.elfClass != hostElfClass()) {
    candidate.status = CandidateStatus::kSkipped;
    candidate.reason = "wrong ELF class: ELFCLASS" + std::to_string(candidate.elf.elfClass) + " (this process is " +
                       std::to_string(hostElfClass()) + "-bit)";
    return;
  }
  if (candidate.elf.machine != hostElfMachine()) {
    candidate.status = CandidateStatus::kSkipped;
    candidate.reason = "built for " + machineName(candidate.elf.machine) + ", this process is " +
                       machineName(hostElfMachine());
    return;
  }
  candidate.status = CandidateStatus::kShadowed;  // upgraded to kSelected for the first usable one
}

}  // namespace

std::vector<std::string> ResolveOptions::defaultLibraryDirectories() {
  // glibc's system directories for this ABI, with the multiarch directories
  // Debian and Ubuntu add (elsewhere they do not exist and are just absent).
  const std::string triplet = machineName(hostElfMachine()) + "-linux-gnu";
  if (sizeof(void*) == 8) {
    return {"/lib/" + triplet, "/usr/lib/" + triplet, "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  }
  return {"/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"};
}

const char* candidateStatusName(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::kSelected: return "selected";
    case CandidateStatus::kShadowed: return "shadowed";
    case CandidateStatus::kSkipped: return "skipped";
    case CandidateStatus::kAbsent: return "absent";
  }
  return "?";
}

LibraryResolution resolveLibrary(const std::string& name, const ResolveOptions& options) {
  LibraryResolution result;
  result.name = name;
  const auto add = [&](const std::string& directory, const std::string& entry, const char* source, int position) {
    LibraryCandidate candidate;
    candidate.path = joinPath(directory, name);
    candidate.source = source;
    candidate.sourceEntry = entry;
    candidate.position = position;
    result.candidates.push_back(std::move(candidate));
  };

  if (name.find('/') != std::string::npos) {
    // A path: the linker opens it directly, no search.
    add(directoryOf(name), directoryOf(name), "path", 1);
    result.candidates.back().path = name;
  } else {
    ElfInfo requester;
    std::string origin;
    if (options.requester) {
      requester = readElf(*options.requester);
      if (!requester.valid) result.notes.push_back("requester " + *options.requester + ": " + requester.error);
      origin = directoryOf(resolvePath(*options.requester).value_or(*options.requester));
    }
    if (requester.runpath.empty()) {
      int position = 0;
      for (const auto& entry : requester.rpath) add(expandDynamicTokens(entry, origin), entry, "RPATH", ++position);
    }
    if (options.ldLibraryPath && !options.ldLibraryPath->empty()) {
      int position = 0;
      for (const auto& entry : splitSearchPath(*options.ldLibraryPath)) add(entry, entry, "LD_LIBRARY_PATH", ++position);
    }
    {
      int position = 0;
      for (const auto& entry : requester.runpath) add(expandDynamicTokens(entry, origin), entry, "RUNPATH", ++position);
    }
    if (!options.cachePath.empty()) {
      const LdSoCache cache = readLdSoCache(options.cachePath);
      if (!cache.readable) result.notes.push_back("ld.so cache: " + cache.error);
      int position = 0;
      for (const auto& entry : cache.entries) {
        if (entry.name != name) continue;
        ++position;
        LibraryCandidate candidate;
        candidate.path = entry.path;
        candidate.source = "ld.so.cache";
        candidate.sourceEntry = options.cachePath;
        candidate.position = position;
        if (!cacheFlagsMatchHost(entry.flags)) {
          candidate.status = CandidateStatus::kSkipped;
          candidate.reason = "cache entry for another ABI (flags 0x" + [&] {
            char text[16];
            std::snprintf(text, sizeof text, "%04x", static_cast<unsigned>(entry.flags));
            return std::string(text);
          }() + ")";
        }
        result.candidates.push_back(std::move(candidate));
      }
    }
    int position = 0;
    for (const auto& directory : options.defaultDirectories) add(directory, directory, "default", ++position);
  }

  for (size_t i = 0; i < result.candidates.size(); ++i) {
    LibraryCandidate& candidate = result.candidates[i];
    if (candidate.status == CandidateStatus::kSkipped) continue;  // decided above (cache ABI)
    examine(candidate);
    if (candidate.status == CandidateStatus::kShadowed && result.selected < 0) {
      candidate.status = CandidateStatus::kSelected;
      result.selected = static_cast<int>(i);
    }
  }
  if (result.selected >= 0) {
    const LibraryCandidate& chosen = result.candidates[result.selected];
    const std::string base = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
    if (!chosen.elf.soname.empty() && chosen.elf.soname != base) {
      result.notes.push_back("the selected file's SONAME is " + chosen.elf.soname + ", not " + base);
    }
  }
  return result;
}

}  // namespace npusim::tools
