// Tests of the Check response cache (service/response_cache.h).
#include "service/response_cache.h"

#include <string>

#include "gtest/gtest.h"

namespace oomguard::service {
namespace {

ResponseCache::Entry EntryOf(const std::string& bytes) {
  return {grpc::Slice(bytes), v1::VERDICT_FITS, 42};
}

std::string Bytes(const grpc::Slice& slice) {
  return std::string(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

TEST(ResponseCacheTest, FindsWhatWasInserted) {
  ResponseCache cache(1 << 20);
  EXPECT_FALSE(cache.Find("request").has_value());
  cache.Insert("request", EntryOf("response"));
  std::optional<ResponseCache::Entry> hit = cache.Find("request");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(Bytes(hit->response), "response");
  EXPECT_EQ(hit->verdict, v1::VERDICT_FITS);
  EXPECT_EQ(hit->peak_bytes, 42u);
}

TEST(ResponseCacheTest, EvictsTheLeastRecentlyUsedBeyondItsBound) {
  ResponseCache cache(30);  // Three entries of 10 bytes.
  cache.Insert("key1", EntryOf("value1"));
  cache.Insert("key2", EntryOf("value2"));
  cache.Insert("key3", EntryOf("value3"));
  ASSERT_TRUE(cache.Find("key1").has_value());  // key2 is now the oldest.
  cache.Insert("key4", EntryOf("value4"));
  EXPECT_TRUE(cache.Find("key1").has_value());
  EXPECT_FALSE(cache.Find("key2").has_value());
  EXPECT_TRUE(cache.Find("key3").has_value());
  EXPECT_TRUE(cache.Find("key4").has_value());
}

TEST(ResponseCacheTest, CountsItsLookupsEntriesAndBytes) {
  ResponseCache cache(30);  // Three entries of 10 bytes.
  EXPECT_FALSE(cache.Find("key1").has_value());
  cache.Insert("key1", EntryOf("value1"));
  cache.Insert("key2", EntryOf("value2"));
  cache.Insert("key2", EntryOf("other2"));  // Already there: not counted twice.
  ASSERT_TRUE(cache.Find("key1").has_value());
  ASSERT_TRUE(cache.Find("key2").has_value());
  LruCacheStats stats = cache.Stats();
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.bytes, 20u);

  cache.Insert("key3", EntryOf("value3"));
  cache.Insert("key4", EntryOf("value4"));  // Evicts key1.
  stats = cache.Stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.bytes, 30u);

  ResponseCache off(0);  // A disabled cache counts no lookups.
  EXPECT_FALSE(off.Find("key1").has_value());
  EXPECT_EQ(off.Stats().misses, 0u);
}

TEST(ResponseCacheTest, ZeroBoundDisablesItAndOversizedEntriesAreSkipped) {
  ResponseCache off(0);
  off.Insert("k", EntryOf("v"));
  EXPECT_FALSE(off.Find("k").has_value());

  ResponseCache small(8);
  small.Insert("key", EntryOf("a response too large"));
  EXPECT_FALSE(small.Find("key").has_value());
}

}  // namespace
}  // namespace oomguard::service
