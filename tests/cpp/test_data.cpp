// torch.utils.data: datasets, random_split, samplers, collation and the DataLoader (ordering,
// workers, errors, seeds, iterable datasets, options).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "ember/data.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::data;

namespace {

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota_vec(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Sample i is (i as a float tensor of shape (2), i as an int); records concurrency and can sleep.
struct Numbers : Dataset {
  explicit Numbers(int64_t n, int sleep_us = 0) : n(n), sleep_us(sleep_us) {}
  int64_t size() const override { return n; }
  Value get(int64_t i) const override {
    int now = ++in_flight;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    if (sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    if (i == fail_at) {
      --in_flight;
      throw ValueError("sample " + std::to_string(i) + " is broken");
    }
    --in_flight;
    return Value::tuple({full({2}, double(i)), i});
  }
  int64_t n;
  int sleep_us;
  int64_t fail_at = -1;
  mutable std::atomic<int> in_flight{0}, max_in_flight{0};
};

std::vector<int64_t> labels_of(DataLoader& loader) {
  std::vector<int64_t> out;
  for (Value batch : loader)
    for (int64_t v : batch[1].to_tensor().tolist<int64_t>()) out.push_back(v);
  return out;
}

}  // namespace

// ---- datasets ----

TEST(Datasets, TensorDatasetRowsAndErrors) {
  auto ds = std::make_shared<TensorDataset>(std::vector<Tensor>{arange(12).reshape({6, 2}), arange(6) * 10});
  EXPECT_EQ(ds->size(), 6);
  Value s = ds->get(4);
  ASSERT_TRUE(s.is_tuple());
  EXPECT_EQ(s[0].to_tensor().tolist<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(s[1].to_tensor().item<int64_t>(), 40);
  EXPECT_EQ(ds->get(-1)[1].to_tensor().item<int64_t>(), 50);
  EXPECT_EQ(error_of([&] { ds->get(6); }), "index 6 is out of range for TensorDataset of size 6");
  EXPECT_EQ(error_of([] { TensorDataset({zeros({3}), zeros({4})}); }),
            "Size mismatch between tensors: tensor 0 has 3 rows but tensor 1 has 4");
}

TEST(Datasets, SubsetConcatMap) {
  auto base = std::make_shared<TensorDataset>(std::vector<Tensor>{arange(10)});
  auto sub = std::make_shared<Subset>(base, std::vector<int64_t>{7, 2, 5});
  EXPECT_EQ(sub->size(), 3);
  EXPECT_EQ(sub->get(1)[0].to_tensor().item<int64_t>(), 2);
  auto cat = std::make_shared<ConcatDataset>(std::vector<DatasetPtr>{sub, base});
  EXPECT_EQ(cat->size(), 13);
  EXPECT_EQ(cat->cumulative_sizes(), (std::vector<int64_t>{3, 13}));
  EXPECT_EQ(cat->get(2)[0].to_tensor().item<int64_t>(), 5);
  EXPECT_EQ(cat->get(3)[0].to_tensor().item<int64_t>(), 0);
  EXPECT_EQ(cat->get(-1)[0].to_tensor().item<int64_t>(), 9);
  EXPECT_EQ(error_of([&] { cat->get(13); }), "index 13 is out of range for ConcatDataset of size 13");
  MapDataset doubled(base, [](Value v) { return Value(v[0].to_tensor().item<int64_t>() * 2); });
  EXPECT_EQ(doubled.get(4).to_int(), 8);
}

TEST(Datasets, RandomSplitCountsAndFractions) {
  auto base = std::make_shared<TensorDataset>(std::vector<Tensor>{arange(10)});
  auto g = Generator(42);
  auto parts = random_split(base, {7, 3}, &g);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->size(), 7);
  EXPECT_EQ(parts[1]->size(), 3);
  std::vector<int64_t> all = parts[0]->indices();
  all.insert(all.end(), parts[1]->indices().begin(), parts[1]->indices().end());
  EXPECT_EQ(sorted(all), iota_vec(10));
  // The same generator seed gives the same split.
  auto g2 = Generator(42);
  EXPECT_EQ(random_split(base, {7, 3}, &g2)[1]->indices(), parts[1]->indices());
  // Fractions: floor(10 * 0.33) = 3 each, the remainder 1 goes to the first split (PyTorch 1.13).
  auto thirds = random_split(base, {0.34, 0.33, 0.33});
  EXPECT_EQ(thirds[0]->size(), 4);
  EXPECT_EQ(thirds[1]->size(), 3);
  EXPECT_EQ(thirds[2]->size(), 3);
  std::vector<int64_t> counts{6, 4};
  EXPECT_EQ(random_split(base, counts)[0]->size(), 6);
  EXPECT_EQ(error_of([&] { random_split(base, {5, 4}); }),
            "Sum of input lengths does not equal the length of the input dataset! (sum 9, dataset has 10)");
  // Lengths summing to 1 are fractions, so each must lie in [0, 1] (PyTorch's rule and message).
  EXPECT_EQ(error_of([&] { random_split(base, {1.5, -0.5}); }), "Fraction at index 0 is not between 0 and 1");
  EXPECT_EQ(error_of([&] { random_split(base, {2.5, 7.5}); }),
            "random_split: length at index 0 must be a non-negative integer or a fraction, got 2.5");
}

// ---- samplers ----

TEST(Samplers, SequentialAndRandom) {
  EXPECT_EQ(SequentialSampler(5).indices(), iota_vec(5));
  auto g = std::make_shared<Generator>(7);
  RandomSampler rs(10, {.generator = g});
  std::vector<int64_t> a = rs.indices(), b = rs.indices();
  EXPECT_EQ(sorted(a), iota_vec(10));
  EXPECT_EQ(sorted(b), iota_vec(10));
  EXPECT_NE(a, b);  // a new order every pass
  auto g2 = std::make_shared<Generator>(7);
  EXPECT_EQ(RandomSampler(10, {.generator = g2}).indices(), a);  // same seed, same first pass

  // num_samples > n without replacement: whole permutations, then part of one.
  RandomSampler more(4, {.num_samples = 10, .generator = g});
  std::vector<int64_t> m = more.indices();
  ASSERT_EQ(m.size(), 10u);
  EXPECT_EQ(sorted({m.begin(), m.begin() + 4}), iota_vec(4));
  EXPECT_EQ(sorted({m.begin() + 4, m.begin() + 8}), iota_vec(4));
  std::set<int64_t> tail(m.begin() + 8, m.end());
  EXPECT_EQ(tail.size(), 2u);

  RandomSampler repl(3, {.replacement = true, .num_samples = 1000, .generator = g});
  std::vector<int64_t> r = repl.indices();
  ASSERT_EQ(r.size(), 1000u);
  std::vector<int> hist(3);
  for (int64_t v : r) hist[size_t(v)]++;
  for (int h : hist) EXPECT_GT(h, 250);  // ~333 each
  EXPECT_EQ(error_of([] { RandomSampler(3, {.num_samples = 0}); }),
            "num_samples should be a positive integer value, but got num_samples=0");

  // Without a generator the order comes from the global generator: reseeding repeats it.
  manual_seed(3);
  std::vector<int64_t> x = RandomSampler(20).indices();
  manual_seed(3);
  EXPECT_EQ(RandomSampler(20).indices(), x);
}

TEST(Samplers, SubsetRandomAndWeighted) {
  auto g = std::make_shared<Generator>(1);
  SubsetRandomSampler s({10, 20, 30, 40}, g);
  EXPECT_EQ(sorted(s.indices()), (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(s.size(), 4);

  WeightedRandomSampler w({0.0, 1.0, 3.0, 0.0}, 4000, true, g);
  std::vector<int> hist(4);
  for (int64_t v : w.indices()) hist[size_t(v)]++;
  EXPECT_EQ(hist[0], 0);
  EXPECT_EQ(hist[3], 0);
  EXPECT_NEAR(hist[2] / 4000.0, 0.75, 0.05);
  WeightedRandomSampler nr({1.0, 1.0, 1.0, 1.0, 1.0}, 5, false, g);
  EXPECT_EQ(sorted(nr.indices()), iota_vec(5));
}

TEST(Samplers, BatchSamplerSizes) {
  auto seq = std::make_shared<SequentialSampler>(10);
  BatchSampler keep(seq, 3, false), drop(seq, 3, true);
  EXPECT_EQ(keep.size(), 4);
  EXPECT_EQ(drop.size(), 3);
  auto b = keep.batches();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[3], (std::vector<int64_t>{9}));
  EXPECT_EQ(drop.batches().back(), (std::vector<int64_t>{6, 7, 8}));
  EXPECT_EQ(error_of([&] { BatchSampler(seq, 0, false); }),
            "batch_size should be a positive integer value, but got batch_size=0");
}

TEST(Samplers, DistributedShardsAsPyTorch) {
  // 10 samples on 3 ranks: padded to 12 by repeating the start, then strided by rank.
  std::vector<std::vector<int64_t>> expect{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  for (int64_t r = 0; r < 3; ++r) {
    DistributedSampler s(10, {.num_replicas = 3, .rank = r, .shuffle = false});
    EXPECT_EQ(s.size(), 4);
    EXPECT_EQ(s.total_size(), 12);
    EXPECT_EQ(s.indices(), expect[size_t(r)]);
  }
  // drop_last drops the tail instead: 3 each.
  DistributedSampler d(10, {.num_replicas = 3, .rank = 1, .shuffle = false, .drop_last = true});
  EXPECT_EQ(d.indices(), (std::vector<int64_t>{1, 4, 7}));
  // Heavy padding: 2 samples on 5 ranks.
  DistributedSampler p(2, {.num_replicas = 5, .rank = 4, .shuffle = false});
  EXPECT_EQ(p.indices(), (std::vector<int64_t>{0}));
  // Shuffled: the ranks together cover every sample once (plus padding); set_epoch changes the
  // order identically on every rank.
  std::vector<int64_t> all;
  std::vector<std::vector<int64_t>> e0, e1;
  for (int64_t r = 0; r < 4; ++r) {
    DistributedSampler s(100, {.num_replicas = 4, .rank = r, .seed = 5});
    e0.push_back(s.indices());
    all.insert(all.end(), e0.back().begin(), e0.back().end());
    s.set_epoch(1);
    e1.push_back(s.indices());
  }
  EXPECT_EQ(sorted(all), iota_vec(100));
  EXPECT_NE(e0, e1);
  DistributedSampler again(100, {.num_replicas = 4, .rank = 2, .seed = 5});
  again.set_epoch(1);
  EXPECT_EQ(again.indices(), e1[2]);
  EXPECT_EQ(error_of([] { DistributedSampler(10, {.num_replicas = 2, .rank = 2}); }),
            "Invalid rank 2, rank should be in the interval [0, 1]");
}

// ---- collation ----

TEST(Collate, DefaultCollateStructures) {
  std::vector<Value> samples;
  for (int i = 0; i < 3; ++i) {
    Value d = Value::dict();
    d["x"] = full({2}, double(i));
    d["y"] = i;
    d["w"] = 0.5 * i;
    d["name"] = "s" + std::to_string(i);
    d["pair"] = Value::tuple({i, Value::list({true, false})});
    samples.push_back(d);
  }
  Value b = default_collate(samples);
  EXPECT_EQ(b["x"].to_tensor().sizes(), (Shape{3, 2}));
  EXPECT_EQ(b["y"].to_tensor().dtype(), kInt64);
  EXPECT_EQ(b["y"].to_tensor().tolist<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(b["w"].to_tensor().dtype(), kFloat64);
  EXPECT_EQ(b["name"].repr(), "['s0', 's1', 's2']");
  ASSERT_TRUE(b["pair"].is_list());  // tuples collate to lists, as in PyTorch
  EXPECT_EQ(b["pair"][1][0].to_tensor().dtype(), kBool);
  EXPECT_EQ(b["pair"][1][1].to_tensor().tolist<int64_t>(), (std::vector<int64_t>{0, 0, 0}));

  EXPECT_EQ(error_of([] { default_collate({Value(zeros({3})), Value(zeros({4}))}); }).find("stack expects"), 0u);
  EXPECT_EQ(error_of([] { default_collate({Value::list({1, 2}), Value::list({1})}); }),
            "each element in list of batch should be of equal size");
  EXPECT_EQ(error_of([] { default_collate({Value(), Value()}); }),
            "default_collate: batch must contain tensors, numbers, strings, dicts or lists; found None");
  EXPECT_EQ(error_of([] { default_collate({Value(1), Value("a")}); }),
            "default_collate: every sample must have the same structure, but got a int and a str");
}

// ---- DataLoader ----

TEST(DataLoader, BatchesLengthAndDropLast) {
  auto ds = std::make_shared<Numbers>(10);
  DataLoader keep(ds, {.batch_size = 4});
  EXPECT_EQ(keep.size(), 3);
  std::vector<Shape> shapes;
  for (Value batch : keep) shapes.push_back(batch[0].to_tensor().sizes());
  EXPECT_EQ(shapes, (std::vector<Shape>{{4, 2}, {4, 2}, {2, 2}}));
  EXPECT_EQ(labels_of(keep), iota_vec(10));
  DataLoader drop(ds, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(drop.size(), 2);
  EXPECT_EQ(labels_of(drop), iota_vec(8));
  // No automatic batching: samples one by one, unconverted.
  DataLoader single(ds, {.batch_size = std::nullopt});
  EXPECT_EQ(single.size(), 10);
  auto it = single.iter();
  Value first = *it.next();
  EXPECT_EQ(first[1].to_int(), 0);
  EXPECT_EQ(it.batches_remaining(), 9);
}

TEST(DataLoader, ShuffleIsSeededAndCoversAll) {
  auto ds = std::make_shared<Numbers>(50);
  auto g = std::make_shared<Generator>(11);
  DataLoader a(ds, {.batch_size = 8, .shuffle = true, .generator = g});
  std::vector<int64_t> e1 = labels_of(a), e2 = labels_of(a);
  EXPECT_EQ(sorted(e1), iota_vec(50));
  EXPECT_NE(e1, e2);
  auto g2 = std::make_shared<Generator>(11);
  DataLoader b(ds, {.batch_size = 8, .shuffle = true, .generator = g2});
  EXPECT_EQ(labels_of(b), e1);
}

TEST(DataLoader, CustomSamplerBatchSamplerCollate) {
  auto ds = std::make_shared<Numbers>(6);
  DataLoader with_sampler(ds, {.batch_size = 2, .sampler = std::make_shared<SubsetRandomSampler>(
                                                      std::vector<int64_t>{5, 1}, std::make_shared<Generator>(0))});
  EXPECT_EQ(sorted(labels_of(with_sampler)), (std::vector<int64_t>{1, 5}));

  struct Pairs : BatchSampler {
    std::vector<std::vector<int64_t>> batches() override { return {{5, 4}, {0}, {3, 2, 1}}; }
    int64_t size() const override { return 3; }
  };
  DataLoader custom(ds, {.batch_sampler = std::make_shared<Pairs>()});
  EXPECT_EQ(custom.size(), 3);
  EXPECT_EQ(labels_of(custom), (std::vector<int64_t>{5, 4, 0, 3, 2, 1}));

  DataLoader summed(ds, {.batch_size = 3, .collate_fn = [](std::vector<Value> samples) {
                           int64_t s = 0;
                           for (const Value& v : samples) s += v[1].to_int();
                           return Value(s);
                         }});
  std::vector<int64_t> sums;
  for (Value b : summed) sums.push_back(b.to_int());
  EXPECT_EQ(sums, (std::vector<int64_t>{3, 12}));
}

TEST(DataLoader, OptionErrorsAsPyTorch) {
  auto ds = std::make_shared<Numbers>(4);
  auto seq = std::make_shared<SequentialSampler>(4);
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.num_workers = -1}); }),
            "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.");
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.shuffle = true, .sampler = seq}); }),
            "sampler option is mutually exclusive with shuffle");
  EXPECT_EQ(error_of([&] {
              DataLoader(ds, {.batch_size = 2, .batch_sampler = std::make_shared<BatchSampler>(seq, 2, false)});
            }),
            "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last");
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.batch_size = 0}); }),
            "batch_size should be a positive integer value, but got batch_size=0");
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.batch_size = std::nullopt, .drop_last = true}); }),
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last");
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.persistent_workers = true}); }),
            "persistent_workers option needs num_workers > 0");
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.prefetch_factor = 4}); }).find("prefetch_factor option could only"), 0u);
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.timeout = -1}); }), "timeout option should be non-negative");
}

