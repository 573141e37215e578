// The shipped example jobs (examples/*.args), read by the tests instead of
// restating them. OOMGUARD_SOURCE_DIR is defined for every test binary.
#ifndef OOMGUARD_TESTS_TESTING_EXAMPLES_H_
#define OOMGUARD_TESTS_TESTING_EXAMPLES_H_

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "jobspec/megatron_args.h"

namespace oomguard::testing {

// DeepSeek-V3 on 256 GPUs: TP1 PP8 VPP4 (layout Et|(tt|)*30mL) EP32, full
// recompute (the README's example).
inline constexpr char kDeepSeekV3With256Gpus[] = "deepseek_v3_256gpu.args";
// DeepSeek-V3 on 1024 GPUs: TP2 PP16 VPP2 EP64, selective recompute.
inline constexpr char kDeepSeekV3With1024Gpus[] = "deepseek_v3_1024gpu.args";

// The text of examples/`name`: Megatron-LM arguments, shell-quoted, over
// several lines.
inline std::string ExampleArgsLine(const std::string& name) {
  const std::string path = std::string(OOMGUARD_SOURCE_DIR) + "/examples/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The same arguments, one word per element.
inline std::vector<std::string> ExampleArgs(const std::string& name) {
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(ExampleArgsLine(name));
  if (!words.ok()) throw std::runtime_error(std::string(words.status().message()));
  return *std::move(words);
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_EXAMPLES_H_
