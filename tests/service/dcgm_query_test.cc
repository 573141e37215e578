// The DCGM reader's PromQL, its reading of Prometheus's answer and the rule
// that reports a job only when its peaks changed (service/dcgm_query.h).
// The PromQL is also run by a real Prometheus in
// tests/deploy/dcgm_feedback_test.py.
#include "service/dcgm_query.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "feedback/report_limits.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;

v1::JobHandle SlurmJob(const std::string& id) {
  v1::JobHandle handle;
  handle.set_slurm_job_id(id);
  return handle;
}

v1::JobHandle Workload(const std::string& ns, const std::string& name) {
  v1::JobHandle handle;
  handle.set_kubernetes_namespace(ns);
  handle.set_kubernetes_workload(name);
  return handle;
}

v1::RankMeasurement Device(const std::string& device, uint64_t bytes) {
  v1::RankMeasurement m;
  m.set_device(device);
  m.set_device_used_bytes(bytes);
  return m;
}

// "device=bytes" of each measurement, for readable comparisons.
std::vector<std::string> Shown(const std::vector<v1::RankMeasurement>& measurements) {
  std::vector<std::string> out;
  for (const v1::RankMeasurement& m : measurements) {
    out.push_back(m.device() + "=" + std::to_string(m.device_used_bytes()));
  }
  return out;
}

TEST(DcgmPeakQueryTest, SlurmJobMatchesHpcJobLabel) {
  absl::StatusOr<std::string> query = DcgmPeakQuery(SlurmJob("4242"), absl::Hours(1));
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(*query,
            "max by (hostname, Hostname, pod, gpu, GPU_I_ID) "
            "(max_over_time(DCGM_FI_DEV_FB_USED{hpc_job=\"4242\"}[3600s]))");
}

TEST(DcgmPeakQueryTest, WorkloadMatchesItsPodsWithTheDotEscaped) {
  absl::StatusOr<std::string> query = DcgmPeakQuery(Workload("team-a", "llama.pretrain"),
                                                    absl::Seconds(90) + absl::Milliseconds(1));
  ASSERT_TRUE(query.ok()) << query.status();
  // PromQL's string "llama\\.pretrain-.+" is the regex llama\.pretrain-.+ .
  EXPECT_EQ(*query,
            "max by (hostname, Hostname, pod, gpu, GPU_I_ID) "
            "(max_over_time(DCGM_FI_DEV_FB_USED{namespace=\"team-a\","
            "pod=~\"llama\\\\.pretrain-.+\"}[91s]))");
}

TEST(DcgmPeakQueryTest, RangeIsAtLeastAMinute) {
  absl::StatusOr<std::string> query = DcgmPeakQuery(SlurmJob("7"), absl::Seconds(3));
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_THAT(*query, HasSubstr("[60s]"));
}

TEST(DcgmPeakQueryTest, BothHandlesAreJoinedWithOr) {
  v1::JobHandle handle = Workload("ns", "job");
  handle.set_slurm_job_id("12_3");
  absl::StatusOr<std::string> query = DcgmPeakQuery(handle, absl::Minutes(2));
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(*query,
            "max by (hostname, Hostname, pod, gpu, GPU_I_ID) "
            "(max_over_time(DCGM_FI_DEV_FB_USED{hpc_job=\"12_3\"}[120s])) or "
            "max by (hostname, Hostname, pod, gpu, GPU_I_ID) "
            "(max_over_time(DCGM_FI_DEV_FB_USED{namespace=\"ns\",pod=~\"job-.+\"}[120s]))");
}

