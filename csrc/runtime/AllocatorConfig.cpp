#include "runtime/AllocatorConfig.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "runtime/Error.h"

namespace npusim::runtime {

namespace {

constexpr std::string_view kAcceptedKeys =
    "max_split_size_mb, garbage_collection_threshold, expandable_segments, base_addr_aligned_kb, "
    "page_size, segment_size_mb, large_segment_size_mb, roundup_power2_divisions, "
    "max_non_split_rounding_mb, per_process_memory_fraction, multi_stream_lazy_reclaim, "
    "throw_on_npumalloc_oom, release_lock_on_npumalloc, pinned_use_background_threads, "
    "pin_memory_expandable_segments, pinned_mem_register, pinned_max_round_threshold_mb, "
    "pinned_max_cached_size_mb, pinned_reserve_segment_size_mb";

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Removes every blank, as torch's tokenizer does ("max_split_size_mb : 64").
std::string withoutBlanks(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') result.push_back(c);
  }
  return result;
}

class Parser {
 public:
  explicit Parser(std::string_view variable) : variable_(variable) {}

  [[noreturn]] void fail(std::string_view key, std::string_view requirement, std::string_view value) const {
    std::string message(variable_);
    message += ": ";
    message += key;
    message += ' ';
    message += requirement;
    message += ", got \"";
    message += value;
    message += '"';
    throw ConfigError(message);
  }

  [[noreturn]] void failText(std::string_view text) const {
    throw ConfigError(std::string(variable_) + ": " + std::string(text));
  }

  std::optional<uint64_t> unsignedValue(std::string_view value) const {
    if (value.empty() || value.size() > 19) return std::nullopt;
    uint64_t result = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
    if (error != std::errc() || end != value.data() + value.size()) return std::nullopt;
    return result;
  }

  uint64_t integer(std::string_view key, std::string_view value, std::string_view requirement) const {
    auto parsed = unsignedValue(value);
    if (!parsed) fail(key, requirement, value);
    return *parsed;
  }

  double real(std::string_view key, std::string_view value, std::string_view requirement) const {
    double result = 0.0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
    if (value.empty() || error != std::errc() || end != value.data() + value.size() || !std::isfinite(result)) {
      fail(key, requirement, value);
    }
    return result;
  }

  bool boolean(std::string_view key, std::string_view value) const {
    if (value == "True" || value == "true") return true;
    if (value == "False" || value == "false") return false;
    fail(key, "must be True or False", value);
  }

  static size_t megabytes(uint64_t value) {
    if (value > AllocatorConfig::kUnlimited / AllocatorConfig::kMiB) return AllocatorConfig::kUnlimited;
    return static_cast<size_t>(value) * AllocatorConfig::kMiB;
  }

  static bool zeroOrPowerOfTwo(uint64_t value) { return value == 0 || std::has_single_bit(value); }

  void roundupDivisions(AllocatorConfig& config, std::string_view value) const {
    constexpr std::string_view key = "roundup_power2_divisions";
    if (value.empty() || value.front() != '[') {
      uint64_t divisions = integer(key, value, "must be a power of two (or 0), or a list such as [256:1,512:2,>:4]");
      if (!zeroOrPowerOfTwo(divisions)) fail(key, "must be a power of two (or 0)", value);
      config.roundupPower2Divisions.fill(static_cast<size_t>(divisions));
      return;
    }
    if (value.back() != ']') fail(key, "list must end with ']'", value);
    std::string_view body = value.substr(1, value.size() - 2);
    std::vector<std::pair<size_t, size_t>> boundaries;  // interval index, divisions
    std::optional<size_t> above;
    while (!body.empty()) {
      size_t comma = body.find(',');
      std::string_view entry = body.substr(0, comma);
      body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
      if (entry.empty()) continue;
      size_t colon = entry.find(':');
      if (colon == std::string_view::npos) fail(key, "list entries must be <size_mb>:<divisions> or >:<divisions>", entry);
      std::string_view bound = entry.substr(0, colon);
      std::string_view count = entry.substr(colon + 1);
      uint64_t divisions = integer(key, count, "divisions must be a power of two (or 0)");
      if (!zeroOrPowerOfTwo(divisions)) fail(key, "divisions must be a power of two (or 0)", count);
      if (bound == ">") {
        above = static_cast<size_t>(divisions);
        continue;
      }
      uint64_t boundaryMiB = integer(key, bound, "interval sizes must be a power of two in MB");
      if (!std::has_single_bit(boundaryMiB)) fail(key, "interval sizes must be a power of two in MB", bound);
      size_t index = std::min<size_t>(std::bit_width(boundaryMiB) - 1, AllocatorConfig::kRoundupIntervals - 1);
      auto existing = std::find_if(boundaries.begin(), boundaries.end(),
                                   [&](const auto& b) { return b.first == index; });
      if (existing != boundaries.end()) {
        existing->second = static_cast<size_t>(divisions);
      } else {
        boundaries.emplace_back(index, static_cast<size_t>(divisions));
      }
    }
    std::sort(boundaries.begin(), boundaries.end());
    auto& table = config.roundupPower2Divisions;
    if (boundaries.empty()) {
      table.fill(above.value_or(0));
      return;
    }
    // A boundary's value applies from its interval up to the next boundary;
    // sizes below the first boundary take the first value; ">" applies above
    // the last boundary's interval.
    size_t next = 0;
    for (size_t i = 0; i < AllocatorConfig::kRoundupIntervals; ++i) {
      while (next + 1 < boundaries.size() && boundaries[next + 1].first <= i) ++next;
      table[i] = boundaries[next].second;
    }
    if (above) {
      for (size_t i = boundaries.back().first + 1; i < AllocatorConfig::kRoundupIntervals; ++i) table[i] = *above;
    }
  }

