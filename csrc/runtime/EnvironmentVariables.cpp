#include "runtime/EnvironmentVariables.h"

#include <charconv>
#include <cstdlib>

#include "runtime/Error.h"

namespace npusim::runtime {

std::optional<std::string> environmentValue(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

int64_t integerEnvironmentValue(const char* name, int64_t fallback, int64_t min, int64_t max) {
  const auto text = environmentValue(name);
  if (!text || text->empty()) return fallback;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < min || value > max) {
    throw ConfigError(std::string(name) + "=" + *text + " is invalid: expected an integer from " +
                      std::to_string(min) + " to " + std::to_string(max));
  }
  return value;
}

}  // namespace npusim::runtime
