#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/AllocatorConfig.h"
#include "runtime/Error.h"
#include "TestSupport.h"

using namespace npusim::runtime;
using npusim::runtime::testing::ScopedEnv;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::string errorOf(std::string_view text) {
  try {
    AllocatorConfig::parse(text);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "<no error>";
}


}  // namespace

TEST(AllocatorConfigTest, DefaultsMatchTorchNpu) {
  AllocatorConfig config = AllocatorConfig::parse("");
  EXPECT_EQ(config.maxSplitSize, AllocatorConfig::kUnlimited);
  EXPECT_EQ(config.garbageCollectionThreshold, 0.0);
  EXPECT_FALSE(config.expandableSegments);
  EXPECT_EQ(config.baseAddrAlignedBytes, 16u * 1024);
  EXPECT_FALSE(config.pageSize1g);
  EXPECT_EQ(config.largeSegmentSize, 20 * kMiB);
  EXPECT_EQ(config.maxNonSplitRoundingSize, 20 * kMiB);
  EXPECT_FALSE(config.perProcessMemoryFraction.has_value());
  EXPECT_EQ(config.roundupDivisionsFor(100 * kMiB), 0u);
  EXPECT_EQ(config.pinnedMaxRoundThreshold, AllocatorConfig::kUnlimited);
  EXPECT_EQ(config.pinnedMaxCachedSize, AllocatorConfig::kUnlimited);
  EXPECT_FALSE(config.cachingDisabled);
}

TEST(AllocatorConfigTest, ParsesSeveralKeysWithBlanksAndTrailingComma) {
  AllocatorConfig config =
      AllocatorConfig::parse(" max_split_size_mb : 128 , garbage_collection_threshold:0.6,large_segment_size_mb:64,");
  EXPECT_EQ(config.maxSplitSize, 128 * kMiB);
  EXPECT_DOUBLE_EQ(config.garbageCollectionThreshold, 0.6);
  EXPECT_EQ(config.largeSegmentSize, 64 * kMiB);
}

TEST(AllocatorConfigTest, LastValueOfARepeatedKeyWins) {
  EXPECT_EQ(AllocatorConfig::parse("max_split_size_mb:64,max_split_size_mb:256").maxSplitSize, 256 * kMiB);
}

TEST(AllocatorConfigTest, MaxSplitSizeMustExceed20) {
  EXPECT_EQ(errorOf("max_split_size_mb:5"), "PYTORCH_NPU_ALLOC_CONF: max_split_size_mb must be > 20, got \"5\"");
  EXPECT_EQ(errorOf("max_split_size_mb:20"), "PYTORCH_NPU_ALLOC_CONF: max_split_size_mb must be > 20, got \"20\"");
  EXPECT_EQ(AllocatorConfig::parse("max_split_size_mb:21").maxSplitSize, 21 * kMiB);
  EXPECT_NE(errorOf("max_split_size_mb:1.5").find("max_split_size_mb"), std::string::npos);
  EXPECT_NE(errorOf("max_split_size_mb:-64").find("\"-64\""), std::string::npos);
}

TEST(AllocatorConfigTest, GarbageCollectionThresholdIsStrictlyBetweenZeroAndOne) {
  EXPECT_DOUBLE_EQ(AllocatorConfig::parse("garbage_collection_threshold:0.5").garbageCollectionThreshold, 0.5);
  for (const char* bad : {"0", "0.0", "1", "1.0", "1.5", "-0.2", "abc", "nan"}) {
    std::string message = errorOf(std::string("garbage_collection_threshold:") + bad);
    EXPECT_NE(message.find("PYTORCH_NPU_ALLOC_CONF: garbage_collection_threshold"), std::string::npos) << bad;
    EXPECT_NE(message.find(std::string("\"") + bad + "\""), std::string::npos) << message;
  }
}

