// The caching allocator on a fake device: exact byte counts as PyTorch 2.x's
// CUDACachingAllocator reports them, block reuse, splitting and merging, streams, record_stream
// events, the out-of-memory retry, max_split_size, and the memory_stats / memory_summary reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "ember/core/caching_allocator.h"
#include "fake_raw_memory.h"

namespace ember {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;
using testing::FakeRawMemory;

constexpr int kAll = kStatAll, kSmall = kStatSmallPool, kLarge = kStatLargePool;

char* at(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

TEST(CachingAllocator, OneByteTakesA512ByteBlockOfA2MiBSegment) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(1, 0);
  ASSERT_NE(p, nullptr);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kAll].current, 512);
  EXPECT_EQ(s.allocated_bytes[kSmall].current, 512);
  EXPECT_EQ(s.allocated_bytes[kLarge].current, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2097152);
  EXPECT_EQ(s.reserved_bytes[kSmall].current, 2097152);
  EXPECT_EQ(s.segment[kAll].current, 1);
  EXPECT_EQ(s.segment[kSmall].current, 1);
  EXPECT_EQ(s.allocation[kSmall].current, 1);
  EXPECT_EQ(s.active[kAll].current, 1);
  EXPECT_EQ(s.active_bytes[kAll].current, 512);
  EXPECT_EQ(s.requested_bytes[kAll].current, 1);
  // The rest of the segment is a free block of a split segment.
  EXPECT_EQ(s.inactive_split[kSmall].current, 1);
  EXPECT_EQ(s.inactive_split_bytes[kSmall].current, 2097152 - 512);
  EXPECT_EQ(s.num_device_alloc, 1);
  EXPECT_EQ(fake.alloc_sizes, std::vector<size_t>{2097152});
  alloc.free(p);
}

TEST(CachingAllocator, ZeroBytesIsNullAndCountsNothing) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  EXPECT_EQ(alloc.malloc(0, 0), nullptr);
  alloc.free(nullptr);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocation[kAll].allocated, 0);
  EXPECT_EQ(s.num_device_alloc, 0);
  EXPECT_EQ(fake.alloc_calls, 0);
}

TEST(CachingAllocator, OneMiBIsStillSmall) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(MiB, 0);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kSmall].current, 1048576);
  EXPECT_EQ(s.reserved_bytes[kSmall].current, 2097152);
  EXPECT_EQ(s.inactive_split_bytes[kSmall].current, 1048576);
  alloc.free(p);
}

TEST(CachingAllocator, LargeRequestsShareA20MiBSegment) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(MiB + 1, 0);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kLarge].current, 1049088);  // rounded up to 512 bytes
  EXPECT_EQ(s.allocated_bytes[kSmall].current, 0);
  EXPECT_EQ(s.requested_bytes[kLarge].current, 1048577);
  EXPECT_EQ(s.reserved_bytes[kLarge].current, 20971520);
  EXPECT_EQ(s.segment[kLarge].current, 1);
  EXPECT_EQ(s.inactive_split_bytes[kLarge].current, 20971520 - 1049088);
  // The next large request is cut from the same segment, right after the first.
  void* q = alloc.malloc(5 * MiB, 0);
  EXPECT_EQ(q, at(p, 1049088));
  EXPECT_EQ(fake.alloc_calls, 1);
  // Just under 10 MiB still gets a 20 MiB segment when nothing cached fits (on another stream).
  void* r = alloc.malloc(10 * MiB - 513, 1);
  EXPECT_EQ(fake.alloc_sizes, (std::vector<size_t>{20971520, 20971520}));
  alloc.free(p);
  alloc.free(q);
  alloc.free(r);
}