TEST(DataLoader, WorkersKeepOrder) {
  // Samples take uneven time (the sleep makes later batches finish first), yet batches arrive in
  // sampler order, identical to the single-threaded loader.
  struct Uneven : Dataset {
    int64_t size() const override { return 40; }
    Value get(int64_t i) const override {
      std::this_thread::sleep_for(std::chrono::microseconds((i % 7) * 300));
      return Value::tuple({full({1}, double(i)), i});
    }
  };
  auto ds = std::make_shared<Uneven>();
  for (int workers : {1, 2, 3}) {
    DataLoader loader(ds, {.batch_size = 3, .num_workers = workers, .prefetch_factor = 3});
    EXPECT_EQ(labels_of(loader), iota_vec(40)) << workers << " workers";
    EXPECT_EQ(labels_of(loader), iota_vec(40)) << "second pass, " << workers << " workers";
  }
  auto g = std::make_shared<Generator>(9), g2 = std::make_shared<Generator>(9);
  DataLoader inline_loader(ds, {.batch_size = 4, .shuffle = true, .generator = g});
  DataLoader threaded(ds, {.batch_size = 4, .shuffle = true, .num_workers = 2, .generator = g2});
  EXPECT_EQ(labels_of(threaded), labels_of(inline_loader));
}

TEST(DataLoader, WorkersLoadInParallel) {
  // Two workers have two samples in flight at once: the loading really overlaps. (Timings are
  // in bench/, not here; concurrency is what a test can check without flaking.)
  auto ds = std::make_shared<Numbers>(16, 20000);
  DataLoader loader(ds, {.batch_size = 2, .num_workers = 2});
  EXPECT_EQ(labels_of(loader), iota_vec(16));
  EXPECT_EQ(ds->max_in_flight.load(), 2);
  auto ds0 = std::make_shared<Numbers>(8, 1000);
  DataLoader inline_loader(ds0, {.batch_size = 2});
  labels_of(inline_loader);
  EXPECT_EQ(ds0->max_in_flight.load(), 1);
}