TEST(AllocatorConfigTest, ExpandableSegmentsIsABooleanNotCombinableWithSplitOrGc) {
  EXPECT_TRUE(AllocatorConfig::parse("expandable_segments:True").expandableSegments);
  EXPECT_FALSE(AllocatorConfig::parse("expandable_segments:False").expandableSegments);
  EXPECT_EQ(errorOf("expandable_segments:yes"),
            "PYTORCH_NPU_ALLOC_CONF: expandable_segments must be True or False, got \"yes\"");
  std::string message = errorOf("expandable_segments:True,max_split_size_mb:64");
  EXPECT_NE(message.find("cannot be enabled with `expandable_segments`"), std::string::npos) << message;
  EXPECT_NE(errorOf("garbage_collection_threshold:0.5,expandable_segments:True").find("expandable_segments"),
            std::string::npos);
  EXPECT_NO_THROW(AllocatorConfig::parse("expandable_segments:False,max_split_size_mb:64"));
}

TEST(AllocatorConfigTest, BaseAddrAlignedKbIsZeroToSixteen) {
  EXPECT_EQ(AllocatorConfig::parse("base_addr_aligned_kb:0").baseAddrAlignedBytes, 0u);
  EXPECT_EQ(AllocatorConfig::parse("base_addr_aligned_kb:16").baseAddrAlignedBytes, 16u * 1024);
  EXPECT_EQ(errorOf("base_addr_aligned_kb:17"),
            "PYTORCH_NPU_ALLOC_CONF: base_addr_aligned_kb must be an integer in [0, 16], got \"17\"");
}

TEST(AllocatorConfigTest, PageSizeAcceptsOnly1g) {
  EXPECT_TRUE(AllocatorConfig::parse("page_size:1g").pageSize1g);
  EXPECT_EQ(errorOf("page_size:2m"), "PYTORCH_NPU_ALLOC_CONF: page_size must be 1g, got \"2m\"");
}

TEST(AllocatorConfigTest, SegmentSizeKeysFollowTorchNpuAndPyTorch) {
  // torch_npu's segment_size_mb: 20..512 MB.
  EXPECT_EQ(AllocatorConfig::parse("segment_size_mb:20").largeSegmentSize, 20 * kMiB);
  EXPECT_EQ(errorOf("segment_size_mb:513"),
            "PYTORCH_NPU_ALLOC_CONF: segment_size_mb must be an integer in [20, 512], got \"513\"");
  // PyTorch's large_segment_size_mb: above the smallest large allocation, 10 MB.
  EXPECT_EQ(AllocatorConfig::parse("large_segment_size_mb:512").largeSegmentSize, 512 * kMiB);
  EXPECT_EQ(AllocatorConfig::parse("large_segment_size_mb:11").largeSegmentSize, 11 * kMiB);
  EXPECT_EQ(errorOf("large_segment_size_mb:10"),
            "PYTORCH_NPU_ALLOC_CONF: large_segment_size_mb must be > 10, got \"10\"");
  // large_segment_size_mb wins in either order.
  EXPECT_EQ(AllocatorConfig::parse("segment_size_mb:50,large_segment_size_mb:100").largeSegmentSize, 100 * kMiB);
  EXPECT_EQ(AllocatorConfig::parse("large_segment_size_mb:100,segment_size_mb:50").largeSegmentSize, 100 * kMiB);
  // A large segment must stay splittable.
  EXPECT_EQ(errorOf("large_segment_size_mb:50,max_split_size_mb:30"),
            "PYTORCH_NPU_ALLOC_CONF: max_split_size_mb too small, must be >= large_segment_size_mb (50), got \"30\"");
}

TEST(AllocatorConfigTest, RoundupPowerOfTwoDivisionsSingleValue) {
  AllocatorConfig config = AllocatorConfig::parse("roundup_power2_divisions:4");
  EXPECT_EQ(config.roundupDivisionsFor(1000), 4u);
  EXPECT_EQ(config.roundupDivisionsFor(100 * kMiB), 4u);
  EXPECT_EQ(config.roundupDivisionsFor(size_t{100} << 30), 4u);
  EXPECT_EQ(errorOf("roundup_power2_divisions:3"),
            "PYTORCH_NPU_ALLOC_CONF: roundup_power2_divisions must be a power of two (or 0), got \"3\"");
}

