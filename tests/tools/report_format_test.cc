// Tests of the `oomguard estimate --json` output (tools/report_format.h):
// compact, keys in a fixed order, integer byte counts, strings escaped as
// JSON; and that it parses back.
#include "tools/report_format.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

v1::EstimateReport SmallReport() {
  v1::EstimateReport rep;
  rep.set_num_gpus(8);
  rep.set_tensor_parallel(8);
  rep.set_pipeline_parallel(1);
  rep.set_data_parallel(1);
  rep.set_num_microbatches(4);
  rep.set_padded_vocab_size(128256);
  rep.set_upper_bound_coverage(0.95);
  v1::RankReport* r = rep.add_ranks();
  r->set_parameters(1000);
  r->set_static_bytes(uint64_t{5} << 40);
  r->set_peak_device_bytes(uint64_t{90} << 30);
  r->set_peak_device_upper_bytes(uint64_t{92} << 30);
  v1::Overhead* o = r->add_overheads();
  o->set_name("cuda_context");
  o->set_bytes(512);
  o->set_in_allocated(false);
  v1::Uncertainty* u = r->add_uncertainties();
  u->set_name("allocator_slack");
  u->set_sd_bytes(uint64_t{1} << 30);
  v1::ChunkReport* c = r->add_chunks();
  c->set_num_decoder_layers(32);
  c->set_has_embedding(true);
  return rep;
}

TEST(FormatJsonTest, CompactWithKeysInOrder) {
  const std::string json = FormatJson(SmallReport(), 0);
  EXPECT_EQ(json,
            "{\"num_gpus\":8,\"tensor_parallel\":8,\"pipeline_parallel\":1,"
            "\"virtual_pipeline_chunks\":0,\"context_parallel\":0,\"expert_parallel\":0,"
            "\"expert_tensor_parallel\":0,\"data_parallel\":1,\"expert_data_parallel\":0,"
            "\"num_microbatches\":4,\"padded_vocab_size\":128256,\"worst_rank\":0,"
            "\"upper_bound_coverage\":0.95,\"ranks\":[{\"pp_rank\":0,\"parameters\":1000,\"dense_"
            "parameters\":0,"
            "\"expert_parameters\":0,\"static_bytes\":5497558138880,\"dense_param_bytes\":0,"
            "\"dense_grad_bytes\":0,\"dense_optimizer_bytes\":0,\"expert_param_bytes\":0,"
            "\"expert_grad_bytes\":0,\"expert_optimizer_bytes\":0,\"host_optimizer_bytes\":0,"
            "\"te_dummy_wgrad_bytes\":0,"
            "\"activation_bytes\":0,\"transient_bytes\":0,\"peak_allocated_bytes\":0,"
            "\"peak_device_bytes\":96636764160,\"peak_allocated_upper_bytes\":0,"
            "\"peak_device_upper_bytes\":98784247808,"
            "\"overheads\":[{\"name\":\"cuda_context\",\"bytes\":512,\"in_allocated\":false}],"
            "\"uncertainties\":[{\"name\":\"allocator_slack\",\"sd_bytes\":1073741824,"
            "\"in_allocated\":false}],"
            "\"chunks\":[{\"chunk\":0,\"virtual_stage\":0,\"num_decoder_layers\":32,"
            "\"num_mtp_layers\":0,\"has_embedding\":true,\"has_loss\":false,\"parameters\":0,"
            "\"in_flight_microbatches\":0,\"activation_bytes_per_microbatch\":0,"
            "\"activation_bytes\":0}]}],\"notes\":[]}\n");
}

TEST(FormatJsonTest, CapacityAddsTheHeadroomWhichMayBeNegative) {
  const std::string json = FormatJson(SmallReport(), uint64_t{80} << 30);
  EXPECT_THAT(json, HasSubstr("\"upper_bound_coverage\":0.95,\"capacity_bytes\":85899345920,"
                              "\"ranks\":"));
  // 80 - 90 GiB, and 80 - 92 GiB at the upper bound.
  EXPECT_THAT(json, HasSubstr("\"headroom_bytes\":-10737418240,"
                              "\"headroom_upper_bytes\":-12884901888,\"overheads\":"));
}

