// The caching allocator's history and detailed snapshots (torch.cuda.memory._record_memory_history,
// _snapshot) on a fake device: which trace entries each action records and in what order, their
// sizes against the statistics, the ring's limit, the stacks the context function gives and
// where they end up, and the blocks and segments of memory_snapshot().
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/caching_allocator.h"
#include "fake_raw_memory.h"

namespace ember {
namespace {

constexpr size_t MiB = 1024 * 1024;
constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

using FakeDevice = testing::FakeRawMemory;

// A context function whose n-th call returns stack(n): every capture is told apart.
struct Stacks {
  int calls = 0;
  static std::vector<std::string> stack(int n) {
    return {"train.py(" + std::to_string(n) + "): step", "main.py(3): <module>"};
  }
  StackContextFn fn() {
    return [this] { return stack(++calls); };
  }
};

size_t addr(void* p) { return reinterpret_cast<size_t>(p); }

std::vector<TraceAction> actions(const std::vector<MemoryTraceEntry>& trace) {
  std::vector<TraceAction> out;
  for (const auto& e : trace) out.push_back(e.action);
  return out;
}

void expect_frames(const StackFrames& frames, int n) {
  ASSERT_TRUE(frames) << "expected the stack of context call " << n << ", got none";
  EXPECT_EQ(*frames, Stacks::stack(n));
}

using A = TraceAction;

TEST(MemoryHistory, ActionNames) {
  EXPECT_STREQ(trace_action_name(A::Alloc), "alloc");
  EXPECT_STREQ(trace_action_name(A::FreeRequested), "free_requested");
  EXPECT_STREQ(trace_action_name(A::FreeCompleted), "free_completed");
  EXPECT_STREQ(trace_action_name(A::SegmentAlloc), "segment_alloc");
  EXPECT_STREQ(trace_action_name(A::SegmentFree), "segment_free");
  EXPECT_STREQ(trace_action_name(A::Oom), "oom");
  EXPECT_STREQ(trace_action_name(A::Snapshot), "snapshot");
  EXPECT_STREQ(block_state_name(BlockState::ActiveAllocated), "active_allocated");
  EXPECT_STREQ(block_state_name(BlockState::ActivePendingFree), "active_pending_free");
  EXPECT_STREQ(block_state_name(BlockState::Inactive), "inactive");
}

TEST(MemoryHistory, EventsInOrderWithSizesMatchingTheStatistics) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn());

  void* p = alloc.malloc(1000, 7);
  const DeviceMemoryStats s = alloc.stats();
  alloc.free(p);
  alloc.empty_cache();

  const auto trace = alloc.memory_snapshot().trace;
  ASSERT_EQ(actions(trace), (std::vector<A>{A::SegmentAlloc, A::Alloc, A::FreeRequested, A::FreeCompleted,
                                            A::SegmentFree}));
  // The segment is what reserved_bytes counts; the allocation what requested_bytes counts.
  EXPECT_EQ(int64_t(trace[0].size), s.reserved_bytes[kStatAll].current);
  EXPECT_EQ(trace[0].size, 2 * MiB);
  EXPECT_EQ(int64_t(trace[1].size), s.requested_bytes[kStatAll].current);
  EXPECT_EQ(trace[1].size, 1000u);
  EXPECT_EQ(s.allocated_bytes[kStatAll].current, 1024);  // the block is rounded; the entry is not
  EXPECT_EQ(trace[2].size, 1000u);
  EXPECT_EQ(trace[3].size, 1000u);
  EXPECT_EQ(trace[4].size, 2 * MiB);
  // The first block of a new segment starts at its base.
  for (const auto& e : trace) {
    EXPECT_EQ(e.addr, addr(p)) << trace_action_name(e.action);
    EXPECT_EQ(e.stream, 7) << trace_action_name(e.action);
  }
  // Wall-clock microseconds since the epoch (after 2020), never going back.
  EXPECT_GT(trace[0].time_us, int64_t(1577836800) * 1000000);
  for (size_t i = 1; i < trace.size(); ++i) EXPECT_GE(trace[i].time_us, trace[i - 1].time_us);
}

