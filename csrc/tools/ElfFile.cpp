#include "tools/ElfFile.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tools/BoundedFile.h"

namespace npusim::tools {

namespace {

// Caps that no real library reaches; they bound the work on a corrupt file.
constexpr uint64_t kMaxProgramHeaders = 4096;
constexpr uint64_t kMaxDynamicBytes = 1 << 20;
constexpr uint64_t kMaxStringTableBytes = 16 << 20;

class Reader {
 public:
  Reader(int fd, uint64_t size, bool little) : fd_(fd), size_(size), little_(little) {}

  bool read(uint64_t offset, void* buffer, uint64_t length) const {
    if (offset > size_ || length > size_ - offset) return false;
    uint64_t done = 0;
    while (done < length) {
      const ssize_t n = ::pread(fd_, static_cast<char*>(buffer) + done, length - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<uint64_t>(n);
    }
    return true;
  }

  uint64_t number(const unsigned char* bytes, int width) const {
    uint64_t value = 0;
    for (int i = 0; i < width; ++i) {
      const int index = little_ ? width - 1 - i : i;
      value = (value << 8) | bytes[index];
    }
    return value;
  }

  uint64_t size() const { return size_; }

 private:
  int fd_;
  uint64_t size_;
  bool little_;
};

struct Segment {
  uint64_t type, offset, vaddr, filesz;
};

std::vector<std::string> splitPath(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

std::string machineName(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    default: return "machine " + std::to_string(machine);
  }
}

int hostElfClass() { return sizeof(void*) == 8 ? 64 : 32; }

uint16_t hostElfMachine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#elif defined(__i386__)
  return EM_386;
#elif defined(__arm__)
  return EM_ARM;
#else
  return 0;
#endif
}

ElfInfo readElf(const std::string& path) {
  ElfInfo info;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    info.error = describeErrno(errno);
    return info;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    info.error = "not a regular file";
    return info;
  }
  unsigned char ident[EI_NIDENT];
  Reader probe(fd, static_cast<uint64_t>(status.st_size), true);
  if (!probe.read(0, ident, sizeof ident) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    info.error = "not an ELF file";
    return info;
  }
  if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) {
    info.error = "unknown ELF class";
    return info;
  }
  if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) {
    info.error = "unknown ELF byte order";
    return info;
  }
  info.elfClass = ident[EI_CLASS] == ELFCLASS64 ? 64 : 32;
  info.littleEndian = ident[EI_DATA] == ELFDATA2LSB;
  const bool wide = info.elfClass == 64;
  const int word = wide ? 8 : 4;
  Reader reader(fd, static_cast<uint64_t>(status.st_size), info.littleEndian);

  // The fields of the ELF header at their class-dependent offsets.
  unsigned char header[64];
  const uint64_t headerSize = wide ? 64 : 52;
  if (!reader.read(0, header, headerSize)) {
    info.error = "truncated ELF header";
    return info;
  }
  info.type = static_cast<uint16_t>(reader.number(header + 16, 2));
  info.machine = static_cast<uint16_t>(reader.number(header + 18, 2));
  const uint64_t phoff = reader.number(header + (wide ? 32 : 28), word);
  const uint64_t phentsize = reader.number(header + (wide ? 54 : 42), 2);
  const uint64_t phnum = reader.number(header + (wide ? 56 : 44), 2);
  if (phnum > kMaxProgramHeaders || (phnum > 0 && phentsize < (wide ? 56u : 32u))) {
    info.error = "corrupt program header table";
    return info;
  }

  std::vector<Segment> segments;
  for (uint64_t i = 0; i < phnum; ++i) {
    unsigned char entry[56];
    if (!reader.read(phoff + i * phentsize, entry, wide ? 56 : 32)) {
      info.error = "truncated program headers";
      return info;
    }
    Segment segment;
    segment.type = reader.number(entry, 4);
    if (wide) {
      segment.offset = reader.number(entry + 8, 8);
      segment.vaddr = reader.number(entry + 16, 8);
      segment.filesz = reader.number(entry + 32, 8);
    } else {
      segment.offset = reader.number(entry + 4, 4);
      segment.vaddr = reader.number(entry + 8, 4);
      segment.filesz = reader.number(entry + 16, 4);
    }
    segments.push_back(segment);
  }
  info.valid = true;

  const Segment* dynamic = nullptr;
  for (const auto& segment : segments) {
    if (segment.type == PT_DYNAMIC) dynamic = &segment;
  }
  if (dynamic == nullptr) return info;  // a static executable or an object without dependencies
  info.hasDynamic = true;
  if (dynamic->filesz > kMaxDynamicBytes) {
    info.error = "dynamic section too large";
    info.valid = false;
    return info;
  }
  std::string table(dynamic->filesz, '\0');
  if (!reader.read(dynamic->offset, table.data(), table.size())) {
    info.error = "truncated dynamic section";
    info.valid = false;
    return info;
  }
  const uint64_t entrySize = static_cast<uint64_t>(2 * word);
  uint64_t strtabAddress = 0, strtabSize = 0;
  std::vector<std::pair<int64_t, uint64_t>> entries;
  for (uint64_t at = 0; at + entrySize <= table.size(); at += entrySize) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(table.data() + at);
    const int64_t tag = static_cast<int64_t>(reader.number(bytes, word));
    const uint64_t value = reader.number(bytes + word, word);
    if (tag == DT_NULL) break;
    if (tag == DT_STRTAB) strtabAddress = value;
    if (tag == DT_STRSZ) strtabSize = value;
    entries.emplace_back(tag, value);
  }
  // DT_STRTAB holds a virtual address: map it to a file offset through the PT_LOAD segments.
  uint64_t strtabOffset = 0;
  bool mapped = false;
  for (const auto& segment : segments) {
    if (segment.type == PT_LOAD && strtabAddress >= segment.vaddr && strtabAddress < segment.vaddr + segment.filesz) {
      strtabOffset = strtabAddress - segment.vaddr + segment.offset;
      mapped = true;
      break;
    }
  }
  if (!mapped || strtabSize == 0 || strtabSize > kMaxStringTableBytes) {
    info.error = "dynamic string table not found";
    info.valid = false;
    return info;
  }
  std::string strings(strtabSize, '\0');
  if (!reader.read(strtabOffset, strings.data(), strings.size())) {
    info.error = "truncated dynamic string table";
    info.valid = false;
    return info;
  }
  const auto stringAt = [&](uint64_t offset) -> std::string {
    if (offset >= strings.size()) return "";
    const size_t end = strings.find('\0', offset);
    return strings.substr(offset, (end == std::string::npos ? strings.size() : end) - offset);
  };
  for (const auto& [tag, value] : entries) {
    if (tag == DT_SONAME) info.soname = stringAt(value);
    if (tag == DT_NEEDED) info.needed.push_back(stringAt(value));
    if (tag == DT_RPATH) info.rpath = splitPath(stringAt(value));
    if (tag == DT_RUNPATH) info.runpath = splitPath(stringAt(value));
  }
  return info;
}

}  // namespace npusim::tools
