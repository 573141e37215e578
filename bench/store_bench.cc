// Ingest speed of the store (store/check_store.h): AddReport of a report of
// 8 ranks (Megatron's log: max allocated and max reserved per rank), durable
// on return, into SQLite in a temporary file (WAL, synchronous=FULL: every
// commit fsyncs the WAL), from 1 to 64 concurrent reporters. The writer's
// group commit lets concurrent reports share one commit, so the rate grows
// with the reporters until the CPU, not the fsync, bounds it. The issue's
// target: 5,000 reports/s on 2 cores.
//
//   build/bench/store_bench --benchmark_counters_tabular=true
//
// The file lives in $TMPDIR (default /tmp): the figure is that disk's fsync.
// Measured on 2 cores of a shared VM (ext4 on virtio, fsync 3.7-4.7 ms):
// 1 reporter 214-273 reports/s (one fsync each), 16 reporters 4,400-10,200/s,
// 64 reporters 11,800-14,400/s.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "store/check_store.h"
#include "tests/testing/store_test_records.h"

namespace {

using oomguard::store::CheckStore;

constexpr int kChecks = 1024;
constexpr int kRanks = 8;

// One store for the whole run, its checks put once.
CheckStore& SharedStore() {
  static std::once_flag once;
  static std::unique_ptr<CheckStore> store;
  std::call_once(once, [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/oomguard-store-bench-XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    oomguard::store::StoreUrl url;
    url.sqlite_path = dir + "/checks.db";
    auto opened = oomguard::store::OpenCheckStore(url, {});
    if (!opened.ok()) std::abort();
    store = *std::move(opened);
    const absl::Time now = absl::Now();
    for (int n = 0; n < kChecks; ++n) {
      if (!store->PutCheck(oomguard::testing::TestCheckRecord(n, now)).ok()) std::abort();
    }
    if (!store->Flush().ok()) std::abort();
  });
  return *store;
}

void BM_SqliteAddReport(benchmark::State& state) {
  CheckStore& store = SharedStore();
  const oomguard::v1::StoredReport report =
      oomguard::testing::TestReport(kRanks, oomguard::v1::JOB_OUTCOME_RAN, absl::Now());
  const oomguard::v1::JobHandle no_handle;
  static std::atomic<uint64_t> next{0};
  for (auto _ : state) {
    const std::string check_id = oomguard::testing::TestCheckId(next++ % kChecks);
    if (!store.AddReport(check_id, report, no_handle).ok()) {
      state.SkipWithError("AddReport failed");
      break;
    }
  }
  state.counters["reports_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SqliteAddReport)->ThreadRange(1, 64)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