TEST(MemoryHistory, DisabledRecordsNothing) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  alloc.free(alloc.malloc(1000, 0));
  EXPECT_TRUE(alloc.memory_snapshot().trace.empty());

  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn());
  void* kept = alloc.malloc(1000, 0);  // context call 1
  EXPECT_EQ(alloc.memory_snapshot().trace.size(), 1u);
  // Disabling drops the trace and stops asking for stacks; the live block keeps its stack.
  alloc.record_history(false, kNoLimit, stacks.fn());
  void* later = alloc.malloc(2000, 0);
  alloc.free(later);
  const AllocatorSnapshot snap = alloc.memory_snapshot();
  EXPECT_TRUE(snap.trace.empty());
  EXPECT_TRUE(alloc.memory_snapshot().trace.empty());  // and no "snapshot" entry either
  EXPECT_EQ(stacks.calls, 1);
  ASSERT_EQ(snap.segments.size(), 1u);
  ASSERT_GE(snap.segments[0].blocks.size(), 1u);
  const BlockSnapshot& b = snap.segments[0].blocks[0];
  EXPECT_EQ(b.address, addr(kept));
  expect_frames(b.frames, 1);
  alloc.free(kept);
}

TEST(MemoryHistory, RingKeepsTheNewestEntries) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  alloc.record_history(true, 3, nullptr);  // no context function: actions only
  alloc.free(alloc.malloc(100, 0));  // segment_alloc, alloc, free_requested, free_completed
  alloc.free(alloc.malloc(200, 0));  // the cached block again: alloc, free_requested, free_completed
  auto trace = alloc.memory_snapshot().trace;
  ASSERT_EQ(actions(trace), (std::vector<A>{A::Alloc, A::FreeRequested, A::FreeCompleted}));
  for (const auto& e : trace) {
    EXPECT_EQ(e.size, 200u);
    EXPECT_FALSE(e.frames);
  }
  // The snapshot entry went in last; a smaller ring keeps the newest two.
  alloc.record_history(true, 2, nullptr);
  trace = alloc.memory_snapshot().trace;
  ASSERT_EQ(actions(trace), (std::vector<A>{A::FreeCompleted, A::Snapshot}));
  EXPECT_EQ(trace[1].addr, 0u);
  EXPECT_EQ(trace[1].size, 0u);  // nothing was active
  // At least one entry is kept, as torch's ring.
  alloc.record_history(true, 0, nullptr);
  EXPECT_EQ(alloc.memory_snapshot().trace.size(), 1u);
  // clear_history empties it on enable.
  alloc.record_history(true, 10, nullptr, RecordContext::All, /*clear_history=*/true);
  EXPECT_TRUE(alloc.memory_snapshot().trace.empty());
}

TEST(MemoryHistory, AllContextRecordsTheStackOfEachCall) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn(), RecordContext::All);
  void* p = alloc.malloc(1000, 0);  // call 1
  alloc.free(p);                    // call 2
  alloc.empty_cache();              // call 3
  EXPECT_EQ(stacks.calls, 3);
  const auto trace = alloc.memory_snapshot().trace;
  ASSERT_EQ(trace.size(), 5u);
  expect_frames(trace[0].frames, 1);  // segment_alloc: the allocation that needed it
  expect_frames(trace[1].frames, 1);  // alloc
  expect_frames(trace[2].frames, 2);  // free_requested: the free
  expect_frames(trace[3].frames, 2);  // free_completed at once: the free
  expect_frames(trace[4].frames, 3);  // segment_free: empty_cache
}

TEST(MemoryHistory, AllocContextGivesFreesTheAllocationStack) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn(), RecordContext::Alloc);
  void* p = alloc.malloc(1000, 0);  // call 1
  alloc.free(p);                    // frees gather nothing below "all"
  alloc.empty_cache();
  EXPECT_EQ(stacks.calls, 1);
  const auto trace = alloc.memory_snapshot().trace;
  ASSERT_EQ(trace.size(), 5u);
  for (const auto& e : trace) expect_frames(e.frames, 1);
}

