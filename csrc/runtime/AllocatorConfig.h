// Settings of the device caching allocator and of the pinned host allocator,
// read from PYTORCH_NPU_ALLOC_CONF (or PYTORCH_ALLOC_CONF) and
// PYTORCH_NO_NPU_MEMORY_CACHING, with the keys and limits that torch_npu
// accepts (see reference/torch_npu-contract.md, section 8.2).
//
// The text is a comma-separated list of `key:value` items, for example
//   max_split_size_mb:128,garbage_collection_threshold:0.6
//   roundup_power2_divisions:[256:1,512:2,1024:4,>:8]
// Spaces are ignored, an empty item (a trailing comma) is allowed, and a key
// given twice keeps its last value. Anything else that torch_npu would reject
// raises ConfigError with a message naming the variable, the key and what is
// accepted.
//
// Choices where torch_npu is silent or where npusim differs on purpose:
// - garbage_collection_threshold must lie strictly between 0 and 1, as in
//   PyTorch's CUDA allocator (0 would switch it off, 1 would never trigger).
// - per_process_memory_fraction accepts [0, 1]; a value is applied to every
//   device allocator when it is created (setMemoryFraction).
// - Boolean values are True/False (true/false also accepted).
// - PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF set to different texts is an
//   error; the same text in both is accepted (torch_npu copies one into the
//   other, so child processes commonly inherit both).
// - expandable_segments, base_addr_aligned_kb, page_size and the host keys
//   other than the two pinned_max_*_mb thresholds are validated and kept, but
//   the simulated allocators do not change behaviour for them except where the
//   CachingAllocator / HostAllocator documentation says so.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace npusim::runtime {

struct AllocatorConfig {
  static constexpr size_t kMiB = size_t{1} << 20;
  // Division counts for roundup_power2_divisions are kept per power-of-two
  // size interval: interval 0 holds sizes below 2 MiB, interval i (1..14)
  // sizes in [2^i MiB, 2^(i+1) MiB), interval 15 everything from 32 GiB up.
  static constexpr size_t kRoundupIntervals = 16;
  static constexpr size_t kUnlimited = std::numeric_limits<size_t>::max();

  // --- device allocator ---
  size_t maxSplitSize = kUnlimited;             // max_split_size_mb (> 20), bytes
  double garbageCollectionThreshold = 0.0;      // garbage_collection_threshold, 0 = off
  bool expandableSegments = false;              // expandable_segments
  size_t baseAddrAlignedBytes = 16 * 1024;      // base_addr_aligned_kb (0..16), bytes
  bool pageSize1g = false;                      // page_size:1g
  size_t largeSegmentSize = 20 * kMiB;          // large_segment_size_mb (> 10) / segment_size_mb (20..512), bytes
  std::array<size_t, kRoundupIntervals> roundupPower2Divisions{};  // 0 or 1 = no power-of-two rounding
  size_t maxNonSplitRoundingSize = 20 * kMiB;   // max_non_split_rounding_mb (>= 20), bytes
  std::optional<double> perProcessMemoryFraction;  // per_process_memory_fraction, [0, 1]
  bool multiStreamLazyReclaim = false;          // multi_stream_lazy_reclaim
  bool throwOnNpumallocOom = false;             // throw_on_npumalloc_oom
  bool releaseLockOnNpumalloc = false;          // release_lock_on_npumalloc
  bool cachingDisabled = false;                 // PYTORCH_NO_NPU_MEMORY_CACHING=1

  // --- pinned host allocator ---
  bool pinnedUseBackgroundThreads = false;      // pinned_use_background_threads
  bool pinMemoryExpandableSegments = false;     // pin_memory_expandable_segments
  bool pinnedMemRegister = false;               // pinned_mem_register
  size_t pinnedMaxRoundThreshold = kUnlimited;  // pinned_max_round_threshold_mb, bytes
  size_t pinnedMaxCachedSize = kUnlimited;      // pinned_max_cached_size_mb, bytes
  size_t pinnedReserveSegmentSize = 0;          // pinned_reserve_segment_size_mb, bytes

  // The variable the settings came from ("" for defaults) and its text.
  std::string source;
  std::string text;

  // Division count that applies to a request of `bytes` (0 or 1: none).
  size_t roundupDivisionsFor(size_t bytes) const noexcept;

  // Parses a PYTORCH_NPU_ALLOC_CONF text. `variable` only names the source in
  // error messages. Throws ConfigError.
  static AllocatorConfig parse(std::string_view text,
                               std::string_view variable = "PYTORCH_NPU_ALLOC_CONF");
  // Parses `text` over `base`, as torch_npu's parseArgs does for
  // _set_allocator_settings: max_split_size_mb, garbage_collection_threshold
  // and roundup_power2_divisions restart from their defaults, every other
  // setting keeps its value unless `text` names it. Throws ConfigError.
  static AllocatorConfig parseOnto(const AllocatorConfig& base, std::string_view text, std::string_view variable);

  // Reads PYTORCH_NPU_ALLOC_CONF, PYTORCH_ALLOC_CONF and
  // PYTORCH_NO_NPU_MEMORY_CACHING from the process environment. Throws
  // ConfigError.
  static AllocatorConfig fromEnvironment();
};

}  // namespace npusim::runtime