TEST(DataLoader, WorkerErrorNamesWorkerAndSample) {
  auto ds = std::make_shared<Numbers>(20);
  ds->fail_at = 13;
  DataLoader loader(ds, {.batch_size = 4, .num_workers = 2});
  auto it = loader.iter();
  std::vector<int64_t> seen;
  try {
    while (auto b = it.next())
      for (int64_t v : (*b)[1].to_tensor().tolist<int64_t>()) seen.push_back(v);
    FAIL() << "no error";
  } catch (const DataLoaderWorkerError& e) {
    // Batch 3 (samples 12..15) went to worker 3 % 2 = 1.
    EXPECT_EQ(std::string(e.what()),
              "Caught ValueError in DataLoader worker 1 while loading sample 13 (batch 3): sample 13 is broken");
    EXPECT_EQ(e.worker_id(), 1);
    EXPECT_EQ(e.sample_index(), 13);
    EXPECT_EQ(e.batch_index(), 3);
    EXPECT_THROW(std::rethrow_exception(e.original()), ValueError);
  }
  EXPECT_EQ(seen, iota_vec(12));  // the batches before the broken one arrived, in order
  // The pass goes on after the error, as PyTorch's iterator does.
  auto rest = it.next();
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ((*rest)[1].to_tensor().tolist<int64_t>(), (std::vector<int64_t>{16, 17, 18, 19}));
  // Without workers the original exception comes through unchanged.
  DataLoader inline_loader(ds, {.batch_size = 4});
  EXPECT_THROW(labels_of(inline_loader), ValueError);
  // A failing collate_fn is reported as such.
  DataLoader bad_collate(std::make_shared<Numbers>(4), {.batch_size = 2, .num_workers = 1,
                                                        .collate_fn = [](std::vector<Value>) -> Value {
                                                          throw TypeError("cannot collate");
                                                        }});
  EXPECT_EQ(error_of([&] { labels_of(bad_collate); }),
            "Caught TypeError in DataLoader worker 0 while collating batch 0: cannot collate");
}