TEST(CachingAllocator, TenMiBAndMoreGetASegmentRoundedTo2MiB) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(12 * MiB, 0);
  EXPECT_EQ(fake.alloc_sizes.back(), 12582912u);
  EXPECT_EQ(alloc.stats().inactive_split[kAll].current, 0);  // nothing left over
  // 11 MiB + 1 rounds to 11 MiB + 512 in a 12 MiB segment; the 1023.5 KiB left is not more than
  // 1 MiB, so the block is not split and the whole 12 MiB counts as allocated.
  void* b = alloc.malloc(11 * MiB + 1, 0);
  EXPECT_EQ(fake.alloc_sizes.back(), 12582912u);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kLarge].current, 2 * 12582912);
  EXPECT_EQ(s.requested_bytes[kLarge].current, 12582912 + 11534337);
  EXPECT_EQ(s.inactive_split[kAll].current, 0);
  void* c = alloc.malloc(10 * MiB, 0);
  EXPECT_EQ(fake.alloc_sizes.back(), 10485760u);
  alloc.free(a);
  alloc.free(b);
  alloc.free(c);
}

TEST(CachingAllocator, SmallPoolSplitsOffEvenA512ByteRemainder) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(1024, 0);
  void* b = alloc.malloc(512, 0);
  alloc.free(a);                   // a free 1024-byte block between the start and b
  void* c = alloc.malloc(512, 0);  // best fit: a's block, 512 bytes left over
  void* d = alloc.malloc(512, 0);  // ... which is the best fit now
  EXPECT_EQ(c, a);
  EXPECT_EQ(d, at(a, 512));
  EXPECT_EQ(alloc.stats().allocated_bytes[kSmall].current, 1536);
  for (void* p : {b, c, d}) alloc.free(p);
}

TEST(CachingAllocator, FreedBlockIsReusedWithoutARawCall) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(1000, 0);
  alloc.free(a);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2097152);  // cached, not given back
  EXPECT_EQ(s.inactive_split[kAll].current, 0);        // merged back into one free segment
  void* b = alloc.malloc(1000, 0);
  EXPECT_EQ(b, a);
  EXPECT_EQ(fake.alloc_calls, 1);
  s = alloc.stats();
  EXPECT_EQ(s.allocation[kAll].allocated, 2);
  EXPECT_EQ(s.allocation[kAll].freed, 1);
  EXPECT_EQ(s.allocation[kAll].current, 1);
  alloc.free(b);
}

TEST(CachingAllocator, SplitBlocksMergeAndEmptyCacheReleasesTheSegment) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(512, 0);
  void* b = alloc.malloc(512, 0);
  EXPECT_EQ(b, at(a, 512));
  auto s = alloc.stats();
  EXPECT_EQ(s.segment[kAll].current, 1);
  EXPECT_EQ(s.inactive_split[kSmall].current, 1);
  EXPECT_EQ(s.inactive_split_bytes[kSmall].current, 2097152 - 1024);

  alloc.free(a);  // b is still allocated: a cannot merge
  s = alloc.stats();
  EXPECT_EQ(s.inactive_split[kSmall].current, 2);
  EXPECT_EQ(s.inactive_split_bytes[kSmall].current, 2097152 - 512);
  auto snap = alloc.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].blocks, (std::vector<std::pair<size_t, bool>>{
                                {512, false}, {512, true}, {2097152 - 1024, false}}));

  alloc.free(b);  // merges with both neighbours: the segment is one free block again
  s = alloc.stats();
  EXPECT_EQ(s.inactive_split[kSmall].current, 0);
  EXPECT_EQ(s.inactive_split_bytes[kSmall].current, 0);
  snap = alloc.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].blocks, (std::vector<std::pair<size_t, bool>>{{2097152, false}}));

  alloc.empty_cache();
  s = alloc.stats();
  EXPECT_EQ(s.reserved_bytes[kAll].current, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].freed, 2097152);
  EXPECT_EQ(s.segment[kAll].current, 0);
  EXPECT_EQ(s.segment[kAll].freed, 1);
  EXPECT_EQ(s.num_device_free, 1);
  EXPECT_EQ(s.num_sync_all_streams, 1);
  EXPECT_EQ(fake.used(), 0u);
  EXPECT_TRUE(alloc.snapshot().empty());
}

TEST(CachingAllocator, EmptyCacheKeepsSegmentsInUse) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(512, 0);
  void* big = alloc.malloc(12 * MiB, 0);
  alloc.free(big);
  alloc.empty_cache();  // the 12 MiB segment goes, a's segment is split and stays
  auto s = alloc.stats();
  EXPECT_EQ(s.num_device_free, 1);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2097152);
  EXPECT_EQ(s.reserved_bytes[kLarge].current, 0);
  alloc.free(a);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes[kAll].current, 0);
  EXPECT_EQ(fake.used(), 0u);
}

