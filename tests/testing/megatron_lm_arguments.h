// Megatron-LM's own command-line flags and the values of those with
// `choices`, read from tests/data/megatron_lm_arguments.txt (generated from
// its megatron/training/arguments.py by tests/data/megatron_lm_arguments.py):
// the list every flag oomguard reads, writes or classifies is checked
// against.
#ifndef OOMGUARD_TESTS_TESTING_MEGATRON_LM_ARGUMENTS_H_
#define OOMGUARD_TESTS_TESTING_MEGATRON_LM_ARGUMENTS_H_

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "jobspec/ignored_flags.h"
#include "jobspec/megatron_flags.h"

namespace oomguard::testing {

// Every option string of Megatron-LM's parser ("--recompute-method") with
// the values its `choices` allow ({"uniform", "block"}; empty for a flag
// without choices); a test failure (and an empty map) when the file cannot
// be read.
inline const std::map<std::string, std::vector<std::string>>& MegatronLmChoices() {
  static const auto* const kChoices = [] {
    auto* flags = new std::map<std::string, std::vector<std::string>>;
    std::ifstream in(std::string(OOMGUARD_SOURCE_DIR) + "/tests/data/megatron_lm_arguments.txt");
    EXPECT_TRUE(in.good()) << "cannot read tests/data/megatron_lm_arguments.txt";
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
      (*flags)[words.front()].assign(words.begin() + 1, words.end());
    }
    return flags;
  }();
  return *kChoices;
}

// Every option string of Megatron-LM's parser ("--num-layers").
inline const std::set<std::string>& MegatronLmArguments() {
  static const std::set<std::string>* const kArguments = [] {
    auto* flags = new std::set<std::string>;
    for (const auto& [flag, choices] : MegatronLmChoices()) flags->insert(flag);
    return flags;
  }();
  return *kArguments;
}

// The words of `words` that are flags ("--name", or "--name=value" cut at
// the "=") that are not both known to oomguard (an entry of its flag table,
// or a flag it accepts silently as changing no memory, such as the
// planner's --overlap-grad-reduce) and a flag of Megatron-LM's parser.
inline std::vector<std::string> FlagsMegatronLmLacks(const std::vector<std::string>& words) {
  std::vector<std::string> lacking;
  for (const std::string& word : words) {
    if (!absl::StartsWith(word, "--")) continue;
    const std::string flag = word.substr(0, word.find('='));
    const bool known = FindMegatronFlag(flag) != nullptr || IsSilentFlag(CanonicalFlagName(flag));
    if (!known || MegatronLmArguments().count(flag) == 0) {
      lacking.push_back(flag);
    }
  }
  return lacking;
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_MEGATRON_LM_ARGUMENTS_H_