TEST(AllocatorConfigTest, RoundupPowerOfTwoDivisionsList) {
  AllocatorConfig config = AllocatorConfig::parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
  EXPECT_EQ(config.roundupDivisionsFor(1 * kMiB), 1u);    // below the first boundary: its value
  EXPECT_EQ(config.roundupDivisionsFor(300 * kMiB), 1u);  // [256 MB, 512 MB)
  EXPECT_EQ(config.roundupDivisionsFor(600 * kMiB), 2u);  // [512 MB, 1 GB)
  EXPECT_EQ(config.roundupDivisionsFor(1500 * kMiB), 4u);  // [1 GB, 2 GB)
  EXPECT_EQ(config.roundupDivisionsFor(3000 * kMiB), 8u);  // above
  AllocatorConfig gaps = AllocatorConfig::parse("roundup_power2_divisions:[64:2,1024:4]");
  EXPECT_EQ(gaps.roundupDivisionsFor(200 * kMiB), 2u);   // gap filled by the lower boundary
  EXPECT_EQ(gaps.roundupDivisionsFor(5000 * kMiB), 4u);  // no ">": the last boundary goes on
  EXPECT_NE(errorOf("roundup_power2_divisions:[300:2]").find("power of two"), std::string::npos);
  EXPECT_NE(errorOf("roundup_power2_divisions:[256:3]").find("\"3\""), std::string::npos);
  EXPECT_NE(errorOf("roundup_power2_divisions:[256:2").find("unbalanced"), std::string::npos);
  EXPECT_NE(errorOf("roundup_power2_divisions:[256]").find("roundup_power2_divisions"), std::string::npos);
}

TEST(AllocatorConfigTest, MaxNonSplitRoundingAtLeast20) {
  EXPECT_EQ(AllocatorConfig::parse("max_non_split_rounding_mb:64").maxNonSplitRoundingSize, 64 * kMiB);
  EXPECT_EQ(errorOf("max_non_split_rounding_mb:10"),
            "PYTORCH_NPU_ALLOC_CONF: max_non_split_rounding_mb must be >= 20, got \"10\"");
}

TEST(AllocatorConfigTest, PerProcessMemoryFractionIsZeroToOne) {
  EXPECT_DOUBLE_EQ(*AllocatorConfig::parse("per_process_memory_fraction:0.25").perProcessMemoryFraction, 0.25);
  EXPECT_DOUBLE_EQ(*AllocatorConfig::parse("per_process_memory_fraction:1").perProcessMemoryFraction, 1.0);
  EXPECT_EQ(errorOf("per_process_memory_fraction:1.5"),
            "PYTORCH_NPU_ALLOC_CONF: per_process_memory_fraction must be in [0.0, 1.0], got \"1.5\"");
}

TEST(AllocatorConfigTest, FlagsAndHostKeys) {
  AllocatorConfig config = AllocatorConfig::parse(
      "multi_stream_lazy_reclaim:True,throw_on_npumalloc_oom:True,release_lock_on_npumalloc:True,"
      "pinned_use_background_threads:True,pin_memory_expandable_segments:True,pinned_mem_register:True,"
      "pinned_max_round_threshold_mb:1,pinned_max_cached_size_mb:0,pinned_reserve_segment_size_mb:8");
  EXPECT_TRUE(config.multiStreamLazyReclaim);
  EXPECT_TRUE(config.throwOnNpumallocOom);
  EXPECT_TRUE(config.releaseLockOnNpumalloc);
  EXPECT_TRUE(config.pinnedUseBackgroundThreads);
  EXPECT_TRUE(config.pinMemoryExpandableSegments);
  EXPECT_TRUE(config.pinnedMemRegister);
  EXPECT_EQ(config.pinnedMaxRoundThreshold, 1 * kMiB);
  EXPECT_EQ(config.pinnedMaxCachedSize, 0u);
  EXPECT_EQ(config.pinnedReserveSegmentSize, 8 * kMiB);
  EXPECT_EQ(errorOf("pinned_mem_register:1"),
            "PYTORCH_NPU_ALLOC_CONF: pinned_mem_register must be True or False, got \"1\"");
}