TEST(CachingAllocator, BestFitTakesTheSmallestBlockThatFits) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p12 = alloc.malloc(12 * MiB, 0);
  void* p16 = alloc.malloc(16 * MiB, 0);
  void* p14 = alloc.malloc(14 * MiB, 0);
  alloc.free(p12);
  alloc.free(p16);
  alloc.free(p14);
  void* a = alloc.malloc(13 * MiB, 0);
  EXPECT_EQ(a, p14);
  // 1 MiB left over is not split off in the large pool: the whole 14 MiB block is allocated.
  EXPECT_EQ(alloc.stats().allocated_bytes[kAll].current, 14 * 1048576);
  void* b = alloc.malloc(13 * MiB, 0);
  EXPECT_EQ(b, p16);
  EXPECT_EQ(fake.alloc_calls, 3);
  alloc.free(a);
  alloc.free(b);
}

TEST(CachingAllocator, LargePoolSplitsOnlyRemaindersAboveOneMiB) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* seg = alloc.malloc(12 * MiB, 0);
  alloc.free(seg);
  void* a = alloc.malloc(10 * MiB, 0);  // 2 MiB left over: split
  EXPECT_EQ(a, seg);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kLarge].current, 10 * 1048576);
  EXPECT_EQ(s.inactive_split_bytes[kLarge].current, 2 * 1048576);
  void* b = alloc.malloc(2 * MiB, 0);  // exactly the remainder
  EXPECT_EQ(b, at(seg, 10 * MiB));
  EXPECT_EQ(alloc.stats().inactive_split[kLarge].current, 0);
  EXPECT_EQ(fake.alloc_calls, 1);
  alloc.free(a);
  alloc.free(b);
}

TEST(CachingAllocator, BlocksAreNotSharedAcrossStreams) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(1000, 0);
  alloc.free(a);
  void* b = alloc.malloc(1000, 1);  // stream 0's cached block is not used
  EXPECT_NE(b, a);
  EXPECT_EQ(fake.alloc_calls, 2);
  EXPECT_EQ(alloc.stats().segment[kAll].current, 2);
  alloc.free(b);
  EXPECT_EQ(alloc.malloc(1000, 1), b);
  EXPECT_EQ(alloc.malloc(1000, 0), a);
  EXPECT_EQ(fake.alloc_calls, 2);
  auto snap = alloc.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  std::vector<int64_t> streams{snap[0].stream, snap[1].stream};
  std::sort(streams.begin(), streams.end());
  EXPECT_EQ(streams, (std::vector<int64_t>{0, 1}));
  alloc.free(a);
  alloc.free(b);
}

TEST(CachingAllocator, RecordStreamDelaysReuseUntilTheEventCompletes) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(1000, 0);
  alloc.record_stream(p, 7);
  alloc.record_stream(p, 7);  // recorded once
  alloc.free(p);
  EXPECT_EQ(fake.recorded_streams, std::vector<int64_t>{7});
  auto s = alloc.stats();
  // Freed but still active (torch's definition): not allocated, not reusable yet.
  EXPECT_EQ(s.allocation[kAll].current, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.active[kAll].current, 1);
  EXPECT_EQ(s.active_bytes[kAll].current, 1024);  // 1000 rounded up to 512 bytes
  EXPECT_EQ(s.requested_bytes[kAll].current, 1000);
  auto snap = alloc.snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].allocated_size, 0u);
  EXPECT_EQ(snap[0].active_size, 1024u);

  void* q = alloc.malloc(1000, 0);  // event pending: p's block is skipped
  EXPECT_EQ(q, at(p, 1024));
  fake.complete_stream(7);
  void* r = alloc.malloc(1000, 0);  // the event has completed: p's block is back
  EXPECT_EQ(r, p);
  s = alloc.stats();
  EXPECT_EQ(s.active[kAll].current, 2);
  EXPECT_EQ(s.requested_bytes[kAll].current, 2000);
  EXPECT_EQ(fake.outstanding_events(), 0u);
  EXPECT_EQ(fake.alloc_calls, 1);
  alloc.free(q);
  alloc.free(r);
}

