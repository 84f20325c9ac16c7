#include "tools/InspectCommand.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tools/tests/ToolsTestSupport.h"

namespace npusim::tools {

namespace {

struct Result {
  int status;
  std::string out, err;
};

Result inspect(std::vector<std::string> arguments) {
  std::ostringstream out, err;
  const int status = runInspect(arguments, out, err);
  return {status, out.str(), err.str()};
}

}  // namespace

TEST(InspectCommand, ResolveKeyValuePlogAndRealpathPrintJson) {
  testing::TemporaryDirectory dir;
  testing::compileSharedLibrary(dir / "lib/libhccl.so", "libhccl.so", "hccl");
  const Result resolve = inspect({"resolve", "--ld-library-path", dir / "lib", "--cache", dir / "none", "--default-dirs",
                                  dir / "empty", "libhccl.so", "libascendcl.so"});
  EXPECT_EQ(resolve.status, 0) << resolve.err;
  EXPECT_NE(resolve.out.find("\"name\":\"libhccl.so\",\"selected\":0"), std::string::npos) << resolve.out;
  EXPECT_NE(resolve.out.find("\"status\":\"selected\""), std::string::npos);
  EXPECT_NE(resolve.out.find("\"soname\":\"libhccl.so\""), std::string::npos);
  EXPECT_NE(resolve.out.find("\"name\":\"libascendcl.so\",\"selected\":-1"), std::string::npos);

  testing::writeFile(dir / "version.info", "Version=24.1.rc3\nname=bad\xff\n");
  const Result keyvalue = inspect({"keyvalue", dir / "version.info", dir / "missing"});
  EXPECT_EQ(keyvalue.status, 0);
  EXPECT_NE(keyvalue.out.find("[\"Version\",\"24.1.rc3\"]"), std::string::npos) << keyvalue.out;
  EXPECT_NE(keyvalue.out.find(R"(bad\\xff)"), std::string::npos);  // raw bytes escaped, JSON stays valid
  EXPECT_NE(keyvalue.out.find("\"error\":\"No such file or directory\""), std::string::npos);

  testing::writeFile(dir / "log/debug/plog/plog-5_1.log",
                     "[ERROR] RUNTIME(5,python3):2025-12-23-02:13:21.089.239 [api_impl.cc:1] 5 x err=507899.\n");
  const Result plog = inspect({"plog", "--max-bytes-per-file", "1000", dir / "log"});
  EXPECT_EQ(plog.status, 0);
  EXPECT_NE(plog.out.find("\"module\":\"RUNTIME\",\"code\":\"507899\",\"count\":1"), std::string::npos) << plog.out;
  EXPECT_NE(plog.out.find("\"codes\":[\"507899\"]"), std::string::npos);

  const Result realpath = inspect({"realpath", dir / "missing"});
  EXPECT_NE(realpath.out.find("\"path\":null,\"error\":\"No such file or directory\""), std::string::npos) << realpath.out;
}

TEST(InspectCommand, UsageErrors) {
  for (const auto& arguments : std::vector<std::vector<std::string>>{
           {}, {"nonsense", "x"}, {"resolve"}, {"resolve", "--cache"}, {"plog", "--max-bytes-per-file", "many", "/x"}, {"elf"}}) {
    const Result result = inspect(arguments);
    EXPECT_EQ(result.status, 2);
    EXPECT_NE(result.err.find("usage: npusim-inspect"), std::string::npos);
    EXPECT_TRUE(result.out.empty());
  }
}

}  // namespace npusim::tools
