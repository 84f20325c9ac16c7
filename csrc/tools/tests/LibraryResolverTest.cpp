#include "tools/LibraryResolver.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "tools/ElfFile.h"
#include "tools/LdSoCache.h"
#include "tools/tests/ToolsTestSupport.h"

namespace npusim::tools {

namespace {

// A minimal ELF header of another class or machine: what a 32-bit or foreign
// library looks like to the linker before it rejects it.
std::string foreignElf(int elfClass, uint16_t machine) {
  std::string bytes(elfClass == 64 ? 64 : 52, '\0');
  std::memcpy(bytes.data(), ELFMAG, SELFMAG);
  bytes[EI_CLASS] = static_cast<char>(elfClass == 64 ? ELFCLASS64 : ELFCLASS32);
  bytes[EI_DATA] = ELFDATA2LSB;
  bytes[EI_VERSION] = EV_CURRENT;
  bytes[16] = ET_DYN;
  bytes[18] = static_cast<char>(machine & 0xff);
  bytes[19] = static_cast<char>(machine >> 8);
  return bytes;
}

class LibraryResolverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tree_ = new testing::TemporaryDirectory();
    const auto& t = *tree_;
    // Two toolkits: the sourced one and a stale one.
    testing::compileSharedLibrary(t / "new/lib64/libascendcl.so", "libascendcl.so", "acl_new");
    testing::compileSharedLibrary(t / "old/lib64/libascendcl.so", "libascendcl.so", "acl_old");
    testing::compileSharedLibrary(t / "system/libascendcl.so", "libascendcl.so", "acl_system");
    testing::compileSharedLibrary(t / "default/libhccl.so", "libhccl.so.1", "hccl");
    // Requesters: one with RPATH (old dtags), one with RUNPATH using $ORIGIN.
    testing::compileSharedLibrary(t / "app/librpath.so", "librpath.so", "r", "-Wl,--disable-new-dtags -Wl,-rpath," + (t / "old/lib64"));
    testing::compileSharedLibrary(t / "app/librunpath.so", "librunpath.so", "r",
                                  "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../new/lib64'");
    testing::writeFile(t / "foreign32/libascendcl.so", foreignElf(32, EM_386));
    testing::writeFile(t / "foreignarm/libascendcl.so", foreignElf(64, hostElfMachine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64));
    testing::writeFile(t / "text/libascendcl.so", "INPUT(-lsomething)\n");  // a linker script, not ELF
    std::filesystem::create_directories(t / "loop");
    ::symlink((t / "loop/libascendcl.so").c_str(), (t / "loop/libascendcl.so").c_str());
    testing::writeFile(t / "ld.so.cache", serializeLdSoCache({{"libascendcl.so", t / "system/libascendcl.so", hostCacheFlags()},
                                                                {"libascendcl.so", t / "foreign32/libascendcl.so", 0x0003}}));
  }
  static void TearDownTestSuite() { delete tree_; }

  ResolveOptions options(std::optional<std::string> ldLibraryPath) const {
    ResolveOptions o;
    o.ldLibraryPath = std::move(ldLibraryPath);
    o.cachePath = *tree_ / "ld.so.cache";
    o.defaultDirectories = {*tree_ / "default"};
    return o;
  }

  static testing::TemporaryDirectory* tree_;
};

testing::TemporaryDirectory* LibraryResolverTest::tree_ = nullptr;

}  // namespace

TEST_F(LibraryResolverTest, ReadsElfClassSonameAndSearchPaths) {
  const ElfInfo library = readElf(*tree_ / "default/libhccl.so");
  ASSERT_TRUE(library.valid) << library.error;
  EXPECT_EQ(library.elfClass, hostElfClass());
  EXPECT_EQ(library.machine, hostElfMachine());
  EXPECT_EQ(library.soname, "libhccl.so.1");
  const ElfInfo rpath = readElf(*tree_ / "app/librpath.so");
  EXPECT_EQ(rpath.rpath, std::vector<std::string>{*tree_ / "old/lib64"});
  EXPECT_TRUE(rpath.runpath.empty());
  EXPECT_EQ(readElf(*tree_ / "app/librunpath.so").runpath, std::vector<std::string>{"$ORIGIN/../new/lib64"});
  const ElfInfo foreign = readElf(*tree_ / "foreign32/libascendcl.so");
  EXPECT_TRUE(foreign.valid);
  EXPECT_EQ(foreign.elfClass, 32);
  EXPECT_EQ(readElf(*tree_ / "text/libascendcl.so").error, "not an ELF file");
  EXPECT_FALSE(readElf(*tree_ / "missing.so").valid);
}

TEST_F(LibraryResolverTest, StaleLdLibraryPathEntryShadowsTheSourcedToolkit) {
  const auto result = resolveLibrary("libascendcl.so", options(*tree_ / "old/lib64:" + *tree_ / "new/lib64"));
  ASSERT_GE(result.selected, 0);
  const auto& chosen = result.candidates[result.selected];
  EXPECT_EQ(chosen.path, *tree_ / "old/lib64/libascendcl.so");
  EXPECT_EQ(chosen.source, "LD_LIBRARY_PATH");
  EXPECT_EQ(chosen.position, 1);
  // Every later copy is listed as shadowed: the sourced toolkit's and the cache's.
  std::vector<std::string> shadowed;
  for (const auto& candidate : result.candidates) {
    if (candidate.status == CandidateStatus::kShadowed) shadowed.push_back(candidate.path);
  }
  EXPECT_EQ(shadowed, (std::vector<std::string>{*tree_ / "new/lib64/libascendcl.so", *tree_ / "system/libascendcl.so"}));
}