TEST(CachingAllocator, RecordStreamWaitsForEveryStream) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(12 * MiB, 0);
  alloc.record_stream(p, 5);
  alloc.record_stream(p, 6);
  alloc.free(p);
  fake.complete_stream(5);
  void* q = alloc.malloc(12 * MiB, 0);
  EXPECT_NE(q, p);
  fake.complete_stream(6);
  void* r = alloc.malloc(12 * MiB, 0);
  EXPECT_EQ(r, p);
  alloc.free(q);
  alloc.free(r);
}

TEST(CachingAllocator, RecordStreamOnTheAllocationStreamIsIgnored) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(1000, 3);
  alloc.record_stream(p, 3);
  alloc.free(p);
  EXPECT_EQ(fake.events_recorded, 0);
  EXPECT_EQ(alloc.malloc(1000, 3), p);
  alloc.free(p);
}

TEST(CachingAllocator, EmptyCacheSynchronizesPendingEvents) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(1000, 0);
  alloc.record_stream(p, 5);
  alloc.free(p);
  alloc.empty_cache();
  auto s = alloc.stats();
  EXPECT_EQ(fake.syncs, 1);
  EXPECT_EQ(fake.outstanding_events(), 0u);
  EXPECT_EQ(s.num_sync_all_streams, 1);
  EXPECT_EQ(s.active[kAll].current, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 0);
  EXPECT_EQ(fake.used(), 0u);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeRawMemory fake(4 * MiB);
  CachingAllocator alloc(fake, "CUDA", 0);
  alloc.free(alloc.malloc(512, 0));
  alloc.free(alloc.malloc(512, 1));  // the device is now full of cached segments
  EXPECT_EQ(fake.used(), 4 * MiB);
  void* p = alloc.malloc(512, 2);
  ASSERT_NE(p, nullptr);
  auto s = alloc.stats();
  EXPECT_EQ(s.num_alloc_retries, 1);
  EXPECT_EQ(s.num_ooms, 0);
  EXPECT_EQ(s.num_device_alloc, 3);
  EXPECT_EQ(s.num_device_free, 2);
  EXPECT_EQ(s.num_sync_all_streams, 1);
  EXPECT_EQ(s.segment[kAll].current, 1);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2097152);
  EXPECT_EQ(fake.alloc_calls, 4);  // one failed
  alloc.free(p);
}

TEST(CachingAllocator, TrueOutOfMemoryThrowsTorchsMessage) {
  FakeRawMemory fake(4 * MiB);
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(512, 0);  // its segment is split, so it cannot be released
  try {
    alloc.malloc(3 * MiB, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()),
              "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
              "4.00 MiB of which 2.00 MiB is free. Of the allocated memory 512 bytes is allocated "
              "by ember, and 2.00 MiB is reserved by ember but unallocated.");
  }
  auto s = alloc.stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.num_alloc_retries, 1);
  EXPECT_EQ(s.allocation[kAll].current, 1);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 2097152);
  // Still usable, and an OutOfMemoryError is an ember::Error.
  void* b = alloc.malloc(512, 0);
  EXPECT_EQ(b, at(a, 512));
  alloc.free(a);
  alloc.free(b);
  EXPECT_THROW(alloc.malloc(size_t(1) << 62, 0), Error);
  EXPECT_EQ(alloc.stats().num_ooms, 2);
}

TEST(CachingAllocator, OutOfMemoryMessageNamesOtherBackends) {
  FakeRawMemory fake(MiB);
  CachingAllocator alloc(fake, "testdevice", 1);
  try {
    alloc.malloc(1, 0);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()),
              "testdevice out of memory. Tried to allocate 2.00 MiB. testdevice:1 has a total "
              "capacity of 1024.00 KiB of which 1024.00 KiB is free. Of the allocated memory "
              "0 bytes is allocated by ember, and 0 bytes is reserved by ember but unallocated.");
  }
}