TEST(DataLoader, WorkerInfoSeedsAndInitFn) {
  // Each worker's default generator is seeded base_seed + id: a seeded loader draws the same
  // random numbers on every run, different numbers in different workers.
  struct Noise : Dataset {
    int64_t size() const override { return 8; }
    Value get(int64_t i) const override {
      auto info = get_worker_info();
      return Value::tuple({rand({3}), info ? info->id : -1, int64_t(info ? info->seed : 0)});
    }
  };
  auto ds = std::make_shared<Noise>();
  auto run = [&](uint64_t seed) {
    std::atomic<int> inits{0};
    DataLoader loader(ds, {.batch_size = 2, .num_workers = 2,
                           .worker_init_fn = [&](int id) {
                             EXPECT_TRUE(get_worker_info().has_value());
                             EXPECT_EQ(get_worker_info()->id, id);
                             ++inits;
                           },
                           .generator = std::make_shared<Generator>(seed)});
    std::vector<Value> out;
    for (Value b : loader) out.push_back(b);
    EXPECT_EQ(inits.load(), 2);
    return out;
  };
  std::vector<Value> a = run(5), b = run(5), c = run(6);
  ASSERT_EQ(a.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i][0].to_tensor().equal(b[i][0].to_tensor()));
    EXPECT_EQ(a[i][1].to_tensor().tolist<int64_t>()[0], int64_t(i % 2));  // batch i on worker i % 2
  }
  EXPECT_FALSE(a[0][0].to_tensor().equal(c[0][0].to_tensor()));
  EXPECT_FALSE(a[0][0].to_tensor().equal(a[1][0].to_tensor()));
  int64_t seed0 = a[0][2].to_tensor().tolist<int64_t>()[0], seed1 = a[1][2].to_tensor().tolist<int64_t>()[0];
  EXPECT_EQ(seed1, seed0 + 1);
  EXPECT_FALSE(get_worker_info().has_value());  // not in a worker
  // An exception in worker_init_fn reaches the caller too.
  DataLoader bad(ds, {.batch_size = 2, .num_workers = 1, .worker_init_fn = [](int) { throw Error("no init"); }});
  EXPECT_EQ(error_of([&] { for (Value v : bad) (void)v; }),
            "Caught Error in DataLoader worker 0 while running worker_init_fn: no init");
}