TEST(MemoryHistory, StateContextKeepsStacksOnBlocksOnly) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn(), RecordContext::State);
  void* p = alloc.malloc(1000, 0);  // call 1
  const AllocatorSnapshot snap = alloc.memory_snapshot();
  EXPECT_EQ(stacks.calls, 1);
  ASSERT_EQ(snap.trace.size(), 2u);
  for (const auto& e : snap.trace) EXPECT_FALSE(e.frames) << trace_action_name(e.action);
  ASSERT_EQ(snap.segments.size(), 1u);
  expect_frames(snap.segments[0].frames, 1);
  expect_frames(snap.segments[0].blocks[0].frames, 1);
  alloc.free(p);
}

TEST(MemoryHistory, NeverContextRecordsActionsWithoutStacks) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn(), RecordContext::Never);
  alloc.free(alloc.malloc(1000, 0));
  EXPECT_EQ(stacks.calls, 0);
  const auto trace = alloc.memory_snapshot().trace;
  EXPECT_EQ(trace.size(), 4u);
  for (const auto& e : trace) EXPECT_FALSE(e.frames);
}

TEST(MemoryHistory, SnapshotBlocksCarryTheFramesOfTheirAllocation) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 3);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn());
  void* p1 = alloc.malloc(1000, 0);  // call 1: a new 2 MiB segment, block [0, 1024)
  void* p2 = alloc.malloc(3000, 0);  // call 2: block [1024, 4096)
  alloc.free(p1);                    // call 3
  void* big = alloc.malloc(5 * MiB, 0);  // call 4: a 20 MiB large segment

  const AllocatorSnapshot snap = alloc.memory_snapshot();
  EXPECT_EQ(snap.device, 3);
  ASSERT_EQ(snap.segments.size(), 2u);
  const SegmentSnapshot* small = snap.segments[0].is_large ? &snap.segments[1] : &snap.segments[0];
  const SegmentSnapshot* large = snap.segments[0].is_large ? &snap.segments[0] : &snap.segments[1];
  EXPECT_LT(snap.segments[0].address, snap.segments[1].address);  // by address

  EXPECT_EQ(small->device, 3);
  EXPECT_EQ(small->address, addr(p1));
  EXPECT_EQ(small->total_size, 2 * MiB);
  EXPECT_EQ(small->allocated_size, 3072u);
  EXPECT_EQ(small->active_size, 3072u);
  EXPECT_EQ(small->requested_size, 3000u);
  EXPECT_EQ(small->stream, 0);
  expect_frames(small->frames, 1);  // the allocation that made the segment
  ASSERT_EQ(small->blocks.size(), 3u);
  const BlockSnapshot& freed = small->blocks[0];
  EXPECT_EQ(freed.address, addr(p1));
  EXPECT_EQ(freed.size, 1024u);
  EXPECT_EQ(freed.state, BlockState::Inactive);
  EXPECT_EQ(freed.requested_size, 0u);
  EXPECT_FALSE(freed.frames);  // a free block belongs to no allocation
  const BlockSnapshot& live = small->blocks[1];
  EXPECT_EQ(live.address, addr(p2));
  EXPECT_EQ(live.size, 3072u);
  EXPECT_EQ(live.requested_size, 3000u);
  EXPECT_EQ(live.state, BlockState::ActiveAllocated);
  expect_frames(live.frames, 2);
  const BlockSnapshot& rest = small->blocks[2];
  EXPECT_EQ(rest.address, addr(p2) + 3072);
  EXPECT_EQ(rest.size, 2 * MiB - 4096);
  EXPECT_EQ(rest.state, BlockState::Inactive);

  EXPECT_EQ(large->total_size, 20 * MiB);
  EXPECT_EQ(large->blocks[0].address, addr(big));
  EXPECT_EQ(large->blocks[0].requested_size, 5 * MiB);
  expect_frames(large->blocks[0].frames, 4);
  expect_frames(large->frames, 4);

  // The snapshot's own entry is in the next snapshot, with the active bytes of the first.
  const auto trace = alloc.memory_snapshot().trace;
  ASSERT_FALSE(trace.empty());
  EXPECT_EQ(trace.back().action, A::Snapshot);
  EXPECT_EQ(trace.back().size, 3072u + 5 * MiB);
  alloc.free(p2);
  alloc.free(big);
}

