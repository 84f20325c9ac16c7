// Reading the environment variables that configure the simulated stack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace npusim::runtime {

// The value of `name`, or nullopt when it is unset.
std::optional<std::string> environmentValue(const char* name);

// An integer variable: `fallback` when unset or empty; ConfigError naming the
// variable and the accepted range when it is not an integer in [min, max].
int64_t integerEnvironmentValue(const char* name, int64_t fallback, int64_t min, int64_t max);

}  // namespace npusim::runtime
