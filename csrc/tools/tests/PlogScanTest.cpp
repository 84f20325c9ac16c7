#include "tools/PlogScan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tools/tests/ToolsTestSupport.h"

namespace npusim::tools {

namespace {

// Real lines of the contract (§7), the kind a failed run leaves behind.
const char* kRuntimeLine =
    "[ERROR] RUNTIME(144,python3):2025-12-23-02:13:21.089.239 [api_impl.cc:7817] 144 PeekLastErr: level=0 err=507899.";
const char* kAppLine =
    "[ERROR] APP(144,python3):2025-12-23-02:13:21.089.282 [log_inner.cpp:77]144 build/CMakeFiles/torch_npu.dir/"
    "compiler_depend.ts:device_count:41: \"[PTA]:\"get device count of NPU failed\"\"";
const char* kAclLine =
    "[ERROR] ASCENDCL(901649,aiv_aicpu_bench):2026-06-13-17:00:33.666.644 [stream.cpp:139]901649 "
    "aclrtSynchronizeStreamImpl:synchronize stream failed, runtime result = 507018";

}  // namespace

TEST(PlogScan, ParsesTheCannLineFormat) {
  PlogLine line;
  ASSERT_TRUE(parsePlogLine(kRuntimeLine, line));
  EXPECT_EQ(line.level, "ERROR");
  EXPECT_EQ(line.module, "RUNTIME");
  EXPECT_EQ(line.pid, 144);
  EXPECT_EQ(line.processName, "python3");
  EXPECT_EQ(line.timestamp, "2025-12-23-02:13:21.089.239");
  EXPECT_EQ(line.source, "api_impl.cc:7817");
  EXPECT_EQ(line.content, "PeekLastErr: level=0 err=507899.");
  ASSERT_TRUE(parsePlogLine(kAppLine, line));
  EXPECT_EQ(line.module, "APP");
  EXPECT_EQ(line.content.rfind("build/CMakeFiles", 0), 0u);
  EXPECT_FALSE(parsePlogLine("Traceback (most recent call last):", line));
  EXPECT_FALSE(parsePlogLine("[ERROR] no module here", line));
  EXPECT_FALSE(parsePlogLine("[ERROR] M(abc,p):2025 x", line));
}

TEST(PlogScan, FindsErrorCodes) {
  EXPECT_EQ(errorCodesIn("PeekLastErr: level=0 err=507899."), std::vector<std::string>{"507899"});
  EXPECT_EQ(errorCodesIn("runtime result = 507018"), std::vector<std::string>{"507018"});
  EXPECT_EQ(errorCodesIn("NPU function error: aclrtGetDeviceCount(&device_count), error code is 207004 EE1001 x"),
            (std::vector<std::string>{"EE1001", "207004"}));
  EXPECT_EQ(errorCodesIn("EZ9999: Inner Error! ERR01100 OPS call acl api failed"),
            (std::vector<std::string>{"EZ9999", "ERR01100"}));
  EXPECT_TRUE(errorCodesIn("ENABLE1234 and XEZ9999 and error code is 12").empty());
}

TEST(PlogScan, GroupsErrorsAndFindsTheFirstFailingCallOfEachProcess) {
  testing::TemporaryDirectory root;
  testing::writeFile(root / "debug/plog/plog-144_20251223021321089.log",
                     std::string("[INFO] RUNTIME(144,python3):2025-12-23-02:13:20.000.000 [a.cc:1]144 start\n") + kRuntimeLine +
                         "\n" + kAppLine + "\n" +
                         "[ERROR] RUNTIME(144,python3):2025-12-23-02:13:22.000.000 [api_impl.cc:7817] 144 PeekLastErr: err=507899.\n"
                         "not a plog line\n");
  testing::writeFile(root / "debug/plog/plog-901649_20260613170033666.log", std::string(kAclLine) + "\n");
  testing::writeFile(root / "debug/device-0/device-144_20251223021321089.log",
                     "[ERROR] AICPU(9,aicpu):2025-12-23-02:13:21.000.001 [k.cc:2]9 kernel failed EZ9999\n");
  testing::writeFile(root / "debug/plog/notes.txt", kRuntimeLine);  // not a plog file name
  const PlogScanResult result = scanPlogRoots({root.path(), root / "absent"});
  EXPECT_EQ(result.files.size(), 3u);
  EXPECT_EQ(result.missingRoots, std::vector<std::string>{root / "absent"});
  EXPECT_EQ(result.unparsedLines, 1u);
  EXPECT_EQ(result.levelCounts.at("ERROR"), 5u);
  EXPECT_EQ(result.levelCounts.at("INFO"), 1u);
  ASSERT_EQ(result.groups.size(), 4u);
  // Ordered by first occurrence: the device-side kernel failure came first.
  EXPECT_EQ(result.groups[0].module, "AICPU");
  EXPECT_EQ(result.groups[0].code, "EZ9999");
  EXPECT_EQ(result.groups[1].module, "RUNTIME");
  EXPECT_EQ(result.groups[1].code, "507899");
  EXPECT_EQ(result.groups[1].count, 2u);
  EXPECT_EQ(result.groups[1].first.lineNumber, 2u);
  EXPECT_EQ(result.groups[1].lastTimestamp, "2025-12-23-02:13:22.000.000");
  EXPECT_EQ(result.groups[2].module, "APP");
  EXPECT_EQ(result.groups[2].code, "");
  EXPECT_EQ(result.groups[3].code, "507018");
  ASSERT_EQ(result.firstErrorPerProcess.size(), 3u);
  EXPECT_EQ(result.firstErrorPerProcess[1].line.pid, 144);
  EXPECT_EQ(result.firstErrorPerProcess[1].line.content, "PeekLastErr: level=0 err=507899.");
}

TEST(PlogScan, HugeBinaryLinkedAndLoopingInputIsBoundedAndReported) {
  testing::TemporaryDirectory root;
  testing::TemporaryDirectory outside;
  const std::string plog = root / "debug/plog";
  // 3 MiB of errors with a byte budget of 1 MiB: read up to the budget, reported as truncated.
  std::string many;
  while (many.size() < (3u << 20)) many += std::string(kRuntimeLine) + "\n";
  testing::writeFile(plog + "/plog-1_1.log", many);
  // One over-long line (no newline for 200 KiB), then a normal one.
  testing::writeFile(plog + "/plog-2_1.log", std::string(200 * 1024, 'x') + "\n" + kAclLine + "\n");
  // Bytes that are not UTF-8 inside a valid line.
  testing::writeFile(plog + "/plog-3_1.log", "[ERROR] GE(3,py\xff):2025-01-01-00:00:00.000.000 [g.cc:1]3 bad \xfe\xfe EH9999\n");
  // Links are not followed: one to a file outside the tree, one directory loop.
  testing::writeFile(outside / "plog-9_1.log", kAclLine);
  ::symlink((outside / "plog-9_1.log").c_str(), (plog + "/plog-9_1.log").c_str());
  ::symlink(root.path().c_str(), (plog + "/loop").c_str());
  PlogScanLimits limits;
  limits.maxBytesPerFile = 1 << 20;
  const PlogScanResult result = scanPlogRoots({root.path()}, limits);
  EXPECT_EQ(result.files.size(), 3u);
  EXPECT_EQ(result.truncatedFiles, std::vector<std::string>{plog + "/plog-1_1.log"});
  EXPECT_EQ(result.nonUtf8Lines, 1u);
  EXPECT_GE(result.unparsedLines, 1u);  // the over-long line
  std::vector<std::string> skipped;
  for (const auto& [path, reason] : result.skipped) skipped.push_back(path + ": " + reason);
  EXPECT_EQ(skipped, (std::vector<std::string>{plog + "/loop: symbolic link: not followed",
                                                plog + "/plog-9_1.log: symbolic link: not followed"}));
  bool sawGe = false;
  for (const auto& group : result.groups) sawGe |= group.module == "GE" && group.code == "EH9999";
  EXPECT_TRUE(sawGe);
}

}  // namespace npusim::tools
