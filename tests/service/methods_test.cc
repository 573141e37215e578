// The table of the service's methods (service/methods.h) against
// service.proto: every RPC declared there has one row and every row is
// declared, with a unique name and HTTP route; and the metrics make the
// series of every row and of the webhook, under each transport.
#include "service/methods.h"

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.pb.h"
#include "prometheus/client_metric.h"
#include "service/metrics.h"

namespace oomguard::service {
namespace {

TEST(MethodsTest, TheTableIsServiceProto) {
  const google::protobuf::ServiceDescriptor& declared =
      *v1::EstimateRequest::descriptor()->file()->FindServiceByName("Oomguard");
  ASSERT_EQ(RpcMethods().size(), static_cast<size_t>(declared.method_count()))
      << "every RPC of service.proto has one row, and every row one RPC";
  std::set<std::pair<std::string, std::string>> routes;
  for (int i = 0; i < declared.method_count(); ++i) {
    const google::protobuf::MethodDescriptor& method = *declared.method(i);
    const RpcMethod* row = &RpcMethods()[i];
    ASSERT_EQ(row->name, method.name()) << "rows go in service.proto's order";
    EXPECT_EQ(&Declaration(*row), &method);
    EXPECT_NE(row->handler, nullptr) << method.name();
    EXPECT_FALSE(method.client_streaming()) << method.name() << ": the call loop has no such call";
    EXPECT_THAT(std::string(row->http.verb), ::testing::AnyOf("GET", "POST")) << method.name();
    EXPECT_THAT(std::string(row->http.path), ::testing::StartsWith("/v1/")) << method.name();
    EXPECT_TRUE(routes.emplace(row->http.verb, row->http.path).second) << row->http.path;
    // A path parameter is a string field of a GET's request (the request's
    // only source: a GET has no body).
    for (absl::string_view segment : absl::StrSplit(row->http.path, '/')) {
      if (!absl::ConsumePrefix(&segment, "{")) continue;
      ASSERT_TRUE(absl::ConsumeSuffix(&segment, "}")) << row->http.path;
      EXPECT_EQ(row->http.verb, "GET") << row->http.path;
      const google::protobuf::FieldDescriptor* field =
          method.input_type()->FindFieldByName(std::string(segment));
      ASSERT_NE(field, nullptr) << row->http.path;
      EXPECT_EQ(field->type(), google::protobuf::FieldDescriptor::TYPE_STRING) << row->http.path;
    }
  }
}

// oomguard_request_duration_seconds has a series for each RPC and the
// webhook, each transport, from the start; a request of each is counted
// under its own name.
TEST(MethodsTest, MetricsHaveEverySeries) {
  ServiceMetrics metrics("test");
  for (const RpcMethod& method : RpcMethods()) {
    metrics.RecordRequest(method.name, Transport::kGrpc, grpc::StatusCode::OK, absl::Seconds(1));
  }
  metrics.RecordRequest(kWebhookMethod, Transport::kHttp, grpc::StatusCode::OK, absl::Seconds(1));
  std::set<std::string> durations;
  std::set<std::string> requests;
  for (const prometheus::MetricFamily& family : metrics.registry()->Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::string labels;
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "method" || label.name == "transport") labels += label.value + "/";
      }
      if (family.name == "oomguard_request_duration_seconds") durations.insert(labels);
      if (family.name == "oomguard_requests_total") requests.insert(labels);
    }
  }
  EXPECT_THAT(durations, ::testing::UnorderedElementsAre(
                             "Estimate/grpc/", "Estimate/http/", "Check/grpc/", "Check/http/",
                             "Plan/grpc/", "Plan/http/", "ListPresets/grpc/", "ListPresets/http/",
                             "ListGpus/grpc/", "ListGpus/http/", "Report/grpc/", "Report/http/",
                             "GetCheck/grpc/", "GetCheck/http/", "Webhook/grpc/", "Webhook/http/"));
  EXPECT_THAT(requests, ::testing::UnorderedElementsAre(
                            "Estimate/grpc/", "Check/grpc/", "Plan/grpc/", "ListPresets/grpc/",
                            "ListGpus/grpc/", "Report/grpc/", "GetCheck/grpc/", "Webhook/http/"));
}

}  // namespace
}  // namespace oomguard::service