// A rank whose counts reached the estimator's 2^50 limit: flagged in the
// JSON, its overheads their capped sum (never a wrapped subtraction), and
// marked as capped in the table.
TEST(FormatJsonTest, RanksOverTheLimitAreFlaggedAndNeverWrap) {
  constexpr uint64_t kLimit = uint64_t{1} << 50;
  v1::EstimateReport rep = SmallReport();
  rep.set_exceeds_limit(true);
  v1::RankReport* r = rep.mutable_ranks(0);
  r->set_exceeds_limit(true);
  r->set_activation_bytes(kLimit);
  r->set_peak_allocated_bytes(kLimit);
  r->set_peak_device_bytes(kLimit);
  r->set_peak_device_upper_bytes(kLimit);
  const std::string json = FormatJson(rep, uint64_t{80} << 30);
  EXPECT_THAT(json, HasSubstr("\"capacity_bytes\":85899345920,\"exceeds_limit\":true,\"ranks\":"));
  EXPECT_THAT(json,
              HasSubstr("\"headroom_bytes\":-1125814007496704,"
                        "\"headroom_upper_bytes\":-1125814007496704,\"exceeds_limit\":true,"));
  EXPECT_THAT(FormatJson(SmallReport(), 0), Not(HasSubstr("exceeds_limit")));
  const std::string table = FormatTable(rep, uint64_t{80} << 30);
  // static 5120 GiB, activations 2^50 = 1048576 GiB, overheads 512 bytes.
  EXPECT_THAT(table, HasSubstr("    5120.00 1048576.00       0.00 1048576.00       0.00 1048576.00"
                               " 1048576.00  DOES NOT FIT  (>= 1 PiB: capped)\n"));
}

TEST(FormatJsonTest, TreesAndEscapedNotes) {
  v1::EstimateReport rep = SmallReport();
  v1::ModuleNode* root = rep.add_rank_trees();
  root->set_name("model");
  root->set_type("GPTModel");
  v1::ModuleNode* child = root->add_children();
  child->set_name("decoder");
  child->set_type("TransformerBlock");
  child->set_repeat(32);
  rep.add_notes("ignored \"--foo\\bar\"\nnext\x01");
  const std::string json = FormatJson(rep, 0);
  EXPECT_THAT(json,
              HasSubstr("\"trees\":[{\"name\":\"model\",\"type\":\"GPTModel\",\"parameters\":0,"
                        "\"activation_bytes\":0,\"repeat\":1,\"children\":[{\"name\":\"decoder\","
                        "\"type\":\"TransformerBlock\",\"parameters\":0,\"activation_bytes\":0,"
                        "\"repeat\":32,\"children\":[]}]}],\"notes\":"));
  EXPECT_THAT(json, HasSubstr("\"notes\":[\"ignored \\\"--foo\\\\bar\\\"\\nnext\\u0001\"]}\n"));
  const nlohmann::json parsed = nlohmann::json::parse(json);
  EXPECT_EQ(parsed["notes"][0], "ignored \"--foo\\bar\"\nnext\x01");
  EXPECT_EQ(parsed["trees"][0]["children"][0]["repeat"], 32);
}

TEST(FormatJsonTest, TextThatIsNotUtf8DoesNotFailTheReport) {
  v1::EstimateReport rep = SmallReport();
  rep.add_notes("bad \xff byte");
  EXPECT_THAT(FormatJson(rep, 0), HasSubstr("\"notes\":[\"bad \xEF\xBF\xBD byte\"]"));
}

