// What the dynamic linker reads from a shared library before it accepts it:
// the ELF class and machine (a 32-bit or foreign-architecture library is
// skipped, not loaded), and from the dynamic section the SONAME, DT_NEEDED,
// DT_RPATH and DT_RUNPATH. Reads with bounded pread() calls, never maps the
// file, and checks every offset against the file size, so a truncated or
// corrupt file gives an error text, not a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace npusim::tools {

struct ElfInfo {
  bool valid = false;
  std::string error;           // when !valid: "not an ELF file", "truncated program headers", ...
  int elfClass = 0;            // 32 or 64
  bool littleEndian = true;
  uint16_t type = 0;           // ET_DYN = 3, ET_EXEC = 2
  uint16_t machine = 0;        // EM_X86_64 = 62, EM_AARCH64 = 183
  bool hasDynamic = false;
  std::string soname;
  std::vector<std::string> needed;
  std::vector<std::string> rpath;    // DT_RPATH entries, unexpanded
  std::vector<std::string> runpath;  // DT_RUNPATH entries, unexpanded
};

ElfInfo readElf(const std::string& path);

// "x86_64", "aarch64", ... or "machine <n>".
std::string machineName(uint16_t machine);

// The class and machine of this program, for "does the linker accept it".
int hostElfClass();
uint16_t hostElfMachine();

}  // namespace npusim::tools