TEST(MemoryHistory, RecordStreamBlockIsPendingFreeUntilItsEventsFire) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn());
  void* p = alloc.malloc(1000, 0);  // call 1
  alloc.record_stream(p, 5);
  alloc.free(p);  // call 2: waits for stream 5

  AllocatorSnapshot snap = alloc.memory_snapshot();
  ASSERT_EQ(actions(snap.trace), (std::vector<A>{A::SegmentAlloc, A::Alloc, A::FreeRequested}));
  const BlockSnapshot& b = snap.segments[0].blocks[0];
  EXPECT_EQ(b.state, BlockState::ActivePendingFree);
  EXPECT_EQ(b.requested_size, 1000u);
  expect_frames(b.frames, 1);
  EXPECT_EQ(snap.segments[0].allocated_size, 0u);
  EXPECT_EQ(snap.segments[0].active_size, 1024u);

  // The next malloc finds the event done: the free completes, naming the allocation.
  fake.complete_stream(5);
  void* q = alloc.malloc(1, 0);  // call 3
  snap = alloc.memory_snapshot();
  ASSERT_GE(snap.trace.size(), 5u);
  const MemoryTraceEntry& done = snap.trace[4];
  EXPECT_EQ(done.action, A::FreeCompleted);
  EXPECT_EQ(done.addr, addr(p));
  EXPECT_EQ(done.size, 1000u);
  expect_frames(done.frames, 1);
  alloc.free(q);
}

TEST(MemoryHistory, OutOfMemoryIsRecordedWithTheDevicesFreeBytes) {
  FakeDevice fake(4 * MiB);
  CachingAllocator alloc(fake, "CUDA", 0);
  Stacks stacks;
  alloc.record_history(true, kNoLimit, stacks.fn());
  EXPECT_THROW(alloc.malloc(30 * MiB, 2), OutOfMemoryError);
  const auto trace = alloc.memory_snapshot().trace;
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(trace[0].action, A::Oom);
  EXPECT_EQ(trace[0].addr, 4 * MiB);  // what the device had free
  EXPECT_EQ(trace[0].size, 30 * MiB);  // the segment that could not be made
  EXPECT_EQ(trace[0].stream, 2);
  expect_frames(trace[0].frames, 1);
}

TEST(MemoryHistory, ThreadsRecordEveryActionInAConsistentOrder) {
  FakeDevice fake;
  CachingAllocator alloc(fake, "CUDA", 0);
  std::atomic<int> calls{0};
  // The context function runs outside the allocator's lock, on every allocating thread.
  alloc.record_history(true, kNoLimit, [&calls] {
    return std::vector<std::string>{"worker.py(" + std::to_string(calls.fetch_add(1) + 1) + "): run"};
  });
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&alloc] {
      for (int i = 0; i < kRounds; ++i) alloc.free(alloc.malloc(1000, 0));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(calls.load(), 2 * kThreads * kRounds);  // one stack per malloc and per free
  const auto trace = alloc.memory_snapshot().trace;
  std::map<A, int> count;
  std::map<size_t, A> last;  // per address: alloc -> free_requested -> free_completed -> alloc ...
  for (const auto& e : trace) {
    ++count[e.action];
    if (e.action == A::SegmentAlloc) continue;
    auto it = last.find(e.addr);
    const A before = it == last.end() ? A::FreeCompleted : it->second;
    const A expected = before == A::Alloc ? A::FreeRequested : before == A::FreeRequested ? A::FreeCompleted : A::Alloc;
    EXPECT_EQ(e.action, expected) << "at address " << e.addr;
    last[e.addr] = e.action;
    ASSERT_TRUE(e.frames);
  }
  EXPECT_EQ(count[A::Alloc], kThreads * kRounds);
  EXPECT_EQ(count[A::FreeRequested], kThreads * kRounds);
  EXPECT_EQ(count[A::FreeCompleted], kThreads * kRounds);
  EXPECT_GE(count[A::SegmentAlloc], 1);
}

}  // namespace
}  // namespace ember
