// Finding a shared library the way glibc's dynamic linker does for a name
// without a slash (a DT_NEEDED entry or dlopen("libhccl.so")), and listing
// every place it looked, so that the doctor can say which copy wins and why:
//
//   1. DT_RPATH of the requesting object, unless it has DT_RUNPATH
//   2. LD_LIBRARY_PATH (empty entries mean the current directory)
//   3. DT_RUNPATH of the requesting object
//   4. the ld.so cache (/etc/ld.so.cache), entries of this process's ABI
//   5. the default directories
//
// $ORIGIN, $LIB and $PLATFORM in RPATH/RUNPATH are expanded as the linker
// does. A file of another ELF class or machine is skipped and the search goes
// on, as the linker does ("wrong ELF class" is then only visible with
// LD_DEBUG). Not modelled: the executable's own RPATH (the requester stands for
// the loading chain), hwcaps subdirectories, secure-execution mode and
// -z nodeflib.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/ElfFile.h"

namespace npusim::tools {

struct ResolveOptions {
  std::optional<std::string> requester;     // the object whose RPATH/RUNPATH apply
  std::optional<std::string> ldLibraryPath; // nullopt: unset
  std::string cachePath = "/etc/ld.so.cache";
  std::vector<std::string> defaultDirectories = defaultLibraryDirectories();

  static std::vector<std::string> defaultLibraryDirectories();
};

enum class CandidateStatus {
  kSelected,  // the file the linker loads
  kShadowed,  // a usable file that comes later in the search: never loaded
  kSkipped,   // present but rejected (wrong class/machine, not ELF, unreadable)
  kAbsent,    // nothing at this path
};

const char* candidateStatusName(CandidateStatus status);

struct LibraryCandidate {
  std::string path;
  std::string source;       // "RPATH", "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "default"
  std::string sourceEntry;  // the directory as written (before $ORIGIN expansion), or the cache key
  int position = 0;         // 1-based position within its source
  CandidateStatus status = CandidateStatus::kAbsent;
  std::string reason;       // why skipped
  std::string realPath;     // after symbolic links ("" when it cannot be resolved)
  ElfInfo elf;
};

struct LibraryResolution {
  std::string name;
  std::vector<LibraryCandidate> candidates;  // in search order
  int selected = -1;                          // index into candidates, -1: not found
  std::vector<std::string> notes;             // cache problems, requester problems, SONAME mismatch
};

LibraryResolution resolveLibrary(const std::string& name, const ResolveOptions& options);

}  // namespace npusim::tools