TEST(FormatTableTest, SaysWhetherTheWorstRankFits) {
  const std::string table = FormatTable(SmallReport(), uint64_t{80} << 30);
  EXPECT_THAT(table, StartsWith("8 GPUs: TP 8, PP 1,"));
  EXPECT_THAT(table, HasSubstr("DOES NOT FIT"));
  EXPECT_THAT(table, HasSubstr("worst rank 0: 92.00 GiB (95% bound; point estimate 90.00 GiB) of "
                               "80.00 GiB: does not fit, 12.00 GiB over"));
  EXPECT_THAT(FormatTable(SmallReport(), uint64_t{100} << 30),
              HasSubstr("worst rank 0: 92.00 GiB (95% bound; point estimate 90.00 GiB) of "
                        "100.00 GiB: fits, 8.00 GiB headroom"));
  EXPECT_THAT(FormatTable(SmallReport(), 0),
              HasSubstr("worst rank 0: 90.00 GiB (point estimate; 95% bound 92.00 GiB)\n"));
  EXPECT_THAT(table, HasSubstr("uncertain: allocator_slack 1.00;"));
  // Fits at its point estimate (90 <= 91), not at its upper bound (92).
  EXPECT_THAT(FormatTable(SmallReport(), uint64_t{91} << 30), HasSubstr("  AT RISK\n"));
  EXPECT_THAT(FormatTable(SmallReport(), uint64_t{92} << 30), HasSubstr("  fits\n"));
}

// An RL step of two phases on two PP ranks, in whole GiB: generation binds
// on rank 0 (60, bound 62), log-prob cannot run on rank 1.
v1::RlStepReport SmallRlStep() {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  v1::RlStepReport step;
  step.set_framework(v1::RL_FRAMEWORK_VERL);
  step.set_gpu_name("H100-SXM-80GB");
  step.set_gpu_memory_bytes(80 * kGiB);
  step.set_upper_bound_coverage(0.95);
  step.set_binding_phase("generate");
  step.set_worst_rank(0);
  step.set_peak_device_bytes(60 * kGiB);
  step.set_peak_device_upper_bytes(62 * kGiB);
  step.set_engine_kv_pool_bytes(20 * kGiB);
  step.set_engine_kv_tokens(163840);
  step.set_host_bytes_per_node(96 * kGiB);
  v1::RlTerm* host = step.add_host_terms();
  host->set_name("actor optimizer offloaded");
  host->set_bytes(96 * kGiB);
  auto add_phase = [&](const std::string& name, uint64_t peak0, uint64_t peak1) {
    v1::RlPhaseReport* p = step.add_phases();
    p->set_phase(name);
    for (uint32_t r = 0; r < 2; ++r) {
      v1::RlPhaseRank* rank = p->add_ranks();
      rank->set_pp_rank(r);
      const uint64_t peak = (r == 0 ? peak0 : peak1) * kGiB;
      v1::RlTerm* big = rank->add_terms();
      big->set_name("engine KV pool");
      big->set_bytes(peak - 10 * kGiB);
      big->set_basis("gpu_memory_utilization 0.5 x 80 GiB less the weights");
      big->set_key("actor_rollout_ref.rollout.gpu_memory_utilization");
      v1::RlTerm* small = rank->add_terms();
      small->set_name("actor parameters");
      small->set_bytes(10 * kGiB);
      rank->set_peak_device_bytes(peak);
      rank->set_peak_device_upper_bytes(peak + 2 * kGiB);
    }
    p->set_worst_rank(peak1 > peak0 ? 1 : 0);
    p->set_peak_device_bytes(std::max(peak0, peak1) * kGiB);
    p->set_peak_device_upper_bytes((std::max(peak0, peak1) + 2) * kGiB);
    p->set_largest_term("engine KV pool");
    p->set_key("actor_rollout_ref.rollout.gpu_memory_utilization");
    return p;
  };
  add_phase("generate", 60, 60);
  add_phase("log_prob", 30, 40)->set_failure("the logits do not fit");
  step.add_notes("a note");
  return step;
}

