// Reading the shipped RL examples (examples/rl/) in the RL readers' tests.
#ifndef OOMGUARD_TESTS_JOBSPEC_RL_TEST_UTIL_H_
#define OOMGUARD_TESTS_JOBSPEC_RL_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jobspec/shell_words.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard::testing {

inline std::string ReadRlExample(const std::string& name) {
  std::ifstream file(std::string(OOMGUARD_SOURCE_DIR) + "/examples/rl/" + name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// An RlJob of the example's YAML text.
inline v1::RlJob RlYamlJob(const std::string& yaml) {
  v1::RlJob job;
  job.set_config_yaml(yaml);
  return job;
}

// An RlJob of the example's argv (a shell line, as examples/*.args are).
inline v1::RlJob RlArgvJob(const std::string& line) {
  v1::RlJob job;
  absl::StatusOr<std::vector<std::string>> words = SplitArgumentLine(line);
  if (words.ok()) {
    for (const std::string& word : *words) job.add_argv(word);
  }
  return job;
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_JOBSPEC_RL_TEST_UTIL_H_