TEST(AllocatorConfigTest, UnknownKeyAndMalformedItemsAreNamed) {
  std::string message = errorOf("max_split_size_mb:64,backend:cudaMallocAsync");
  EXPECT_EQ(message.rfind("PYTORCH_NPU_ALLOC_CONF: unknown key \"backend\"; accepted keys are max_split_size_mb", 0),
            0u)
      << message;
  EXPECT_EQ(errorOf("max_split_size_mb"),
            "PYTORCH_NPU_ALLOC_CONF: expected key:value, got \"max_split_size_mb\"");
  EXPECT_EQ(errorOf("max_split_size_mb:"), "PYTORCH_NPU_ALLOC_CONF: max_split_size_mb needs a value, got \"\"");
}

TEST(AllocatorConfigTest, ErrorsNameTheVariableTheyCameFrom) {
  try {
    AllocatorConfig::parse("max_split_size_mb:1", "PYTORCH_ALLOC_CONF");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), "PYTORCH_ALLOC_CONF: max_split_size_mb must be > 20, got \"1\"");
  }
}

TEST(AllocatorConfigTest, FromEnvironmentReadsEitherVariableAndNoCaching) {
  {
    ScopedEnv npu("PYTORCH_NPU_ALLOC_CONF", "max_split_size_mb:64");
    ScopedEnv generic("PYTORCH_ALLOC_CONF", nullptr);
    ScopedEnv noCaching("PYTORCH_NO_NPU_MEMORY_CACHING", nullptr);
    AllocatorConfig config = AllocatorConfig::fromEnvironment();
    EXPECT_EQ(config.maxSplitSize, 64 * kMiB);
    EXPECT_EQ(config.source, "PYTORCH_NPU_ALLOC_CONF");
    EXPECT_FALSE(config.cachingDisabled);
  }
  {
    ScopedEnv npu("PYTORCH_NPU_ALLOC_CONF", nullptr);
    ScopedEnv generic("PYTORCH_ALLOC_CONF", "garbage_collection_threshold:0.7");
    ScopedEnv noCaching("PYTORCH_NO_NPU_MEMORY_CACHING", "1");
    AllocatorConfig config = AllocatorConfig::fromEnvironment();
    EXPECT_DOUBLE_EQ(config.garbageCollectionThreshold, 0.7);
    EXPECT_EQ(config.source, "PYTORCH_ALLOC_CONF");
    EXPECT_TRUE(config.cachingDisabled);
  }
  {
    ScopedEnv npu("PYTORCH_NPU_ALLOC_CONF", nullptr);
    ScopedEnv generic("PYTORCH_ALLOC_CONF", "max_split_size_mb:2");
    try {
      AllocatorConfig::fromEnvironment();
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& error) {
      EXPECT_EQ(std::string(error.what()).rfind("PYTORCH_ALLOC_CONF: max_split_size_mb", 0), 0u);
    }
  }
}

TEST(AllocatorConfigTest, BothVariablesWithDifferentTextsIsAnError) {
  ScopedEnv npu("PYTORCH_NPU_ALLOC_CONF", "max_split_size_mb:64");
  {
    ScopedEnv generic("PYTORCH_ALLOC_CONF", "max_split_size_mb:128");
    try {
      AllocatorConfig::fromEnvironment();
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& error) {
      std::string message = error.what();
      EXPECT_NE(message.find("PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF are both set"), std::string::npos);
    }
  }
  {
    ScopedEnv generic("PYTORCH_ALLOC_CONF", "max_split_size_mb:64");
    EXPECT_EQ(AllocatorConfig::fromEnvironment().maxSplitSize, 64 * kMiB);
  }
}

TEST(AllocatorConfigTest, ParseOntoRestartsRoundingKeysAndKeepsTheOthers) {
  const AllocatorConfig base =
      AllocatorConfig::parse("max_split_size_mb:64,roundup_power2_divisions:4,large_segment_size_mb:40");
  const AllocatorConfig updated = AllocatorConfig::parseOnto(base, "garbage_collection_threshold:0.5", "settings");
  EXPECT_EQ(updated.maxSplitSize, AllocatorConfig::kUnlimited);
  EXPECT_EQ(updated.roundupDivisionsFor(64 << 20), 0u);
  EXPECT_EQ(updated.largeSegmentSize, 40 * AllocatorConfig::kMiB);
  EXPECT_DOUBLE_EQ(updated.garbageCollectionThreshold, 0.5);
  EXPECT_THROW(AllocatorConfig::parseOnto(base, "bogus:1", "settings"), ConfigError);
}