TEST(DcgmPeakQueryTest, RefusesHandlesThatWouldNeedQuoting) {
  absl::StatusOr<std::string> query = DcgmPeakQuery(SlurmJob("1\"} or vector(1"), absl::Hours(1));
  EXPECT_EQ(query.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(query.status().message(), HasSubstr("handle.slurm_job_id"));
  query = DcgmPeakQuery(Workload("ns", "Job\\x"), absl::Hours(1));
  EXPECT_EQ(query.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(query.status().message(), HasSubstr("handle.kubernetes_workload"));
}

TEST(DcgmPeakQueryTest, RefusesAHandleNamingNoJob) {
  absl::StatusOr<std::string> query = DcgmPeakQuery(v1::JobHandle(), absl::Hours(1));
  EXPECT_EQ(query.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(query.status().message(), HasSubstr("names no job"));
}

TEST(DcgmDeviceTest, PodOverHostnameAndMigSuffix) {
  EXPECT_EQ(DcgmDevice("train-0", "node1", "3", ""), "train-0/3");
  EXPECT_EQ(DcgmDevice("", "node1", "3", ""), "node1/3");
  EXPECT_EQ(DcgmDevice("", "", "", ""), "-/-");
  EXPECT_EQ(DcgmDevice("", "node1", "0", "2"), "node1/0/mig2");
}

TEST(DcgmDeviceTest, LongPodNameIsCutToTheDeviceBound) {
  const std::string pod(253, 'p');
  const std::string device = DcgmDevice(pod, "", "7", "");
  EXPECT_EQ(device.size(), feedback::kMaxDeviceBytes);
  EXPECT_EQ(device, std::string(feedback::kMaxDeviceBytes - 2, 'p') + "/7");
}

// An answer as Prometheus 2.x writes it to the query of a Slurm job on two
// nodes (the exporter's labels as FEEDBACK_SOURCES.md lists them).
constexpr char kSlurmAnswer[] = R"({"status":"success","data":{"resultType":"vector","result":[
  {"metric":{"gpu":"1","hostname":"node2"},"value":[1764280000.123,"40536"]},
  {"metric":{"gpu":"0","hostname":"node2"},"value":[1764280000.123,"71234.5"]},
  {"metric":{"gpu":"0","Hostname":"node1"},"value":[1764280000.123,"1"]}]}})";

TEST(ParseDcgmPeaksTest, MibToBytesPerDeviceSortedByDevice) {
  absl::StatusOr<std::vector<v1::RankMeasurement>> peaks = ParseDcgmPeaks(kSlurmAnswer);
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  // 71234.5 MiB = 74694787072 bytes; 40536 MiB = 42505076736 bytes.
  EXPECT_THAT(Shown(*peaks),
              ElementsAre("node1/0=1048576", "node2/0=74694787072", "node2/1=42505076736"));
  for (const v1::RankMeasurement& m : *peaks) {
    EXPECT_FALSE(m.has_rank());
    EXPECT_FALSE(m.has_max_allocated_bytes());
  }
}

TEST(ParseDcgmPeaksTest, SeriesOfOneDeviceMergeToTheLarger) {
  // The same pod's GPU from two containers' series, and a pod's GPU 0 on a
  // node it was moved to.
  absl::StatusOr<std::vector<v1::RankMeasurement>> peaks =
      ParseDcgmPeaks(R"({"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"pod":"job-0","gpu":"0","hostname":"a"},"value":[1,"100"]},
        {"metric":{"pod":"job-0","gpu":"0","hostname":"b"},"value":[1,"300"]},
        {"metric":{"pod":"job-0","gpu":"0","hostname":"c"},"value":[1,"200"]}]}})");
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  EXPECT_THAT(Shown(*peaks), ElementsAre("job-0/0=" + std::to_string(300 * kMiB)));
}

TEST(ParseDcgmPeaksTest, LeavesOutValuesNoGpuHolds) {
  absl::StatusOr<std::vector<v1::RankMeasurement>> peaks =
      ParseDcgmPeaks(R"({"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"gpu":"0","hostname":"n"},"value":[1,"NaN"]},
        {"metric":{"gpu":"1","hostname":"n"},"value":[1,"-5"]},
        {"metric":{"gpu":"2","hostname":"n"},"value":[1,"+Inf"]},
        {"metric":{"gpu":"3","hostname":"n"},"value":[1,"1073741825"]},
        {"metric":{"gpu":"4","hostname":"n"},"value":[1,"1073741824"]},
        {"metric":{"gpu":"5","hostname":"n"},"value":[1,"many"]}]}})");
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  // 2^30 MiB = 1 PiB, the bound, is kept; one MiB more is not.
  EXPECT_THAT(Shown(*peaks), ElementsAre("n/4=" + std::to_string(uint64_t{1} << 50)));
}

