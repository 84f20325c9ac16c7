// Helpers shared by the tools' tests: temporary trees and files.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace npusim::tools::testing {

// A fresh directory under /tmp, removed with everything in it.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    char pattern[] = "/tmp/npusim-tools-test-XXXXXX";
    const char* created = ::mkdtemp(pattern);
    if (created == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = created;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

// Writes `content` to `path`, creating the parent directories.
inline void writeFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream stream(path, std::ios::binary);
  stream << content;
  if (!stream) throw std::runtime_error("cannot write " + path);
}

inline std::string readFile(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream content;
  content << stream.rdbuf();
  return content.str();
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