TEST(CachingAllocator, FormatMemorySizeAsC10) {
  EXPECT_EQ(format_memory_size(0), "0 bytes");
  EXPECT_EQ(format_memory_size(1024), "1024 bytes");
  EXPECT_EQ(format_memory_size(1025), "1.00 KiB");
  EXPECT_EQ(format_memory_size(1536), "1.50 KiB");
  EXPECT_EQ(format_memory_size(1048576), "1024.00 KiB");
  EXPECT_EQ(format_memory_size(1048577), "1.00 MiB");
  EXPECT_EQ(format_memory_size(3731882), "3.56 MiB");
  EXPECT_EQ(format_memory_size(1073741824), "1024.00 MiB");
  EXPECT_EQ(format_memory_size(3758096384), "3.50 GiB");
}

TEST(CachingAllocator, PeakAndResetStats) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(MiB + 1, 0);
  void* b = alloc.malloc(512, 0);
  alloc.free(a);
  auto s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kAll].current, 512);
  EXPECT_EQ(s.allocated_bytes[kAll].peak, 1049088 + 512);
  EXPECT_EQ(s.allocated_bytes[kLarge].peak, 1049088);
  EXPECT_EQ(s.allocated_bytes[kSmall].peak, 512);
  EXPECT_EQ(s.allocated_bytes[kAll].allocated, 1049088 + 512);
  EXPECT_EQ(s.allocated_bytes[kAll].freed, 1049088);
  EXPECT_EQ(s.reserved_bytes[kAll].peak, 20971520 + 2097152);

  alloc.reset_peak_stats();
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kAll].peak, 512);
  EXPECT_EQ(s.allocated_bytes[kLarge].peak, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].peak, 20971520 + 2097152);  // still reserved
  EXPECT_EQ(s.allocated_bytes[kAll].allocated, 1049088 + 512);  // untouched

  alloc.reset_accumulated_stats();
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kAll].allocated, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].freed, 0);
  EXPECT_EQ(s.num_device_alloc, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].current, 512);
  alloc.free(b);
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes[kAll].freed, 512);
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].peak, 512);
}

TEST(CachingAllocator, MemoryStatsDictHasTorchsKeys) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* p = alloc.malloc(1, 0);
  auto d = memory_stats_dict(alloc.stats());
  // 9 per-pool stats x 3 pools x 4 metrics, 5 counters, max_split_size, 2 oversize stats x 4.
  EXPECT_EQ(d.size(), 122u);
  EXPECT_TRUE(std::is_sorted(d.begin(), d.end()));
  EXPECT_EQ(d.front().first, "active.all.allocated");
  EXPECT_EQ(d.back().first, "segment.small_pool.peak");
  std::map<std::string, int64_t> m(d.begin(), d.end());
  EXPECT_EQ(m.size(), d.size());
  EXPECT_EQ(m.at("allocated_bytes.all.current"), 512);
  EXPECT_EQ(m.at("allocation.small_pool.peak"), 1);
  EXPECT_EQ(m.at("reserved_bytes.small_pool.current"), 2097152);
  EXPECT_EQ(m.at("reserved_bytes.large_pool.current"), 0);
  EXPECT_EQ(m.at("requested_bytes.all.current"), 1);
  EXPECT_EQ(m.at("inactive_split_bytes.small_pool.current"), 2096640);
  EXPECT_EQ(m.at("segment.all.allocated"), 1);
  EXPECT_EQ(m.at("active_bytes.large_pool.freed"), 0);
  EXPECT_EQ(m.at("num_alloc_retries"), 0);
  EXPECT_EQ(m.at("num_ooms"), 0);
  EXPECT_EQ(m.at("num_sync_all_streams"), 0);
  EXPECT_EQ(m.at("num_device_alloc"), 1);
  EXPECT_EQ(m.at("num_device_free"), 0);
  EXPECT_EQ(m.at("max_split_size"), -1);
  EXPECT_EQ(m.at("oversize_allocations.current"), 0);
  EXPECT_EQ(m.at("oversize_segments.peak"), 0);
  for (const char* name : {"allocation", "segment", "active", "inactive_split", "allocated_bytes",
                           "reserved_bytes", "active_bytes", "inactive_split_bytes",
                           "requested_bytes"}) {
    for (const char* pool : {"all", "small_pool", "large_pool"}) {
      for (const char* metric : {"current", "peak", "allocated", "freed"}) {
        EXPECT_TRUE(m.count(std::string(name) + "." + pool + "." + metric)) << name << pool;
      }
    }
  }
  alloc.free(p);
}