  void item(AllocatorConfig& config, std::string_view key, std::string_view value, bool& splitOrGcSet) const {
    if (key == "max_split_size_mb") {
      uint64_t mb = integer(key, value, "must be > 20 (an integer number of MB)");
      if (mb <= 20) fail(key, "must be > 20", value);
      config.maxSplitSize = megabytes(mb);
      splitOrGcSet = true;
    } else if (key == "garbage_collection_threshold") {
      double threshold = real(key, value, "must be a number between 0.0 and 1.0 (exclusive)");
      if (threshold <= 0.0 || threshold >= 1.0) fail(key, "must be between 0.0 and 1.0 (exclusive)", value);
      config.garbageCollectionThreshold = threshold;
      splitOrGcSet = true;
    } else if (key == "expandable_segments") {
      config.expandableSegments = boolean(key, value);
    } else if (key == "base_addr_aligned_kb") {
      uint64_t kb = integer(key, value, "must be an integer in [0, 16]");
      if (kb > 16) fail(key, "must be an integer in [0, 16]", value);
      config.baseAddrAlignedBytes = static_cast<size_t>(kb) * 1024;
    } else if (key == "page_size") {
      if (value != "1g") fail(key, "must be 1g", value);
      config.pageSize1g = true;
    } else if (key == "segment_size_mb") {
      // torch_npu's own (deprecated) key.
      uint64_t mb = integer(key, value, "must be an integer in [20, 512]");
      if (mb < 20 || mb > 512) fail(key, "must be an integer in [20, 512]", value);
      // large_segment_size_mb takes priority, in whichever order they come.
      if (!largeSegmentSizeSet_) config.largeSegmentSize = megabytes(mb);
    } else if (key == "large_segment_size_mb") {
      // PyTorch's key (c10's allocator config): above the smallest large
      // allocation, 10 MB.
      uint64_t mb = integer(key, value, "must be > 10 (an integer number of MB)");
      if (mb <= 10) fail(key, "must be > 10", value);
      config.largeSegmentSize = megabytes(mb);
      largeSegmentSizeSet_ = true;
    } else if (key == "roundup_power2_divisions") {
      roundupDivisions(config, value);
    } else if (key == "max_non_split_rounding_mb") {
      uint64_t mb = integer(key, value, "must be >= 20 (an integer number of MB)");
      if (mb < 20) fail(key, "must be >= 20", value);
      config.maxNonSplitRoundingSize = megabytes(mb);
    } else if (key == "per_process_memory_fraction") {
      double fraction = real(key, value, "must be a number in [0.0, 1.0]");
      if (fraction < 0.0 || fraction > 1.0) fail(key, "must be in [0.0, 1.0]", value);
      config.perProcessMemoryFraction = fraction;
    } else if (key == "multi_stream_lazy_reclaim") {
      config.multiStreamLazyReclaim = boolean(key, value);
    } else if (key == "throw_on_npumalloc_oom") {
      config.throwOnNpumallocOom = boolean(key, value);
    } else if (key == "release_lock_on_npumalloc") {
      config.releaseLockOnNpumalloc = boolean(key, value);
    } else if (key == "pinned_use_background_threads") {
      config.pinnedUseBackgroundThreads = boolean(key, value);
    } else if (key == "pin_memory_expandable_segments") {
      config.pinMemoryExpandableSegments = boolean(key, value);
    } else if (key == "pinned_mem_register") {
      config.pinnedMemRegister = boolean(key, value);
    } else if (key == "pinned_max_round_threshold_mb") {
      config.pinnedMaxRoundThreshold = megabytes(integer(key, value, "must be an integer number of MB"));
    } else if (key == "pinned_max_cached_size_mb") {
      config.pinnedMaxCachedSize = megabytes(integer(key, value, "must be an integer number of MB"));
    } else if (key == "pinned_reserve_segment_size_mb") {
      config.pinnedReserveSegmentSize = megabytes(integer(key, value, "must be an integer number of MB"));
    } else {
      failText("unknown key \"" + std::string(key) + "\"; accepted keys are " + std::string(kAcceptedKeys));
    }
  }

