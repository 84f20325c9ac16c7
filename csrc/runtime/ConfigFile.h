// Reading the small text files that configure npusim (chip files, placement
// overrides) without hanging, exhausting memory or printing raw bytes.
//
// A configuration path may name anything: a FIFO (whose open blocks until a
// writer appears), /dev/zero (endless), a directory, a file the user cannot
// read. Each is refused with an error that names the path and says why.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace npusim::runtime {

// The whole content of the regular file at `path` (symbolic links followed).
// Opens without blocking (O_NONBLOCK) and checks the opened file before
// reading, so a FIFO or device never blocks. Throws ConfigError
// "<what> <path> cannot be read: <reason>" when the file cannot be opened or
// read, is not a regular file, or holds more than `maxBytes`.
std::string readConfigFile(const std::string& path, std::string_view what, std::size_t maxBytes = std::size_t{1} << 20);

// `text` for an error message: control characters, NUL and bytes outside
// printable ASCII become \xNN, and the result is cut at `maxLength`.
std::string printableText(std::string_view text, std::size_t maxLength = 80);

}  // namespace npusim::runtime