// The expected table is the output of torch 2.x's memory_summary (torch/cuda/memory.py, run on
// the memory_stats_dict of this state), so layout, units and rounding are torch's.
TEST(CachingAllocator, MemorySummaryMatchesTorchsLayout) {
  FakeRawMemory fake(64 * MiB);
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(1, 0);
  void* b = alloc.malloc(MiB + 1, 0);
  void* c = alloc.malloc(12 * MiB, 0);  // cut from b's 20 MiB segment
  alloc.free(b);
  void* d = alloc.malloc(40 * MiB, 0);
  EXPECT_THROW(alloc.malloc(60 * MiB, 0), OutOfMemoryError);
  const auto s = alloc.stats();
  const std::string expected =
      R"(|===========================================================================|
|                  PyTorch CUDA memory summary, device ID 0                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 1            |        cudaMalloc retries: 1         |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |  53248 KiB |  53248 KiB |  54273 KiB |   1024 KiB |
|       from large pool |  53248 KiB |  53248 KiB |  54272 KiB |   1024 KiB |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 KiB |
|---------------------------------------------------------------------------|
| Active memory         |  53248 KiB |  53248 KiB |  54273 KiB |   1024 KiB |
|       from large pool |  53248 KiB |  53248 KiB |  54272 KiB |   1024 KiB |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 KiB |
|---------------------------------------------------------------------------|
| Requested memory      |  53248 KiB |  53248 KiB |  54272 KiB |   1024 KiB |
|       from large pool |  53248 KiB |  53248 KiB |  54272 KiB |   1024 KiB |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 KiB |
|---------------------------------------------------------------------------|
| GPU reserved memory   |  63488 KiB |  63488 KiB |  63488 KiB |      0 B   |
|       from large pool |  61440 KiB |  61440 KiB |  61440 KiB |      0 B   |
|       from small pool |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Non-releasable memory |  10239 KiB |  21503 KiB |  22527 KiB |  12288 KiB |
|       from large pool |   8192 KiB |  19455 KiB |  20480 KiB |  12288 KiB |
|       from small pool |   2047 KiB |   2047 KiB |   2047 KiB |      0 KiB |
|---------------------------------------------------------------------------|
| Allocations           |       3    |       3    |       4    |       1    |
|       from large pool |       2    |       2    |       3    |       1    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Active allocs         |       3    |       3    |       4    |       1    |
|       from large pool |       2    |       2    |       3    |       1    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| GPU reserved segments |       3    |       3    |       3    |       0    |
|       from large pool |       2    |       2    |       2    |       0    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Non-releasable allocs |       3    |       3    |       3    |       0    |
|       from large pool |       2    |       2    |       2    |       0    |
|       from small pool |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Oversize allocations  |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Oversize GPU segments |       0    |       0    |       0    |       0    |
|===========================================================================|)";
  EXPECT_EQ(memory_summary(s, 0, false), expected + "\n");

  // Abbreviated: the same table without the pool rows.
  const std::string abbreviated = memory_summary(s, 3, true);
  EXPECT_NE(abbreviated.find("|                  PyTorch CUDA memory summary, device ID 3"
                             "                 |\n"),
            std::string::npos);
  EXPECT_EQ(abbreviated.find("from large pool"), std::string::npos);
  for (const char* row : {"| Allocated memory      |  53248 KiB |", "| Active memory         |",
                          "| Requested memory      |", "| GPU reserved memory   |",
                          "| Non-releasable memory |", "| Allocations           |",
                          "| Active allocs         |", "| GPU reserved segments |",
                          "| Non-releasable allocs |", "| Oversize allocations  |",
                          "| Oversize GPU segments |"}) {
    EXPECT_NE(abbreviated.find(row), std::string::npos) << row;
  }
  // Another backend's name keeps every line 77 characters wide (75 between the bars).
  const std::string other = memory_summary(s, 1, true, "testdevice");
  EXPECT_NE(other.find("|                  PyTorch testdevice memory summary, device ID 1"
                       "           |\n"),
            std::string::npos);
  EXPECT_NE(other.find("|      testdevice OOMs: 1            |"
                       "            malloc retries: 1         |\n"),
            std::string::npos);
  size_t start = 0, lines = 0;
  for (size_t end; (end = other.find('\n', start)) != std::string::npos; start = end + 1, ++lines) {
    EXPECT_EQ(end - start, 77u) << other.substr(start, end - start);
  }
  EXPECT_EQ(lines, 29u);  // 6 header lines, 11 metrics of 2, the closing rule
  EXPECT_EQ(start, other.size());
  for (void* p : {a, c, d}) alloc.free(p);
}