 private:
  std::string_view variable_;
  mutable bool largeSegmentSizeSet_ = false;
};

}  // namespace

size_t AllocatorConfig::roundupDivisionsFor(size_t bytes) const noexcept {
  // floor(log2(bytes)) - 20, clamped to [0, kRoundupIntervals - 1].
  size_t log2 = bytes == 0 ? 0 : static_cast<size_t>(std::bit_width(bytes) - 1);
  size_t index = log2 > 20 ? log2 - 20 : 0;
  return roundupPower2Divisions[std::min(index, kRoundupIntervals - 1)];
}

AllocatorConfig AllocatorConfig::parse(std::string_view text, std::string_view variable) {
  return parseOnto(AllocatorConfig{}, text, variable);
}

AllocatorConfig AllocatorConfig::parseOnto(const AllocatorConfig& base, std::string_view text,
                                           std::string_view variable) {
  AllocatorConfig config = base;
  const AllocatorConfig defaults;
  config.maxSplitSize = defaults.maxSplitSize;
  config.garbageCollectionThreshold = defaults.garbageCollectionThreshold;
  config.roundupPower2Divisions = defaults.roundupPower2Divisions;
  config.source = std::string(variable);
  config.text = std::string(text);
  Parser parser(variable);
  const std::string compact = withoutBlanks(text);
  std::string_view rest = compact;
  bool splitOrGcSet = false;
  while (!rest.empty()) {
    // Split at the next comma outside brackets.
    size_t end = 0;
    int depth = 0;
    for (; end < rest.size(); ++end) {
      char c = rest[end];
      if (c == '[') ++depth;
      else if (c == ']') --depth;
      else if (c == ',' && depth == 0) break;
    }
    if (depth != 0) parser.failText("unbalanced brackets in \"" + std::string(rest.substr(0, end)) + "\"");
    std::string_view item = trim(rest.substr(0, end));
    rest = end < rest.size() ? rest.substr(end + 1) : std::string_view();
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      parser.failText("expected key:value, got \"" + std::string(item) + "\"");
    }
    std::string_view key = item.substr(0, colon);
    std::string_view value = item.substr(colon + 1);
    if (value.empty()) parser.fail(key, "needs a value", value);
    parser.item(config, key, value, splitOrGcSet);
  }
  if (config.maxSplitSize != kUnlimited && config.maxSplitSize < config.largeSegmentSize) {
    // A large segment must stay splittable.
    parser.fail("max_split_size_mb", "too small, must be >= large_segment_size_mb (" +
                                         std::to_string(config.largeSegmentSize / kMiB) + ")",
                std::to_string(config.maxSplitSize / kMiB));
  }
  if (config.expandableSegments && splitOrGcSet) {
    parser.failText(
        "`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with `expandable_segments`, "
        "please set `expandable_segments` to `False`.");
  }
  return config;
}

AllocatorConfig AllocatorConfig::fromEnvironment() {
  const char* npuText = std::getenv("PYTORCH_NPU_ALLOC_CONF");
  const char* genericText = std::getenv("PYTORCH_ALLOC_CONF");
  if (npuText != nullptr && genericText != nullptr && std::string_view(npuText) != std::string_view(genericText)) {
    throw ConfigError(
        "PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF are both set, to different values (\"" +
        std::string(npuText) + "\" and \"" + std::string(genericText) + "\"); set only one of them");
  }
  AllocatorConfig config;
  if (npuText != nullptr) {
    config = parse(npuText, "PYTORCH_NPU_ALLOC_CONF");
  } else if (genericText != nullptr) {
    config = parse(genericText, "PYTORCH_ALLOC_CONF");
  }
  const char* noCaching = std::getenv("PYTORCH_NO_NPU_MEMORY_CACHING");
  config.cachingDisabled = noCaching != nullptr && std::string_view(noCaching) == "1";
  return config;
}

}  // namespace npusim::runtime
