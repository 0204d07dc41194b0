// The profiler (issue 19): events for a known program, their nesting and times, backward nodes
// linked to forward ops, memory that adds up, the table's layout and the schedule.
#include <algorithm>
#include <thread>

#include "ember/data.h"
#include "ember/dispatch/op.h"
#include "ember/profiler.h"
#include "test_utils.h"

using namespace ember;
namespace P = ember::profiler;

namespace {

std::vector<const P::ProfilerEvent*> named(const P::ProfilerResult& r, const std::string& name) {
  std::vector<const P::ProfilerEvent*> out;
  for (const auto& e : r.events())
    if (e.name == name) out.push_back(&e);
  return out;
}

std::shared_ptr<P::ProfilerResult> run_profiled(const P::ProfilerConfig& config, const std::function<void()>& body) {
  P::enable_profiler(config);
  try {
    body();
  } catch (...) {
    P::disable_profiler();
    throw;
  }
  return P::disable_profiler();
}

}  // namespace

TEST(Profiler, RecordsEachOpOnceWithNestingAndShapes) {
  Tensor a = ones({4, 8});
  Tensor b = ones({8, 3});
  auto r = run_profiled({.record_shapes = true}, [&] {
    P::RecordFunction region("my_region");
    Tensor c = mm(a, b);
    Tensor d = add(c, c);
    (void)d;
  });
  auto regions = named(*r, "my_region");
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0]->kind, P::EventKind::UserAnnotation);
  auto mms = named(*r, "aten::mm");
  auto adds = named(*r, "aten::add");
  ASSERT_EQ(mms.size(), 1u);
  ASSERT_EQ(adds.size(), 1u);
  // Both are children of the region.
  int64_t region_index = regions[0] - r->events().data();
  EXPECT_EQ(mms[0]->parent, region_index);
  EXPECT_EQ(adds[0]->parent, region_index);
  EXPECT_EQ(std::count(regions[0]->children.begin(), regions[0]->children.end(), mms[0] - r->events().data()), 1);
  // Shapes, strides and dtypes as torch records them.
  ASSERT_EQ(mms[0]->inputs.size(), 2u);
  EXPECT_EQ(mms[0]->inputs[0].dims, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(mms[0]->inputs[1].dims, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(mms[0]->inputs[0].strides, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(mms[0]->inputs[0].type, "float");
  ASSERT_EQ(adds[0]->inputs.size(), 3u);  // add(self, other, alpha)
  EXPECT_EQ(adds[0]->inputs[2].type, "Scalar");
  EXPECT_EQ(adds[0]->inputs[2].concrete, "1");
  EXPECT_FALSE(P::is_profiler_enabled());
  EXPECT_FALSE(has_op_observers());
}

TEST(Profiler, TimesAreConsistent) {
  Tensor x = randn({64, 64});
  auto r = run_profiled({}, [&] {
    for (int i = 0; i < 3; ++i) {
      P::RecordFunction step("step");
      x = relu(mm(x, x)).softmax(1);
    }
  });
  ASSERT_GT(r->events().size(), 6u);
  for (const auto& e : r->events()) {
    EXPECT_LE(e.start_ns, e.end_ns) << e.name;
    EXPECT_LE(e.self_cpu_time_ns, e.duration_ns()) << e.name;
    EXPECT_GE(e.self_cpu_time_ns, 0) << e.name;
    if (e.parent >= 0) {
      const auto& p = r->events()[size_t(e.parent)];
      EXPECT_LE(p.start_ns, e.start_ns) << e.name << " in " << p.name;
      EXPECT_GE(p.end_ns, e.end_ns) << e.name << " in " << p.name;
      EXPECT_EQ(p.thread, e.thread);
    }
    int64_t inside = 0;
    for (int64_t c : e.children) inside += r->events()[size_t(c)].duration_ns();
    EXPECT_EQ(e.self_cpu_time_ns, std::max<int64_t>(0, e.duration_ns() - inside));
  }
  EXPECT_EQ(named(*r, "step").size(), 3u);
  EXPECT_EQ(named(*r, "aten::mm").size(), 3u);
  // Without record_shapes nothing about the inputs is kept.
  EXPECT_TRUE(named(*r, "aten::mm")[0]->inputs.empty());
}

TEST(Profiler, BackwardNodesCarryTheForwardSequenceNumber) {
  Tensor w = randn({5, 3}).requires_grad_();
  Tensor x = randn({4, 5});
  auto r = run_profiled({}, [&] {
    Tensor loss = mm(x, w).sum();
    loss.backward();
  });
  auto mm_fwd = named(*r, "aten::mm");
  ASSERT_GE(mm_fwd.size(), 1u);
  const auto* forward = mm_fwd[0];  // the first mm is the forward one (backward computes x^T @ grad)
  ASSERT_GE(forward->sequence_nr, 0);
  auto outer = named(*r, "autograd::engine::evaluate_function: MmBackward0");
  auto inner = named(*r, "MmBackward0");
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(outer[0]->sequence_nr, forward->sequence_nr);
  EXPECT_EQ(inner[0]->sequence_nr, forward->sequence_nr);
  EXPECT_NE(inner[0]->fwd_thread, 0u);
  EXPECT_EQ(r->events()[size_t(inner[0]->parent)].name, outer[0]->name);
  // The backward's own mm runs inside the node.
  bool mm_inside_node = false;
  for (const auto* m : mm_fwd)
    if (m->parent == inner[0] - r->events().data()) mm_inside_node = true;
  EXPECT_TRUE(mm_inside_node);
  EXPECT_EQ(named(*r, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad").size(), 1u);
  // An op on tensors that need no grad has no sequence number.
  auto sums = named(*r, "aten::sum");
  ASSERT_GE(sums.size(), 1u);
  EXPECT_GE(sums[0]->sequence_nr, 0);
}

TEST(Profiler, MemoryEventsAddUp) {
  std::vector<Tensor> keep;
  auto r = run_profiled({.profile_memory = true}, [&] {
    P::RecordFunction region("alloc_region");
    keep.push_back(empty({1000}));           // 4000 bytes, kept
    { Tensor t = empty({250}); (void)t; }    // 1000 bytes, freed inside the region
    keep.push_back(ones({10}, {.dtype = kFloat64}));  // 80 bytes
  });
  int64_t sum = 0;
  for (const auto& m : r->memory_events()) {
    sum += m.bytes;
    EXPECT_EQ(m.device.type, DeviceType::CPU);
    EXPECT_EQ(m.total_allocated, sum);  // the running total after each event
  }
  EXPECT_EQ(sum, 4000 + 80);
  ASSERT_EQ(r->memory_events().size(), 4u);  // three allocations, one free
  auto region = named(*r, "alloc_region");
  ASSERT_EQ(region.size(), 1u);
  EXPECT_EQ(region[0]->cpu_memory, 4080);
  auto empties = named(*r, "aten::empty");
  ASSERT_EQ(empties.size(), 3u);  // ones() allocates through empty() too
  EXPECT_EQ(empties[0]->self_cpu_memory, 4000);
  EXPECT_EQ(empties[1]->self_cpu_memory, 1000);
  EXPECT_EQ(empties[2]->self_cpu_memory, 80);
  // Frees are charged to the event open when they happen: the region.
  EXPECT_EQ(region[0]->self_cpu_memory, -1000);
  // Tensors allocated before the session are not reported when freed.
  keep.clear();
}

TEST(Profiler, KeyAveragesAndTable) {
  Tensor a = randn({16, 16});
  auto r = run_profiled({.record_shapes = true}, [&] {
    for (int i = 0; i < 4; ++i) a = mm(a, a).tanh();
    Tensor b = mm(ones({2, 16}), a);
    (void)b;
  });
  auto rows = P::key_averages(*r);
  auto find = [&](const std::vector<P::EventAverage>& rs, const std::string& k) {
    for (const auto& x : rs)
      if (x.key == k) return x;
    return P::EventAverage{};
  };
  EXPECT_EQ(find(rows, "aten::mm").count, 5);
  EXPECT_EQ(find(rows, "aten::tanh").count, 4);
  EXPECT_TRUE(find(rows, "aten::mm").input_shapes.empty());
  auto by_shape = P::key_averages(*r, true);
  int mm_rows = 0;
  for (const auto& x : by_shape)
    if (x.key == "aten::mm") {
      ++mm_rows;
      EXPECT_TRUE(x.input_shapes == "[[16, 16], [16, 16]]" || x.input_shapes == "[[2, 16], [16, 16]]") << x.input_shapes;
    }
  EXPECT_EQ(mm_rows, 2);

  std::string t = P::table(rows, {.sort_by = "self_cpu_time_total", .row_limit = 2}, "", false, false);
  std::vector<std::string> lines;
  for (size_t s = 0, e; (e = t.find('\n', s)) != std::string::npos; s = e + 1) lines.push_back(t.substr(s, e - s));
  // separator, header, separator, 2 rows, separator, total line
  ASSERT_EQ(lines.size(), 7u) << t;
  EXPECT_EQ(lines[0], lines[2]);
  EXPECT_EQ(lines[0], lines[5]);
  for (const char* h : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"})
    EXPECT_NE(lines[1].find(h), std::string::npos) << h;
  EXPECT_EQ(lines[1].find("Input Shapes"), std::string::npos);
  EXPECT_EQ(lines[6].rfind("Self CPU time total: ", 0), 0u);
  // Sorted: the first row has the largest self CPU time.
  std::vector<P::EventAverage> sorted = rows;
  std::sort(sorted.begin(), sorted.end(), [](auto& x, auto& y) { return x.self_cpu_time_total_ns > y.self_cpu_time_total_ns; });
  EXPECT_NE(lines[3].find(sorted[0].key), std::string::npos) << t;
  // Column widths: every line of the body is as long as the separator.
  for (int k : {1, 3, 4}) EXPECT_EQ(lines[size_t(k)].size(), lines[0].size()) << lines[size_t(k)];
  EXPECT_THROW(P::table(rows, {.sort_by = "no_such_column"}, "", false, false), ValueError);
  std::string shaped = P::table(by_shape, {}, "", false, false);
  EXPECT_NE(shaped.find("Input Shapes"), std::string::npos);
  EXPECT_NE(shaped.find("[[2, 16], [16, 16]]"), std::string::npos);
}

TEST(Profiler, FormatsAsTorch) {
  EXPECT_EQ(P::format_time_us(12.3456), "12.346us");
  EXPECT_EQ(P::format_time_us(1500), "1.500ms");
  EXPECT_EQ(P::format_time_us(2.5e6), "2.500s");
  EXPECT_EQ(P::format_memory(512), "512 B");
  EXPECT_EQ(P::format_memory(-8), "-8 B");
  EXPECT_EQ(P::format_memory(8320), "8.12 KB");
  EXPECT_EQ(P::format_memory(3 * 1024 * 1024), "3.00 MB");
}

TEST(Profiler, FlopsOfMatmuls) {
  auto r = run_profiled({.with_flops = true}, [&] {
    Tensor c = mm(ones({4, 8}), ones({8, 3}));
    Tensor d = bmm(ones({2, 4, 8}), ones({2, 8, 5}));
    (void)c; (void)d;
  });
  EXPECT_EQ(named(*r, "aten::mm")[0]->flops, 2 * 4 * 8 * 3);
  EXPECT_EQ(named(*r, "aten::bmm")[0]->flops, 2 * 2 * 4 * 8 * 5);
  EXPECT_TRUE(named(*r, "aten::mm")[0]->inputs.empty());  // recorded for the count, not kept
}

TEST(Profiler, OtherThreadsAreRecorded) {
  auto r = run_profiled({}, [&] {
    std::thread t([] { Tensor x = ones({3}).exp(); (void)x; });
    t.join();
    Tensor y = ones({3}).exp();
    (void)y;
  });
  auto exps = named(*r, "aten::exp");
  ASSERT_EQ(exps.size(), 2u);
  EXPECT_NE(exps[0]->thread, exps[1]->thread);
}

TEST(Profiler, OneSessionAtATime) {
  P::enable_profiler({});
  EXPECT_THROW(P::enable_profiler({}), Error);
  P::disable_profiler();
  EXPECT_THROW(P::disable_profiler(), Error);
}

TEST(Profiler, ScheduleMatchesTorch) {
  using A = P::ProfilerAction;
  auto s = P::schedule(1, 1, 2, 1, 1);
  std::vector<A> want = {A::None, A::None, A::Warmup, A::Record, A::RecordAndSave, A::None, A::None};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(s(int64_t(k)), want[k]) << k;
  auto forever = P::schedule(0, 0, 1);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(forever(k), A::RecordAndSave);
  EXPECT_THROW(P::schedule(1, 1, 0), ValueError);
}

TEST(Profiler, ScheduledProfilerSavesEachCycle) {
  int ready = 0;
  std::vector<size_t> step_events;
  P::Profiler prof({}, P::schedule(1, 1, 2, 2), [&](P::Profiler& p) {
    ++ready;
    size_t n = 0;
    for (const auto& e : p.result().events())
      if (e.name.rfind("ProfilerStep#", 0) == 0) ++n;
    step_events.push_back(n);
  });
  prof.start();
  for (int step = 0; step < 10; ++step) {
    Tensor x = ones({8}).exp();
    (void)x;
    prof.step();
  }
  prof.stop();
  EXPECT_EQ(ready, 2);  // two cycles of (wait 1, warmup 1, active 2)
  EXPECT_EQ(step_events, (std::vector<size_t>{2, 2}));
  // The second cycle recorded steps 6 and 7.
  int found = 0;
  for (const auto& e : prof.result().events()) found += e.name == "ProfilerStep#6" || e.name == "ProfilerStep#7";
  EXPECT_EQ(found, 2);
  EXPECT_FALSE(P::is_profiler_enabled());
}

TEST(Profiler, PlainProfilerRecordsUntilStop) {
  P::Profiler prof;
  prof.start();
  Tensor x = ones({8}).exp();
  prof.stop();
  EXPECT_EQ(named(prof.result(), "aten::exp").size(), 1u);
  EXPECT_THROW(prof.stop(), Error);
}

TEST(Profiler, ChromeTraceHasTheEvents) {
  auto r = run_profiled({.record_shapes = true, .profile_memory = true}, [&] {
    P::RecordFunction region("quote\"region");
    Tensor x = ones({3}).exp();
    (void)x;
  });
  std::string json = r->chrome_trace_json("t");
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"aten::exp\""), std::string::npos);
  EXPECT_NE(json.find("\"cat\": \"user_annotation\""), std::string::npos);
  EXPECT_NE(json.find("quote\\\"region"), std::string::npos);
  EXPECT_NE(json.find("\"[memory]\""), std::string::npos);
  EXPECT_NE(json.find("\"Input Dims\": [[3]]"), std::string::npos);
}

TEST(Profiler, DataLoaderWorkersHaveTheirOwnSpans) {
  auto ds = std::make_shared<data::TensorDataset>(std::vector<Tensor>{arange(16).reshape({8, 2})});
  data::DataLoader loader(ds, {.batch_size = 2, .num_workers = 2});
  int batches = 0;
  auto r = run_profiled({}, [&] {
    for (Value batch : loader) {
      (void)batch;
      ++batches;
    }
  });
  EXPECT_EQ(batches, 4);
  auto fetches = named(*r, "DataLoader worker#fetch");
  auto nexts = named(*r, "enumerate(DataLoader)#DataLoaderIterator::next");
  EXPECT_EQ(fetches.size(), 4u);
  EXPECT_EQ(nexts.size(), 5u);  // four batches and the end
  for (const auto* f : fetches) EXPECT_NE(f->thread, nexts[0]->thread);
}
