// Tests of the GPU catalog (admission/gpu_catalog.h).
#include "admission/gpu_catalog.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(GpuCatalogTest, BuiltinHasTheCommonTrainingGpus) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  for (const char* name : {"H100-SXM-80GB", "H200-141GB", "A100-SXM-80GB", "A100-40GB",
                           "B200-192GB", "MI300X-192GB"}) {
    absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(name);
    ASSERT_TRUE(gpu.ok()) << name;
    EXPECT_EQ(gpu->name(), name);
    EXPECT_FALSE(gpu->description().empty());
  }
  // What PyTorch reports as total capacity.
  EXPECT_EQ(catalog.Find("H100-SXM-80GB")->memory_bytes(), 81009 * kMiB);
  EXPECT_EQ(catalog.Find("A100-40GB")->memory_bytes(), 40540 * kMiB);
}

TEST(GpuCatalogTest, FindIgnoresCaseAndUnderscoresAndKnowsAliases) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  EXPECT_EQ(catalog.Find("h100_sxm_80gb")->name(), "H100-SXM-80GB");
  EXPECT_EQ(catalog.Find("H100")->name(), "H100-SXM-80GB");
  EXPECT_EQ(catalog.Find("mi300x")->name(), "MI300X-192GB");
  absl::StatusOr<v1::GpuSpec> unknown = catalog.Find("V100");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("'V100'"));
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("B200-192GB"));
}

// Issue 12 (C): a 10,000-character name is echoed cut short, so that the
// status message stays within a client's metadata limit.
TEST(GpuCatalogTest, UnknownLongNameIsEchoedCutShort) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  absl::StatusOr<v1::GpuSpec> unknown = catalog.Find(std::string(10000, 'G'));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  const std::string message(unknown.status().message());
  EXPECT_THAT(message, HasSubstr("unknown GPU '" + std::string(80, 'G') + "...'; known: "));
  EXPECT_LT(message.size(), 300u);
  EXPECT_THAT(std::string(catalog.Find("H900\n").status().message()),
              HasSubstr(R"(unknown GPU 'H900\x0a')"));
}

TEST(GpuCatalogTest, OverridesReplaceByNameAndAdd) {
  absl::StatusOr<GpuCatalog> catalog = GpuCatalog::Builtin().WithOverrides(R"pb(
    gpus { name: "h100-sxm-80gb" memory_bytes: 1000 }
    gpus { name: "L40S-48GB" aliases: "L40S" memory_bytes: 2000 vendor: GPU_VENDOR_NVIDIA }
  )pb");
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->gpus().size(), 7u);
  EXPECT_EQ(catalog->Find("H100-SXM-80GB")->memory_bytes(), 1000u);
  EXPECT_EQ(catalog->Find("l40s")->memory_bytes(), 2000u);
}

TEST(GpuCatalogTest, BadOverridesAreInvalidArgument) {
  const GpuCatalog builtin = GpuCatalog::Builtin();
  for (const char* text : {"gpus { name: ", "gpus { name: \"X\" }", "gpus { memory_bytes: 5 }",
                           "gpus { name: \"X\" aliases: \"H100\" memory_bytes: 5 }"}) {
    absl::StatusOr<GpuCatalog> catalog = builtin.WithOverrides(text);
    EXPECT_EQ(catalog.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  EXPECT_THAT(std::string(builtin.WithOverrides("gpus { name: \"X\" }").status().message()),
              HasSubstr("gpus[6].memory_bytes = 0"));
}

TEST(GpuCatalogTest, NcclGraphRegisterOffIsNeededBeforeBlackwell) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  EXPECT_TRUE(NeedsNcclGraphRegisterOff(*catalog.Find("H100")));
  EXPECT_TRUE(NeedsNcclGraphRegisterOff(*catalog.Find("A100-40GB")));
  EXPECT_FALSE(NeedsNcclGraphRegisterOff(*catalog.Find("B200")));
  EXPECT_TRUE(NeedsNcclGraphRegisterOff(v1::GpuSpec()));  // Unknown: be safe.
}

}  // namespace
}  // namespace oomguard