namespace {
// Yields start..end-1, split between workers as PyTorch's documentation shows for
// IterableDataset: each worker takes an interleaved share.
struct Range : IterableDataset {
  Range(int64_t start, int64_t end) : start(start), end(end) {}
  struct It : SampleIterator {
    int64_t next_value, end, step;
    std::optional<Value> next() override {
      if (next_value >= end) return std::nullopt;
      int64_t v = next_value;
      next_value += step;
      return Value(v);
    }
  };
  std::unique_ptr<SampleIterator> iter() const override {
    auto it = std::make_unique<It>();
    auto info = get_worker_info();
    int64_t id = info ? info->id : 0, n = info ? info->num_workers : 1;
    it->next_value = start + id;
    it->end = end;
    it->step = n;
    return it;
  }
  std::optional<int64_t> size() const override { return end - start; }
  int64_t start, end;
};
}  // namespace

TEST(DataLoader, IterableDatasetWithAndWithoutWorkers) {
  auto ds = std::make_shared<Range>(0, 10);
  DataLoader plain(ds, {.batch_size = 4});
  EXPECT_EQ(plain.size(), 3);
  std::vector<std::vector<int64_t>> batches;
  for (Value b : plain) batches.push_back(b.to_tensor().tolist<int64_t>());
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));

  // Two workers: worker 0 streams 0,2,4,6,8 and worker 1 streams 1,3,5,7,9; batches alternate.
  DataLoader two(ds, {.batch_size = 2, .num_workers = 2});
  batches.clear();
  for (Value b : two) batches.push_back(b.to_tensor().tolist<int64_t>());
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8}, {9}}));
  // drop_last drops each worker's short batch.
  DataLoader dropped(ds, {.batch_size = 2, .num_workers = 2, .drop_last = true});
  int n = 0;
  for (Value b : dropped) n += int(b.to_tensor().numel());
  EXPECT_EQ(n, 8);
  EXPECT_EQ(error_of([&] { DataLoader(ds, {.shuffle = true}); }),
            "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True");
  struct Endless : IterableDataset {
    std::unique_ptr<SampleIterator> iter() const override { return nullptr; }
  };
  DataLoader no_len(std::make_shared<Endless>(), {});
  EXPECT_EQ(error_of([&] { no_len.size(); }), "object of type 'IterableDataset' has no len()");
}

