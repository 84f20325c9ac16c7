#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/ChipSpec.h"
#include "runtime/Error.h"
#include "TestSupport.h"

using namespace npusim::runtime;

TEST(ChipSpec, EmbeddedChipsAreAllKnown) {
  for (const char* name : {"Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4", "Ascend910A"}) {
    EXPECT_EQ(findChip(name).socName, name);
  }
}

TEST(ChipSpec, Ascend910B2MatchesThePlatformConfig) {
  const ChipSpec& chip = findChip("Ascend910B2");
  EXPECT_EQ(chip.npuSmiName, "910B2");
  EXPECT_EQ(chip.cubeCores, 24);
  EXPECT_EQ(chip.vectorCores, 48);
  EXPECT_EQ(chip.l2CacheBytes, 192u * 1024 * 1024);
  EXPECT_EQ(chip.hbmBytes, 64ull << 30);
  // 24 x 4096 x 2 x 1.8 GHz = 353.9 TFLOPS
  EXPECT_NEAR(chip.peakFp16Flops() / 1e12, 353.9, 0.1);
}

TEST(ChipSpec, NpuSmiNameIsAcceptedToo) { EXPECT_EQ(findChip("910B4").socName, "Ascend910B4"); }

TEST(ChipSpec, UnknownChipListsTheKnownOnes) {
  try {
    findChip("Ascend999");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("Ascend910B2"), std::string::npos) << e.what();
  }
}

TEST(ChipSpec, DefaultsToAscend910B2AndHonoursNpusimSoc) {
  const npusim::runtime::testing::ScopedEnv soc("NPUSIM_SOC", nullptr);  // restored afterwards
  EXPECT_EQ(chipFromEnvironment().socName, "Ascend910B2");
  setenv("NPUSIM_SOC", "Ascend910B3", 1);
  EXPECT_EQ(chipFromEnvironment().socName, "Ascend910B3");
  setenv("NPUSIM_SOC", "nonsense", 1);
  EXPECT_THROW(chipFromEnvironment(), ConfigError);
  unsetenv("NPUSIM_SOC");
}

TEST(ChipSpec, MalformedFilesAreRejectedWithTheLine) {
  EXPECT_THROW(parseChipSpec("soc_name Ascend", "bad.ini"), ConfigError);
  EXPECT_THROW(parseChipSpec("unknown_key = 1", "bad.ini"), ConfigError);
  EXPECT_THROW(parseChipSpec("cube_cores = twelve", "bad.ini"), ConfigError);
  try {
    parseChipSpec("# only a comment\nsoc_name = X\n", "partial.ini");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("missing key"), std::string::npos) << e.what();
  }
  try {
    parseChipSpec("\n\ncube_cores = 1x\n", "bad.ini");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}