TEST(ParseDcgmPeaksTest, NoSeriesIsNoMeasurement) {
  absl::StatusOr<std::vector<v1::RankMeasurement>> peaks =
      ParseDcgmPeaks(R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  EXPECT_TRUE(peaks->empty());
}

TEST(ParseDcgmPeaksTest, PrometheusErrorIsUnavailableWithItsMessage) {
  absl::StatusOr<std::vector<v1::RankMeasurement>> peaks = ParseDcgmPeaks(
      R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"query\""})");
  EXPECT_EQ(peaks.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(peaks.status().message(), "prometheus: bad_data: invalid parameter \"query\"");
}

TEST(ParseDcgmPeaksTest, WhatIsNotAQueryResultIsInternal) {
  for (
      const char* body :
      {"<html>502 Bad Gateway</html>", "[]", R"({"data":{}})",
       R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}})"}) {
    absl::StatusOr<std::vector<v1::RankMeasurement>> peaks = ParseDcgmPeaks(body);
    EXPECT_EQ(peaks.status().code(), absl::StatusCode::kInternal) << body;
    EXPECT_THAT(peaks.status().message(), HasSubstr("not a query result")) << body;
  }
}

TEST(ParseDcgmPeaksTest, RefusesMoreSeriesThanAReportHolds) {
  std::string body = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (int i = 0; i <= feedback::kMaxReportRanks; ++i) {
    if (i > 0) body += ",";
    body += R"({"metric":{"gpu":")" + std::to_string(i) + R"("},"value":[1,"1"]})";
  }
  body += "]}}";
  absl::StatusOr<std::vector<v1::RankMeasurement>> peaks = ParseDcgmPeaks(body);
  EXPECT_EQ(peaks.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(peaks.status().message(), HasSubstr("131073 GPUs"));
}

v1::StoredReport Report(v1::MeasurementSource source, std::vector<v1::RankMeasurement> ranks) {
  v1::StoredReport report;
  report.set_source(source);
  for (v1::RankMeasurement& m : ranks) *report.add_ranks() = std::move(m);
  return report;
}

TEST(NewDcgmPeaksTest, FirstReadingIsNew) {
  std::optional<std::vector<v1::RankMeasurement>> peaks =
      NewDcgmPeaks(v1::CheckRecord(), {Device("n/1", 5), Device("n/0", 7)});
  ASSERT_TRUE(peaks.has_value());
  EXPECT_THAT(Shown(*peaks), ElementsAre("n/0=7", "n/1=5"));
}

TEST(NewDcgmPeaksTest, NothingFoundIsNothingNew) {
  EXPECT_FALSE(NewDcgmPeaks(v1::CheckRecord(), {}).has_value());
}

TEST(NewDcgmPeaksTest, SameOrLowerIsNothingNew) {
  v1::CheckRecord record;
  *record.add_reports() = Report(v1::MEASUREMENT_SOURCE_DCGM, {Device("n/0", 7), Device("n/1", 5)});
  EXPECT_FALSE(NewDcgmPeaks(record, {Device("n/0", 7), Device("n/1", 5)}).has_value());
  // Samples past Prometheus's retention: lower, or gone.
  EXPECT_FALSE(NewDcgmPeaks(record, {Device("n/0", 3)}).has_value());
}

TEST(NewDcgmPeaksTest, HigherOrNewDeviceGivesEveryDevicesLargest) {
  v1::CheckRecord record;
  *record.add_reports() = Report(v1::MEASUREMENT_SOURCE_DCGM, {Device("n/0", 7), Device("n/1", 5)});
  *record.add_reports() = Report(v1::MEASUREMENT_SOURCE_DCGM, {Device("n/1", 9)});
  std::optional<std::vector<v1::RankMeasurement>> peaks =
      NewDcgmPeaks(record, {Device("n/0", 6), Device("n/1", 9), Device("m/0", 1)});
  ASSERT_TRUE(peaks.has_value());
  EXPECT_THAT(Shown(*peaks), ElementsAre("m/0=1", "n/0=7", "n/1=9"));
  peaks = NewDcgmPeaks(record, {Device("n/0", 8)});
  ASSERT_TRUE(peaks.has_value());
  EXPECT_THAT(Shown(*peaks), ElementsAre("n/0=8", "n/1=9"));
}

TEST(NewDcgmPeaksTest, OtherSourcesDoNotCount) {
  v1::CheckRecord record;
  v1::RankMeasurement from_log;
  from_log.set_rank(0);
  from_log.set_device("n/0");
  from_log.set_device_used_bytes(100);
  *record.add_reports() = Report(v1::MEASUREMENT_SOURCE_MEGATRON_LOG, {from_log});
  std::optional<std::vector<v1::RankMeasurement>> peaks = NewDcgmPeaks(record, {Device("n/0", 7)});
  ASSERT_TRUE(peaks.has_value());
  EXPECT_THAT(Shown(*peaks), ElementsAre("n/0=7"));
}

}  // namespace
}  // namespace oomguard::service