TEST(DataLoader, PersistentWorkersAcrossPasses) {
  std::atomic<int> inits{0};
  auto ds = std::make_shared<Numbers>(12);
  DataLoader loader(ds, {.batch_size = 5, .num_workers = 2, .worker_init_fn = [&](int) { ++inits; },
                         .persistent_workers = true});
  for (int epoch = 0; epoch < 3; ++epoch) EXPECT_EQ(labels_of(loader), iota_vec(12));
  EXPECT_EQ(inits.load(), 2);  // the same two workers served every pass
  // A pass abandoned halfway does not leak its batches into the next.
  {
    auto it = loader.iter();
    it.next();
  }
  EXPECT_EQ(labels_of(loader), iota_vec(12));
  // Persistent workers are reseeded every pass: the second pass draws what a fresh pool would.
  struct Noise : Dataset {
    int64_t size() const override { return 6; }
    Value get(int64_t) const override { return Value::tuple({rand({2}), 0}); }
  };
  auto noise = std::make_shared<Noise>();
  DataLoader kept(noise, {.batch_size = 2, .num_workers = 2, .persistent_workers = true,
                          .generator = std::make_shared<Generator>(4)});
  DataLoader fresh(noise, {.batch_size = 2, .num_workers = 2, .generator = std::make_shared<Generator>(4)});
  for (int pass = 0; pass < 2; ++pass) {
    auto a = kept.iter(), b = fresh.iter();
    while (auto x = a.next()) EXPECT_TRUE((*x)[0].to_tensor().equal((*b.next())[0].to_tensor())) << "pass " << pass;
  }
  auto rds = std::make_shared<Range>(0, 6);
  DataLoader stream(rds, {.batch_size = 2, .num_workers = 2, .persistent_workers = true});
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t total = 0;
    for (Value b : stream) total += b.to_tensor().sum().item<int64_t>();
    EXPECT_EQ(total, 15);
  }
}

TEST(DataLoader, TimeoutNamesSeconds) {
  auto ds = std::make_shared<Numbers>(2, 400000);
  DataLoader loader(ds, {.batch_size = 1, .num_workers = 1, .timeout = 0.05});
  EXPECT_EQ(error_of([&] { labels_of(loader); }), "DataLoader timed out after 0.05 seconds");
}
