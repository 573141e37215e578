// Megatron-LM's H100 CI runs with their measured memory
// (tests/data/calibration/megatron_ci_h100.jsonl), read for the tests that
// check the cases the calibration summary keeps out (FSDP, hybrid models).
#ifndef OOMGUARD_TESTS_TESTING_MEGATRON_CI_RUNS_H_
#define OOMGUARD_TESTS_TESTING_MEGATRON_CI_RUNS_H_

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "jobspec/job_builder.h"

namespace oomguard::testing {

struct MegatronCiRun {
  std::string name;             // "hybrid/hybrid_mr_mcore_te_tp1_pp4_cp1_dgx_a100_1N8G"
  JobInputs inputs;             // Its arguments, environment and GPUs (0 when unknown).
  double alloc_after_step = 0;  // Bytes of the last rank after the step.
  double max_alloc = 0;         // The last rank's peak allocated bytes.
};

// Every run of the file; a test failure (and what was read) when it is
// missing or a line is malformed.
inline std::vector<MegatronCiRun> MegatronCiRuns() {
  std::vector<MegatronCiRun> runs;
  std::ifstream in(OOMGUARD_SOURCE_DIR "/tests/data/calibration/megatron_ci_h100.jsonl");
  EXPECT_TRUE(in) << "megatron_ci_h100.jsonl is missing";
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    google::protobuf::Struct record;
    if (!google::protobuf::util::JsonStringToMessage(line, &record).ok()) {
      ADD_FAILURE() << "malformed line: " << line;
      return runs;
    }
    const auto& f = record.fields();
    MegatronCiRun run;
    run.name = f.at("case").string_value();
    for (const google::protobuf::Value& arg : f.at("argv").list_value().values()) {
      run.inputs.megatron_args.push_back(arg.string_value());
    }
    for (const auto& [key, value] : f.at("env").struct_value().fields()) {
      run.inputs.env[key] = value.string_value();
    }
    run.inputs.num_gpus = static_cast<uint32_t>(f.at("gpus").number_value());
    run.alloc_after_step = f.at("alloc_after_step").number_value();
    run.max_alloc = f.at("max_alloc").number_value();
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_MEGATRON_CI_RUNS_H_
