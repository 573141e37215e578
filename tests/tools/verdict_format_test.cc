// Tests of the verdict lines and JSON of `oomguard check`
// (tools/verdict_format.h), on hand-made responses.
#include "tools/verdict_format.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

v1::Recommendation* Add(v1::CheckResponse& r, v1::Recommendation::Kind kind,
                        const std::string& setting) {
  v1::Recommendation* rec = r.add_recommendations();
  rec->set_kind(kind);
  rec->set_setting(setting);
  return rec;
}

TEST(FormatVerdictTest, FitsIsOneLine) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_FITS);
  r.set_summary("Fits: PP rank 0 peaks at 60.0 GiB");
  Add(r, v1::Recommendation::KIND_ENVIRONMENT, "A=B");  // Not shown: it fits already.
  EXPECT_EQ(FormatVerdict(r), "oomguard: Fits: PP rank 0 peaks at 60.0 GiB\n");
}

// The estimate's notes (what it assumed or did not model) follow the
// verdict, in order.
TEST(FormatVerdictTest, NotesFollowTheVerdict) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_FITS);
  r.set_summary("Fits: PP rank 0 peaks at 60.0 GiB");
  r.mutable_report()->add_notes("--foo is not modelled (a reason): estimated as if it were absent");
  r.mutable_report()->add_notes("expandable_segments assumed off");
  EXPECT_EQ(FormatVerdict(r),
            "oomguard: Fits: PP rank 0 peaks at 60.0 GiB\n"
            "oomguard: note: --foo is not modelled (a reason): estimated as if it were absent\n"
            "oomguard: note: expandable_segments assumed off\n");
}

TEST(FormatVerdictTest, FitsWithSettingsSaysWhatToAdd) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_FITS_WITH_SETTINGS);
  r.set_summary("Fits only with X");
  Add(r, v1::Recommendation::KIND_ENVIRONMENT, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  Add(r, v1::Recommendation::KIND_ENVIRONMENT, "A=1 B=2");
  Add(r, v1::Recommendation::KIND_ENVIRONMENT, "PYTORCH_CUDA_ALLOC_CONF=a:1,b:2");
  Add(r, v1::Recommendation::KIND_CONFIG_CHANGE, "--recompute-granularity full");
  EXPECT_EQ(FormatVerdict(r),
            "oomguard: Fits only with X\n"
            "oomguard: add to the job script: export "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
            "oomguard: add to the job script: export A=1 B=2\n"
            "oomguard: change the job: PYTORCH_CUDA_ALLOC_CONF=a:1,b:2\n");
}

TEST(FormatVerdictTest, DoesNotFitListsStepsThenIncompatibilities) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_DOES_NOT_FIT);
  r.set_summary("Does not fit");
  r.set_compared_peak_label("95% bound");
  v1::Recommendation* step = Add(r, v1::Recommendation::KIND_CONFIG_CHANGE, "--a");
  step->set_peak_device_bytes_after(uint64_t{90} << 30);
  v1::Recommendation* bad = Add(r, v1::Recommendation::KIND_INCOMPATIBILITY, "--no-b");
  bad->set_reason("b needs c");
  step = Add(r, v1::Recommendation::KIND_ENVIRONMENT, "X=1");
  step->set_peak_device_bytes_after(uint64_t{70} << 30);
  step->set_sufficient(true);
  EXPECT_EQ(FormatVerdict(r),
            "oomguard: Does not fit\n"
            "oomguard: step 1: --a -> worst rank 90.0 GiB (95% bound), still over\n"
            "oomguard: step 2: X=1 -> worst rank 70.0 GiB (95% bound), fits\n"
            "oomguard: will not start as given: b needs c (fix: --no-b)\n");
}

TEST(FormatVerdictTest, AlternativesSayWhatFitsOrRunsFaster) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_DOES_NOT_FIT);
  r.set_summary("Does not fit");
  r.set_compared_peak_label("point estimate");
  v1::Alternative* fits = r.add_alternatives();
  fits->set_description("TP 4 PP 4 VPP 5");
  fits->set_peak_device_bytes(uint64_t{70} << 30);
  fits->set_compared_peak_bytes(uint64_t{70} << 30);
  fits->set_tokens_per_gpu_per_second(1500);
  fits->set_megatron_args("--tensor-model-parallel-size 4");
  EXPECT_EQ(FormatVerdict(r),
            "oomguard: Does not fit\n"
            "oomguard: fits on the same GPUs: TP 4 PP 4 VPP 5; worst rank 70.0 GiB (point "
            "estimate), 1500 tokens/GPU/s predicted: --tensor-model-parallel-size 4\n");
  r.set_verdict(v1::VERDICT_FITS);
  r.set_summary("Fits");
  fits->set_speedup(1.25);
  EXPECT_EQ(FormatVerdict(r),
            "oomguard: Fits\n"
            "oomguard: faster on the same GPUs: TP 4 PP 4 VPP 5; +25% tokens/GPU/s predicted, "
            "worst rank 70.0 GiB (point estimate): --tensor-model-parallel-size 4\n");
}

TEST(FormatCheckResponseJsonTest, OneLineWithProtoNamesAndDefaults) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_FITS);
  r.set_gpu_name("H100-SXM-80GB");
  absl::StatusOr<std::string> json = FormatCheckResponseJson(r);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->find('\n'), json->size() - 1);
  EXPECT_THAT(*json, HasSubstr("\"gpu_name\":\"H100-SXM-80GB\""));
  EXPECT_THAT(*json, HasSubstr("\"headroom_bytes\""));
  v1::CheckResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &parsed).ok());
  EXPECT_EQ(parsed.verdict(), v1::VERDICT_FITS);
}

// An RL step: a line per phase, its worst rank's peak as the verdict
// compares it, the binding phase and a phase that cannot run named.
TEST(FormatVerdictTest, RlStepListsEachPhase) {
  v1::CheckResponse r;
  r.set_verdict(v1::VERDICT_DOES_NOT_FIT);
  r.set_summary("Does not fit: log-prob peaks at 83.0 GiB");
  r.set_peak_bound(v1::PEAK_BOUND_UPPER);
  r.set_compared_peak_label("95% bound");
  r.mutable_rl_step()->set_binding_phase("log_prob");
  v1::RlPhaseReport* generate = r.mutable_rl_step()->add_phases();
  generate->set_phase("generate");
  generate->set_peak_device_bytes(uint64_t{80} << 30);
  generate->set_peak_device_upper_bytes(uint64_t{81} << 30);
  generate->set_failure("the engine cannot start");
  v1::RlPhaseReport* log_prob = r.mutable_rl_step()->add_phases();
  log_prob->set_phase("log_prob");
  log_prob->set_worst_rank(3);
  log_prob->set_peak_device_bytes(uint64_t{82} << 30);
  log_prob->set_peak_device_upper_bytes(uint64_t{83} << 30);
  EXPECT_EQ(FormatVerdict(r),
            "oomguard: Does not fit: log-prob peaks at 83.0 GiB\n"
            "oomguard: phase generate: 81.0 GiB (95% bound) on PP rank 0; cannot run: the "
            "engine cannot start\n"
            "oomguard: phase log_prob: 83.0 GiB (95% bound) on PP rank 3 (binding)\n");
  r.set_peak_bound(v1::PEAK_BOUND_POINT);
  r.set_compared_peak_label("point estimate");
  EXPECT_THAT(FormatVerdict(r),
              HasSubstr("oomguard: phase log_prob: 82.0 GiB (point estimate) on PP rank 3"));
}

}  // namespace
}  // namespace oomguard