TEST_F(LibraryResolverTest, SearchOrderRpathThenLdLibraryPathThenRunpathThenCacheThenDefaults) {
  ResolveOptions o = options(*tree_ / "new/lib64");
  o.requester = *tree_ / "app/librpath.so";
  auto result = resolveLibrary("libascendcl.so", o);
  EXPECT_EQ(result.candidates[result.selected].source, "RPATH");  // RPATH beats LD_LIBRARY_PATH

  o.requester = *tree_ / "app/librunpath.so";
  o.ldLibraryPath = *tree_ / "old/lib64";
  result = resolveLibrary("libascendcl.so", o);
  EXPECT_EQ(result.candidates[result.selected].source, "LD_LIBRARY_PATH");  // LD_LIBRARY_PATH beats RUNPATH
  o.ldLibraryPath.reset();
  result = resolveLibrary("libascendcl.so", o);
  ASSERT_GE(result.selected, 0);
  EXPECT_EQ(result.candidates[result.selected].source, "RUNPATH");  // $ORIGIN expanded
  EXPECT_EQ(result.candidates[result.selected].sourceEntry, "$ORIGIN/../new/lib64");
  EXPECT_EQ(result.candidates[result.selected].realPath, std::filesystem::canonical(*tree_ / "new/lib64/libascendcl.so").string());

  result = resolveLibrary("libascendcl.so", options(std::nullopt));
  EXPECT_EQ(result.candidates[result.selected].source, "ld.so.cache");
  // The cache's entry for another ABI is skipped with its reason.
  bool sawForeignEntry = false;
  for (const auto& candidate : result.candidates) {
    if (candidate.source == "ld.so.cache" && candidate.status == CandidateStatus::kSkipped) {
      sawForeignEntry = candidate.reason.find("another ABI") != std::string::npos;
    }
  }
  EXPECT_TRUE(sawForeignEntry);

  const auto hccl = resolveLibrary("libhccl.so", options(std::nullopt));
  ASSERT_GE(hccl.selected, 0);
  EXPECT_EQ(hccl.candidates[hccl.selected].source, "default");
  ASSERT_EQ(hccl.notes.size(), 1u);
  EXPECT_NE(hccl.notes[0].find("SONAME is libhccl.so.1"), std::string::npos);
}

TEST_F(LibraryResolverTest, WrongClassMachineNonElfAndLoopsAreSkippedAndTheSearchGoesOn) {
  const auto& t = *tree_;
  const std::string path = t / "foreign32" + ":" + t / "foreignarm" + ":" + t / "text" + ":" + t / "loop" + "::" + t / "new/lib64";
  const auto result = resolveLibrary("libascendcl.so", options(path));
  ASSERT_GE(result.selected, 0);
  EXPECT_EQ(result.candidates[result.selected].path, t / "new/lib64/libascendcl.so");
  std::vector<std::string> reasons;
  for (const auto& candidate : result.candidates) {
    if (candidate.source == "LD_LIBRARY_PATH" && candidate.status == CandidateStatus::kSkipped) reasons.push_back(candidate.reason);
  }
  ASSERT_EQ(reasons.size(), 4u);
  EXPECT_NE(reasons[0].find("wrong ELF class: ELFCLASS32"), std::string::npos);
  EXPECT_NE(reasons[1].find("built for"), std::string::npos);
  EXPECT_NE(reasons[2].find("not an ELF file"), std::string::npos);
  EXPECT_NE(reasons[3].find("symbolic link loop"), std::string::npos);
  // The empty entry means the current directory.
  bool sawCurrentDirectory = false;
  for (const auto& candidate : result.candidates) sawCurrentDirectory |= candidate.path == "./libascendcl.so";
  EXPECT_TRUE(sawCurrentDirectory);
}

TEST_F(LibraryResolverTest, NotFoundAndBrokenCacheAreReported) {
  ResolveOptions o = options(std::nullopt);
  o.cachePath = *tree_ / "no-such-cache";
  const auto result = resolveLibrary("libruntime.so", o);
  EXPECT_EQ(result.selected, -1);
  ASSERT_FALSE(result.notes.empty());
  EXPECT_NE(result.notes[0].find("No such file"), std::string::npos);
}

TEST(LdSoCache, RoundTripAndMalformedCaches) {
  const std::string bytes = serializeLdSoCache({{"liba.so.1", "/lib/liba.so.1", hostCacheFlags()}, {"libb.so", "/x/libb.so", 3}});
  const LdSoCache cache = parseLdSoCache(bytes);
  ASSERT_TRUE(cache.readable) << cache.error;
  ASSERT_EQ(cache.entries.size(), 2u);
  EXPECT_EQ(cache.entries[0].name, "liba.so.1");
  EXPECT_EQ(cache.entries[1].path, "/x/libb.so");
  EXPECT_TRUE(cacheFlagsMatchHost(cache.entries[0].flags));
  EXPECT_FALSE(parseLdSoCache("garbage").readable);
  EXPECT_FALSE(parseLdSoCache(bytes.substr(0, 60)).readable);  // entries announced but cut off
  std::string corrupt = bytes;
  corrupt[20] = '\xff';  // an absurd entry count
  EXPECT_NE(parseLdSoCache(corrupt).error.find("truncated"), std::string::npos);
}

}  // namespace npusim::tools
