// The one conversion from a launch to a CheckRequest: words stay words.
#include "jobscript/check_request.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace oomguard {
namespace {

TEST(BuildCheckRequestTest, WordsArriveAsTheyWereWritten) {
  const std::vector<std::string> words = {"--pipeline-model-parallel-layout",
                                          "Et|(tt|)*30mL",
                                          "it's",
                                          "",
                                          "a b",
                                          "$(X)",
                                          "back\\slash",
                                          "--seq-length=4096"};
  LaunchCheck launch;
  launch.megatron_args = words;
  launch.num_gpus = 8;
  launch.gpu_name = "H100-SXM-80GB";
  const v1::CheckRequest request = BuildCheckRequest(launch);
  const v1::MegatronJob& megatron = request.job().megatron();
  EXPECT_EQ(std::vector<std::string>(megatron.argv().begin(), megatron.argv().end()), words);
  EXPECT_TRUE(megatron.args().empty());
  EXPECT_EQ(megatron.num_gpus(), 8u);
  EXPECT_EQ(request.gpu_name(), "H100-SXM-80GB");
  EXPECT_FALSE(request.has_policy());
}

TEST(BuildCheckRequestTest, CarriesPresetEnvGpuMemoryAndMargin) {
  LaunchCheck launch;
  launch.preset = "deepseek-v3";
  launch.num_gpus = 256;
  launch.gpus_per_node = 4;
  launch.env = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  launch.gpu_memory_bytes = uint64_t{80} << 30;
  launch.safety_margin = 0.1;
  const v1::CheckRequest request = BuildCheckRequest(launch);
  EXPECT_EQ(request.job().megatron().preset(), "deepseek-v3");
  EXPECT_EQ(request.job().gpus_per_node(), 4u);
  EXPECT_EQ(request.job().env().at("PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True");
  EXPECT_EQ(request.gpu_memory_bytes(), uint64_t{80} << 30);
  EXPECT_DOUBLE_EQ(request.policy().safety_margin(), 0.1);
}

// A script's bytes that are not UTF-8, in words, the environment and the
// words' sources, become U+FFFD (common/valid_utf8.h): the request parses.
TEST(BuildCheckRequestTest, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  LaunchCheck launch;
  launch.num_gpus = 8;
  launch.megatron_args = {"--data-path", "/data/\xff"};
  launch.megatron_arg_sources = {"", "$D\xfe"};
  launch.env = {{"PYTORCH_CUDA_ALLOC_CONF\xff", "x\xff"}};
  const v1::CheckRequest request = BuildCheckRequest(launch);
  const std::string f = "\xEF\xBF\xBD";  // U+FFFD.
  v1::CheckRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(request.SerializeAsString()));
  EXPECT_EQ(parsed.job().megatron().argv(1), "/data/" + f);
  EXPECT_EQ(parsed.job().megatron().argv_sources().at(1), "$D" + f);
  EXPECT_EQ(parsed.job().env().at("PYTORCH_CUDA_ALLOC_CONF" + f), "x" + f);
}

}  // namespace
}  // namespace oomguard