TEST(CachingAllocator, MaxSplitSizeKeepsOversizeBlocksWhole) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  EXPECT_THROW(alloc.set_max_split_size(20 * MiB), ValueError);
  alloc.set_max_split_size(40 * MiB);
  EXPECT_EQ(alloc.stats().max_split_size, 41943040);

  void* a = alloc.malloc(50 * MiB, 0);
  auto s = alloc.stats();
  EXPECT_EQ(s.oversize_segments.current, 1);
  EXPECT_EQ(s.oversize_allocations.current, 1);
  alloc.free(a);
  EXPECT_EQ(alloc.stats().oversize_allocations.current, 0);
  EXPECT_EQ(alloc.stats().oversize_segments.current, 1);

  // An oversize request takes a cached oversize block less than 20 MiB larger, unsplit.
  void* b = alloc.malloc(45 * MiB, 0);
  EXPECT_EQ(b, a);
  EXPECT_EQ(alloc.stats().allocated_bytes[kAll].current, 50 * 1048576);
  alloc.free(b);
  // A request under the limit does not take an oversize block.
  void* c = alloc.malloc(12 * MiB, 0);
  EXPECT_NE(c, a);
  EXPECT_EQ(fake.alloc_sizes.back(), 12582912u);
  alloc.free(c);
  // Nor does an oversize request 20 MiB or more smaller than the block: with 50 and 70 MiB
  // cached, the first 45 MiB request takes the 50 MiB block, the second one a new segment.
  void* e = alloc.malloc(70 * MiB, 0);
  alloc.free(e);
  void* f = alloc.malloc(45 * MiB, 0);
  EXPECT_EQ(f, a);
  void* g = alloc.malloc(45 * MiB, 0);
  EXPECT_NE(g, e);
  EXPECT_EQ(fake.alloc_sizes.back(), 48234496u);  // 45 MiB rounded up to 2 MiB
  alloc.free(f);
  alloc.free(g);

  alloc.empty_cache();
  s = alloc.stats();
  EXPECT_EQ(s.oversize_segments.current, 0);
  EXPECT_EQ(s.oversize_segments.allocated, 3);  // 50, 70 and 46 MiB
  // The bound is exclusive: a block exactly 20 MiB larger is not taken, 1 MiB less is.
  void* h = alloc.malloc(70 * MiB, 0);
  alloc.free(h);
  void* i = alloc.malloc(50 * MiB, 0);
  EXPECT_NE(i, h);
  void* j = alloc.malloc(51 * MiB, 0);
  EXPECT_EQ(j, h);
  alloc.free(i);
  alloc.free(j);
  alloc.empty_cache();
  EXPECT_EQ(s.reserved_bytes[kAll].current, 0);
  alloc.set_max_split_size(SIZE_MAX);
  EXPECT_EQ(alloc.stats().max_split_size, -1);
}

TEST(CachingAllocator, OutOfMemoryFirstReleasesOversizeBlocksOfTheStream) {
  FakeRawMemory fake(90 * MiB);
  CachingAllocator alloc(fake, "CUDA", 0);
  alloc.set_max_split_size(40 * MiB);
  alloc.free(alloc.malloc(60 * MiB, 0));
  // 37 MiB (under the limit) cannot use the cached 60 MiB block, and 60 + 38 MiB do not fit:
  // the oversize block alone is given back, without a full release or a counted retry.
  void* p = alloc.malloc(37 * MiB, 0);
  ASSERT_NE(p, nullptr);
  auto s = alloc.stats();
  EXPECT_EQ(s.num_alloc_retries, 0);
  EXPECT_EQ(s.num_sync_all_streams, 0);
  EXPECT_EQ(s.num_device_free, 1);
  EXPECT_EQ(s.oversize_segments.current, 0);
  EXPECT_EQ(s.reserved_bytes[kAll].current, 38 * 1048576);
  alloc.free(p);
}