// Every phase with its worst rank's peaks, the binding phase and the rest of
// the step, in a fixed order, integer byte counts.
TEST(FormatRlJsonTest, PhasesAndBindingPhase) {
  const nlohmann::json j = nlohmann::json::parse(FormatRlJson(SmallRlStep()));
  EXPECT_EQ(j["framework"], "verl");
  EXPECT_EQ(j["binding_phase"], "generate");
  EXPECT_EQ(j["worst_rank"], 0);
  EXPECT_EQ(j["peak_device_bytes"], uint64_t{60} << 30);
  EXPECT_EQ(j["peak_device_upper_bytes"], uint64_t{62} << 30);
  EXPECT_EQ(j["gpu_memory_bytes"], uint64_t{80} << 30);
  ASSERT_EQ(j["phases"].size(), 2u);
  const nlohmann::json& lp = j["phases"][1];
  EXPECT_EQ(lp["phase"], "log_prob");
  EXPECT_EQ(lp["peak_device_bytes"], uint64_t{40} << 30);
  EXPECT_EQ(lp["peak_device_upper_bytes"], uint64_t{42} << 30);
  EXPECT_EQ(lp["worst_rank"], 1);
  EXPECT_EQ(lp["failure"], "the logits do not fit");
  EXPECT_FALSE(j["phases"][0].contains("failure"));
  ASSERT_EQ(lp["ranks"].size(), 2u);
  EXPECT_EQ(lp["ranks"][1]["terms"][0]["name"], "engine KV pool");
  EXPECT_EQ(lp["ranks"][1]["terms"][0]["bytes"], uint64_t{30} << 30);
  EXPECT_EQ(lp["ranks"][1]["terms"][0]["key"], "actor_rollout_ref.rollout.gpu_memory_utilization");
  EXPECT_EQ(j["engine_kv_pool_bytes"], uint64_t{20} << 30);
  EXPECT_EQ(j["engine_kv_tokens"], 163840);
  EXPECT_EQ(j["host_bytes_per_node"], uint64_t{96} << 30);
  EXPECT_EQ(j["host_terms"][0]["name"], "actor optimizer offloaded");
  EXPECT_FALSE(j.contains("actor_update"));
  EXPECT_EQ(j["notes"], nlohmann::json::array({"a note"}));
  // The actor update as FormatJson writes it, against the GPU.
  v1::RlStepReport with_update = SmallRlStep();
  *with_update.mutable_actor_update() = SmallReport();
  const nlohmann::json u = nlohmann::json::parse(FormatRlJson(with_update));
  EXPECT_EQ(u["actor_update"],
            nlohmann::json::parse(FormatJson(SmallReport(), uint64_t{80} << 30)));
  const std::string text = FormatRlJson(SmallRlStep());
  EXPECT_THAT(text, StartsWith("{\"framework\":\"verl\",\"binding_phase\":\"generate\","
                               "\"worst_rank\":0,\"peak_device_bytes\":64424509440,"));
}

TEST(FormatRlTableTest, PhasesByRanksBindingPhaseTermsAndHost) {
  const std::string table = FormatRlTable(SmallRlStep());
  EXPECT_THAT(table, StartsWith("RL step (verl) on H100-SXM-80GB (80.00 GiB): each phase's "
                                "device peak per PP rank\n\nphase                 rank 0          "
                                "rank 1 \ngenerate         60.00/62.00*    60.00/62.00 \n"
                                "log_prob         30.00/32.00     40.00/42.00*  CANNOT RUN\n"));
  EXPECT_THAT(table, HasSubstr("binding phase generate, PP rank 0: 62.00 GiB (95% bound; point "
                               "estimate 60.00 GiB) of 80.00 GiB: fits, 18.00 GiB headroom\n"
                               "log_prob cannot run: the logits do not fit\n"));
  EXPECT_THAT(table, HasSubstr("\nlog_prob, PP rank 1: 40.00 GiB\n  engine KV pool       30.00  "
                               "(actor_rollout_ref.rollout.gpu_memory_utilization)\n  actor "
                               "parameters     10.00\n"));
  EXPECT_THAT(table, HasSubstr("engine KV pool: 20.00 GiB per GPU, 163840 tokens\n"
                               "host memory per node: 96.00 GiB (actor optimizer offloaded "
                               "96.00)\nnote: a note\n"));
}

}  // namespace
}  // namespace oomguard
