// Helpers shared by the tools' tests: the runtime tests' temporary directory
// and file reader, plus files and shared libraries written by the tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "runtime/tests/TestSupport.h"

namespace npusim::tools::testing {

using runtime::testing::readFile;
using runtime::testing::TemporaryDirectory;

// Writes `content` to `path`, creating the parent directories.
inline void writeFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream stream(path, std::ios::binary);
  stream << content;
  if (!stream) throw std::runtime_error("cannot write " + path);
}

// Runs a shell command; throws when it fails (the test compiler must work).
inline void runOrThrow(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("command failed: " + command);
}

// Compiles a shared library exporting `symbol` with the system C compiler.
// `linkFlags` adds e.g. "-Wl,-rpath,/x -Wl,--disable-new-dtags".
inline void compileSharedLibrary(const std::string& output, const std::string& soname, const std::string& symbol,
                                 const std::string& linkFlags = "") {
  std::filesystem::create_directories(std::filesystem::path(output).parent_path());
  const std::string source = output + ".c";
  writeFile(source, "int " + symbol + "(void) { return 42; }\n");
  runOrThrow("cc -shared -fPIC -o '" + output + "' '" + source + "' -Wl,-soname," + soname + " " + linkFlags);
  std::filesystem::remove(source);
}

}  // namespace npusim::tools::testing
