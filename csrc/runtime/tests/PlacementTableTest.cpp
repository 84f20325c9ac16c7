#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "TestSupport.h"
#include "runtime/Error.h"
#include "runtime/PlacementTable.h"

using namespace npusim::runtime;

namespace {
int bit(const char* name) { return *dtypeIndex(name); }
DtypeMask mask(const char* name) { return DtypeMask{1} << bit(name); }

const char* kRelease =
    "# a comment\n"
    "aten::add.Tensor\tai_core\t-\tno\top-plugin\n"
    "aten::sort\tai_core\t-\tno\top-plugin\n"
    "aten::sort\tai_cpu\tdtype=int64\tno\tinferred:PTMIGR\n"
    "aten::nonzero\tai_cpu\t-\tyes\tinferred:HW61\n"
    "aten::index.Tensor\tai_core\t-\tno\top-plugin\n"
    "aten::index.Tensor\tai_cpu\tindex_dtype=bool,uint8\tyes\tinferred:HW61\n"
    "aten::lerp.*\tai_core\t-\tno\top-plugin\n";
}  // namespace

TEST(PlacementTable, UnconditionalAndDtypeRules) {
  PlacementTable table;
  table.addRules(kRelease, "release.tsv", false);
  const auto add = table.lookup("aten::add.Tensor");
  ASSERT_TRUE(add.listed());
  EXPECT_EQ(add.resolve(bit("float32"), 0)->placement, Placement::kAiCore);
  const auto sort = table.lookup("aten::sort");
  EXPECT_EQ(sort.resolve(bit("float32"), 0)->placement, Placement::kAiCore);
  EXPECT_EQ(sort.resolve(bit("int64"), 0)->placement, Placement::kAiCpu);
  EXPECT_TRUE(table.lookup("aten::nonzero").resolve(-1, 0)->sync);
}

TEST(PlacementTable, IndexDtypeRules) {
  PlacementTable table;
  table.addRules(kRelease, "release.tsv", false);
  const auto index = table.lookup("aten::index.Tensor");
  EXPECT_EQ(index.resolve(bit("float32"), mask("int64"))->placement, Placement::kAiCore);
  const auto* boolean = index.resolve(bit("float32"), mask("bool") | mask("int64"));
  EXPECT_EQ(boolean->placement, Placement::kAiCpu);
  EXPECT_TRUE(boolean->sync);
}

TEST(PlacementTable, WildcardCoversEveryOverloadAndUnlistedIsUnlisted) {
  PlacementTable table;
  table.addRules(kRelease, "release.tsv", false);
  EXPECT_TRUE(table.lookup("aten::lerp.Scalar").listed());
  EXPECT_TRUE(table.lookup("aten::lerp").listed());
  EXPECT_FALSE(table.lookup("aten::lerp_.Scalar").listed());
  EXPECT_FALSE(table.lookup("aten::linalg_lstsq.out").listed());
  EXPECT_EQ(table.lookup("aten::linalg_lstsq.out").resolve(0, 0), nullptr);
}

TEST(PlacementTable, OverridesBeatTheReleaseTable) {
  PlacementTable table;
  table.addRules(kRelease, "release.tsv", false);
  table.addRules("aten::sort\tai_core\t-\tno\tmy kernel\naten::linalg_lstsq.out\tai_core\t-\tno\tcustom\n",
                 "mine.tsv", true);
  EXPECT_EQ(table.lookup("aten::sort").resolve(bit("int64"), 0)->placement, Placement::kAiCore);
  EXPECT_EQ(table.lookup("aten::linalg_lstsq.out").resolve(0, 0)->source, "custom");
}