TEST(CachingAllocator, InvalidPointersAreRejected) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  int x = 0;
  EXPECT_THROW(alloc.free(&x), Error);
  void* p = alloc.malloc(100, 0);
  EXPECT_THROW(alloc.record_stream(at(p, 1), 1), Error);
  alloc.free(p);
  try {
    alloc.free(p);
    FAIL() << "double free accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid device pointer"), std::string::npos);
  }
}

TEST(CachingAllocator, SnapshotListsSegmentsInAddressOrder) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  void* a = alloc.malloc(512, 4);
  void* b = alloc.malloc(1024, 4);
  void* big = alloc.malloc(12 * MiB, 4);
  alloc.free(a);
  auto snap = alloc.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_LT(snap[0].address, snap[1].address);
  const SegmentInfo& small = snap[0].is_large ? snap[1] : snap[0];
  const SegmentInfo& large = snap[0].is_large ? snap[0] : snap[1];
  EXPECT_EQ(small.address, reinterpret_cast<size_t>(a));
  EXPECT_EQ(small.stream, 4);
  EXPECT_EQ(small.total_size, 2097152u);
  EXPECT_EQ(small.allocated_size, 1024u);
  EXPECT_EQ(small.active_size, 1024u);
  EXPECT_EQ(small.blocks, (std::vector<std::pair<size_t, bool>>{
                              {512, false}, {1024, true}, {2097152 - 1536, false}}));
  EXPECT_TRUE(large.is_large);
  EXPECT_EQ(large.address, reinterpret_cast<size_t>(big));
  EXPECT_EQ(large.blocks, (std::vector<std::pair<size_t, bool>>{{12582912, true}}));
  alloc.free(b);
  alloc.free(big);
}

TEST(CachingAllocator, DestructorGivesBackFreeSegmentsOnly) {
  FakeRawMemory fake;
  void* live = nullptr;
  {
    CachingAllocator alloc(fake, "CUDA", 0);
    alloc.free(alloc.malloc(512, 0));
    alloc.free(alloc.malloc(12 * MiB, 0));
    live = alloc.malloc(MiB + 1, 1);  // another stream: a new 20 MiB segment
    EXPECT_EQ(fake.used(), 2097152u + 12582912u + 20971520u);
  }
  EXPECT_EQ(fake.used(), 20971520u);  // the live allocation's segment stays with the device
  EXPECT_NE(live, nullptr);
}

TEST(CachingAllocator, ConcurrentMallocAndFree) {
  FakeRawMemory fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&alloc, t] {
      std::mt19937 rng(t);
      std::vector<void*> held;
      for (int i = 0; i < 300; ++i) {
        const size_t n = (rng() % 4 == 0) ? 1 + rng() % (3 * MiB) : 1 + rng() % (64 * KiB);
        held.push_back(alloc.malloc(n, t % 2));
        if (held.size() > 8) {
          alloc.free(held.front());
          held.erase(held.begin());
        }
      }
      for (void* p : held) alloc.free(p);
    });
  }
  for (auto& th : threads) th.join();
  auto s = alloc.stats();
  EXPECT_EQ(s.allocation[kAll].current, 0);
  EXPECT_EQ(s.allocated_bytes[kAll].current, 0);
  EXPECT_EQ(s.active_bytes[kAll].current, 0);
  EXPECT_EQ(s.requested_bytes[kAll].current, 0);
  EXPECT_EQ(s.inactive_split[kAll].current, 0);  // everything merged back
  EXPECT_EQ(s.allocation[kAll].allocated, 1200);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes[kAll].current, 0);
  EXPECT_EQ(fake.used(), 0u);
}

}  // namespace
}  // namespace ember
