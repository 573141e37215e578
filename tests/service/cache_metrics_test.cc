// Tests of the Check caches' metrics (service/cache_metrics.h) as the
// handlers export them: the counts a resubmitted job leaves in each cache.
#include "service/cache_metrics.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "oomguard/v1/admission.pb.h"
#include "prometheus/metric_family.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "tests/testing/service_test_jobs.h"

namespace oomguard::service {
namespace {

constexpr char kJob[] = "--seq-length 4096 --micro-batch-size 1 --use-distributed-optimizer";

std::string CheckBytes(const std::string& args) {
  v1::CheckRequest request;
  *request.mutable_job() = testing::MegatronSource("llama3-8b", args, 8);
  request.set_gpu_name("H100-SXM-80GB");
  return request.SerializeAsString();
}

// "<family>{<label values>}" -> value, of every sample collected.
std::map<std::string, double> Samples(const CacheMetrics& metrics) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : metrics.Collect()) {
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string name = family.name + "{";
      for (const auto& label : m.label) absl::StrAppend(&name, label.name, "=", label.value, ",");
      name += "}";
      out[name] = family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

TEST(CacheMetricsTest, CountsEachCachesHitsAndMisses) {
  ServiceMetrics metrics("test");
  RequestHandlers handlers(ServiceConfig{.log_requests = false}, &metrics);
  const std::string job = CheckBytes(kJob);
  for (const std::string& request :
       {job, job, CheckBytes(absl::StrCat(kJob, " --save /ckpt/other"))}) {
    CallOutcome outcome;
    ASSERT_TRUE(handlers.Check(request, absl::InfiniteFuture(), outcome).ok());
  }
  // The first call misses everywhere; the second's bytes are the first's;
  // the third's bytes are new but its job is the first's.
  const std::map<std::string, double> samples = Samples(*handlers.cache_metrics());
  const std::map<std::string, double> expected = {
      {"oomguard_cache_lookups_total{cache=response,result=hit,}", 1},
      {"oomguard_cache_lookups_total{cache=response,result=miss,}", 2},
      {"oomguard_cache_lookups_total{cache=check_result,result=hit,}", 1},
      {"oomguard_cache_lookups_total{cache=check_result,result=miss,}", 1},
      {"oomguard_cache_lookups_total{cache=plan,result=hit,}", 0},
      {"oomguard_cache_lookups_total{cache=plan,result=miss,}", 1},
      {"oomguard_cache_entries{cache=response,}", 2},
      {"oomguard_cache_entries{cache=check_result,}", 1},
      {"oomguard_cache_entries{cache=plan,}", 1},
  };
  for (const auto& [name, value] : expected) {
    ASSERT_TRUE(samples.contains(name)) << name;
    EXPECT_EQ(samples.at(name), value) << name;
  }
  // Two serialized answers of the same job, each with its request as key.
  EXPECT_GT(samples.at("oomguard_cache_bytes{cache=response,}"), 2.0 * job.size());
  EXPECT_GT(samples.at("oomguard_cache_bytes{cache=plan,}"), 0);
}

TEST(CacheMetricsTest, ExportsOnlyEnabledCaches) {
  ServiceMetrics metrics("test");
  RequestHandlers off(ServiceConfig{.log_requests = false,
                                    .response_cache_bytes = 0,
                                    .check_result_cache_bytes = 0,
                                    .plan_cache_bytes = 0},
                      &metrics);
  EXPECT_TRUE(off.cache_metrics()->Collect().empty());

  RequestHandlers plan_only(
      ServiceConfig{
          .log_requests = false, .response_cache_bytes = 0, .check_result_cache_bytes = 0},
      &metrics);
  const std::map<std::string, double> samples = Samples(*plan_only.cache_metrics());
  EXPECT_EQ(samples.size(), 4u);  // Its hits, misses, entries and bytes.
  EXPECT_TRUE(samples.contains("oomguard_cache_entries{cache=plan,}"));
}

}  // namespace
}  // namespace oomguard::service