TEST(PlacementTable, MalformedLinesNameFileAndLine) {
  PlacementTable table;
  try {
    table.addRules("aten::x\tai_core\t-\tno\tok\naten::y\tgpu\t-\tno\tbad\n", "bad.tsv", false);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.tsv line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(table.addRules("aten::x\tai_core\t-\n", "short.tsv", false), ConfigError);
  EXPECT_THROW(table.addRules("aten::x\tai_core\tdtype=int65\tno\ts\n", "d.tsv", false), ConfigError);
  EXPECT_THROW(table.addRules("aten::x\tai_core\t-\tmaybe\ts\n", "s.tsv", false), ConfigError);
  EXPECT_THROW(table.addRules("torch::x\tai_core\t-\tno\ts\n", "n.tsv", false), ConfigError);
}

TEST(PlacementTable, DtypeRules) {
  PlacementTable table;
  table.addDtypeRules(
      "float64\tcast_on_to_copy\tfloat32\t-\tDevice do not support double dtype now, dtype cast replace with float.\tC\n"
      "uint64\treject\t-\tERR01002\t{arg} scalar_type:{scalar_type}is not surpported.\tC\n"
      "uint64\treject_detail\t-\tEZ1001\tAclNN_Parameter_Error(EZ1001): Tensor {arg} not implemented\tC\n"
      "float64\tai_cpu\t-\t-\t-\tHW64\n",
      "dtypes.tsv");
  const auto& rules = table.dtypeRules();
  ASSERT_EQ(rules.casts.size(), 1u);
  EXPECT_EQ(rules.casts[0].from, bit("float64"));
  EXPECT_EQ(rules.casts[0].to, bit("float32"));
  EXPECT_EQ(rules.rejectMask, mask("uint64"));
  EXPECT_EQ(rules.rejects.at(bit("uint64")).errorCode, "ERR01002");
  EXPECT_NE(rules.rejects.at(bit("uint64")).detail.find("EZ1001"), std::string::npos);
  EXPECT_EQ(rules.aiCpuMask, mask("float64"));
  EXPECT_THROW(table.addDtypeRules("float64\tai_vector\t-\t-\t-\tX\n", "bad.tsv"), ConfigError);
}

TEST(PlacementTable, ReleaseLineFromEnvironment) {
  const npusim::runtime::testing::TemporaryDirectory directory;  // removed with its files at the end
  const std::string root = directory.path();
  std::filesystem::create_directory(root + "/placement");
  std::ofstream(root + "/placement/torch_npu-2.13.tsv") << kRelease;
  unsetenv("NPUSIM_TORCH_NPU_VERSION");
  unsetenv("NPUSIM_PLACEMENT_OVERRIDES");
  const PlacementTable table = PlacementTable::fromEnvironment(root);
  EXPECT_EQ(table.releaseLine(), "2.13");
  EXPECT_EQ(table.ruleCount(), 7u);
  setenv("NPUSIM_TORCH_NPU_VERSION", "1.0", 1);
  try {
    PlacementTable::fromEnvironment(root);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("available release lines: 2.13"), std::string::npos) << e.what();
  }
  unsetenv("NPUSIM_TORCH_NPU_VERSION");
  setenv("NPUSIM_PLACEMENT_OVERRIDES", (root + "/missing.tsv").c_str(), 1);
  EXPECT_THROW(PlacementTable::fromEnvironment(root), ConfigError);
  unsetenv("NPUSIM_PLACEMENT_OVERRIDES");
}

TEST(PlacementTable, ShippedTableParses) {
  const PlacementTable table = PlacementTable::fromEnvironment(NPUSIM_TEST_DATA_DIR);
  EXPECT_GT(table.ruleCount(), 1000u);
  EXPECT_TRUE(table.lookup("aten::add.Tensor").listed());
  EXPECT_FALSE(table.lookup("aten::linalg_lstsq.out").listed());
  EXPECT_EQ(table.lookup("aten::nonzero").resolve(-1, 0)->placement, Placement::kAiCpu);
}

TEST(PlacementTable, TorchNpuOperatorsHaveTheirOwnNamespace) {
  PlacementTable table;
  table.addRules("npu::npu_rms_norm.*\tai_core\t-\tno\top-plugin\n"
                 "npu::npu_apply_adam_w.out\tai_core\t-\tno\top-plugin\n",
                 "release.tsv", false);
  EXPECT_EQ(table.lookup("npu::npu_rms_norm").resolve(-1, 0)->placement, Placement::kAiCore);
  EXPECT_TRUE(table.lookup("npu::npu_apply_adam_w.out").listed());
  EXPECT_FALSE(table.lookup("npu::npu_apply_adam_w").listed());
  EXPECT_THROW(table.addRules("prims::add\tai_core\t-\tno\tx\n", "release.tsv", false), ConfigError);
}
