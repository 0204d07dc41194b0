// The stores and the Gloo process group. Multi-process cases start this binary again (a fresh
// process per rank, as a launcher would: no fork after OpenMP) with --gtest_filter on the
// worker test and the rank in the environment; the parent serves the TCPStore and checks every
// worker's exit status.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"

#ifdef EMBER_DISTRIBUTED
#include "ember/distributed/device_mesh.h"
#include "ember/distributed/errors.h"
#include "ember/distributed/fsdp.h"
#include "ember/distributed/functional.h"
#include "ember/distributed/pipeline.h"
#include "ember/distributed/process_group.h"
#include "ember/distributed/reducer.h"
#include "ember/distributed/store.h"
#include "ember/distributed/tensor_parallel.h"
#include "ember/nn.h"
#include "ember/optim.h"

extern char** environ;

namespace ember::distributed {
namespace {

Bytes b(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string s(const Bytes& v) { return std::string(v.begin(), v.end()); }

void exercise_store(Store& store) {
  store.set("a", b("1"));
  EXPECT_EQ(s(store.get("a")), "1");
  EXPECT_EQ(store.add("n", 2), 2);
  EXPECT_EQ(store.add("n", 3), 5);
  EXPECT_EQ(s(store.get("n")), "5");  // counters are decimal text, as torch's
  EXPECT_TRUE(store.check({"a", "n"}));
  EXPECT_FALSE(store.check({"a", "missing"}));
  EXPECT_EQ(s(store.compare_set("c", b(""), b("x"))), "x");  // absent + empty expected: set
  EXPECT_EQ(s(store.compare_set("c", b("y"), b("z"))), "x");  // mismatch: unchanged
  EXPECT_EQ(s(store.compare_set("c", b("x"), b("z"))), "z");
  EXPECT_TRUE(store.delete_key("c"));
  EXPECT_FALSE(store.delete_key("c"));
  store.set("t", b("text"));
  EXPECT_THROW(store.add("t", 1), ValueError);  // add on a value that is no integer
  try {
    store.wait({"never"}, Millis(200));
    FAIL() << "wait did not time out";
  } catch (const DistStoreError& e) {
    EXPECT_NE(std::string(e.what()).find("'never'"), std::string::npos) << e.what();
  }
  store.set("after_timeout", b("ok"));  // the store still works after a timed-out wait
  EXPECT_EQ(s(store.get("after_timeout")), "ok");
}

TEST(DistributedStore, TCPStoreServesClients) {
  TCPStore master("127.0.0.1", 0, true, Millis(5000));
  ASSERT_GT(master.port(), 0);
  exercise_store(master);
  TCPStore client("127.0.0.1", master.port(), false, Millis(5000));
  EXPECT_EQ(s(client.get("a")), "1");
  // a get that waits for another client's set
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    master.set("late", b("here"));
  });
  EXPECT_EQ(s(client.get("late")), "here");
  later.join();
  EXPECT_GE(client.num_keys(), 4);
}

TEST(DistributedStore, FileStoreAndPrefixStore) {
  const auto path = std::filesystem::temp_directory_path() / ("ember_filestore_" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  {
    FileStore fs(path.string(), 1, Millis(5000));
    exercise_store(fs);
    FileStore other(path.string(), 1, Millis(5000));  // a second process's view of the file
    EXPECT_EQ(s(other.get("n")), "5");
    auto base = std::make_shared<FileStore>(path.string(), 1, Millis(5000));
    PrefixStore p("group1", base);
    p.set("k", b("v"));
    EXPECT_EQ(s(base->get("group1/k")), "v");
    EXPECT_FALSE(p.check({"a"}));
  }
  std::filesystem::remove(path);
}

TEST(DistributedStore, ClientWithoutServerTimesOut) {
  EXPECT_THROW(TCPStore("127.0.0.1", 1, false, Millis(300)), DistNetworkError);
}

// ---------------------------------------------------------------- multi-process
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

// Rank `rank`'s part of the collective checks (world size n).
void run_collectives(ProcessGroup& pg) {
  const int r = pg.rank(), n = pg.size();
  // all_reduce, every op, several dtypes
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt32, kBFloat16}) {
    Tensor t = full({5}, r + 1, {.dtype = dt});
    pg.all_reduce(t, ReduceOp::SUM)->wait();
    EXPECT_EQ(t.to(kFloat64).sum().item<double>(), 5.0 * n * (n + 1) / 2) << dtype_name(dt);
    t = full({3}, r + 1, {.dtype = dt});
    pg.all_reduce(t, ReduceOp::MAX)->wait();
    EXPECT_EQ(t.to(kFloat64).max().item<double>(), n);
    t = full({3}, r + 1, {.dtype = dt});
    pg.all_reduce(t, ReduceOp::MIN)->wait();
    EXPECT_EQ(t.to(kFloat64).min().item<double>(), 1);
    t = full({3}, r + 1, {.dtype = dt});
    pg.all_reduce(t, ReduceOp::PRODUCT)->wait();
    double fact = 1;
    for (int i = 1; i <= n; ++i) fact *= i;
    EXPECT_EQ(t.to(kFloat64).max().item<double>(), fact);
  }
  Tensor avg = full({4}, double(r), {.dtype = kFloat32});
  pg.all_reduce(avg, ReduceOp::AVG)->wait();
  EXPECT_FLOAT_EQ(avg.max().item<float>(), (n - 1) / 2.0f);
  EXPECT_THROW(pg.all_reduce(full({2}, 1, {.dtype = kInt64}), ReduceOp::AVG), TypeError);
  // a large tensor (Gloo splits it into segments) and a strided one (copied and written back)
  Tensor big = ones({3 * 1024 * 1024 + 7});
  pg.all_reduce(big, ReduceOp::SUM)->wait();
  EXPECT_EQ(big.min().item<float>(), n);
  Tensor strided = full({4, 6}, r + 1, {.dtype = kFloat32}).t();
  pg.all_reduce(strided, ReduceOp::SUM)->wait();
  EXPECT_EQ(strided.min().item<float>(), n * (n + 1) / 2);
  // broadcast and reduce from the last rank
  Tensor bc = full({6}, r == n - 1 ? 42 : -1, {.dtype = kInt64});
  pg.broadcast(bc, n - 1)->wait();
  EXPECT_EQ(bc.min().item<int64_t>(), 42);
  Tensor red = full({3}, r + 1, {.dtype = kFloat64});
  pg.reduce(red, n - 1, ReduceOp::SUM)->wait();
  if (r == n - 1) EXPECT_EQ(red.max().item<double>(), n * (n + 1) / 2);
  // all_gather, gather, scatter, reduce_scatter, all_to_all
  Tensor mine = arange(3, {.dtype = kFloat32}).add(Scalar(10 * r));
  Tensor gathered = zeros({n * 3});
  pg.all_gather_into(gathered, mine)->wait();
  for (int i = 0; i < n; ++i) EXPECT_EQ(gathered[i * 3 + 2].item<float>(), 10 * i + 2);
  Tensor g0 = zeros({n * 3});
  pg.gather_into(g0, mine, 0)->wait();
  if (r == 0)
    for (int i = 0; i < n; ++i) EXPECT_EQ(g0[i * 3].item<float>(), 10 * i);
  Tensor all = arange(n * 2, {.dtype = kFloat32});
  Tensor piece = zeros({2});
  pg.scatter_from(piece, all, 0)->wait();
  EXPECT_EQ(piece[1].item<float>(), 2 * r + 1);
  Tensor rs_in = ones({n * 2}).mul(Scalar(r + 1));
  Tensor rs_out = zeros({2});
  pg.reduce_scatter_from(rs_out, rs_in, ReduceOp::SUM)->wait();
  EXPECT_EQ(rs_out[0].item<float>(), n * (n + 1) / 2);
  Tensor a2a_in = arange(n, {.dtype = kInt64}).add(Scalar(100 * r));
  Tensor a2a_out = zeros({n}, {.dtype = kInt64});
  pg.all_to_all(a2a_out, a2a_in)->wait();
  for (int i = 0; i < n; ++i) EXPECT_EQ(a2a_out[i].item<int64_t>(), 100 * i + r);
  // async: several in flight, then waited in order
  std::vector<std::shared_ptr<Work>> works;
  std::vector<Tensor> ts;
  for (int i = 0; i < 8; ++i) {
    ts.push_back(full({1000}, i, {.dtype = kFloat32}));
    works.push_back(pg.all_reduce(ts.back(), ReduceOp::SUM));
  }
  for (int i = 0; i < 8; ++i) {
    works[size_t(i)]->wait();
    EXPECT_EQ(ts[size_t(i)][0].item<float>(), i * n);
  }
  // send / recv around a ring
  Tensor out = full({4}, r, {.dtype = kFloat32}), in = zeros({4});
  auto s = pg.send(out, (r + 1) % n, 7);
  auto v = pg.recv(in, (r + n - 1) % n, 7);
  v->wait();
  s->wait();
  EXPECT_EQ(in[0].item<float>(), (r + n - 1) % n);
  pg.barrier()->wait();
}

std::shared_ptr<nn::Sequential> small_net(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(nn::make<nn::Linear>(6, 12), nn::make<nn::ReLU>(), nn::make<nn::Linear>(12, 3));
}

// DDP from C++ equals one process on the concatenated batch; no_sync accumulates.
void run_ddp(const std::shared_ptr<ProcessGroup>& pg) {
  const int r = pg->rank(), n = pg->size();
  manual_seed(99);
  Tensor data = randn({4 * n, 6}), target = randn({4 * n, 3});
  Tensor mine = data.narrow(0, 4 * r, 4), mine_t = target.narrow(0, 4 * r, 4);
  DistributedDataParallel ddp(small_net(uint64_t(r) + 1), pg, {.reducer = {.bucket_cap_mb = 0.0002}});
  EXPECT_GE(ddp.reducer().bucket_names().size(), 2u);
  auto ref = small_net(1);  // rank 0's initialisation
  const auto start_a = ddp.module().parameters(), start_b = ref->parameters();
  for (size_t i = 0; i < start_a.size(); ++i)
    EXPECT_TRUE(start_a[i].equal(start_b[i])) << "parameter " << i << " was not broadcast";
  optim::SGD opt(ddp.module().parameters(), {.lr = 0.1});
  optim::SGD ref_opt(ref->parameters(), {.lr = 0.1});
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    nn::functional::mse_loss(ddp(mine), mine_t).backward();
    opt.step();
    ref_opt.zero_grad();
    nn::functional::mse_loss(ref->forward(data), target).backward();
    ref_opt.step();
  }
  auto a = ddp.module().parameters(), b = ref->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].allclose(b[i], 1e-5, 1e-5)) << "parameter " << i;
  opt.zero_grad();
  ref_opt.zero_grad();
  {
    auto guard = ddp.no_sync();
    nn::functional::mse_loss(ddp(mine), mine_t).backward();
  }
  nn::functional::mse_loss(ddp(mine * 2), mine_t).backward();
  nn::functional::mse_loss(ref->forward(data), target).backward();
  nn::functional::mse_loss(ref->forward(data * 2), target).backward();
  a = ddp.module().parameters();
  b = ref->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].grad().allclose(b[i].grad(), 1e-5, 1e-5)) << "no_sync " << i;
}

// FSDP from C++: a Sequential with a unit per Linear (3 ranks, so the flat parameters need
// padding) trains as one process on the whole batch, for each sharding strategy; the shards hold
// 1/world of the parameters; state_dict is the plain model's, and load_state_dict takes it back.
void run_fsdp(const std::shared_ptr<ProcessGroup>& pg) {
  const int r = pg->rank(), n = pg->size();
  manual_seed(99);
  Tensor data = randn({4 * n, 6}), target = randn({4 * n, 3});
  Tensor mine = data.narrow(0, 4 * r, 4), mine_t = target.narrow(0, 4 * r, 4);
  for (auto strategy : {ShardingStrategy::FULL_SHARD, ShardingStrategy::SHARD_GRAD_OP, ShardingStrategy::NO_SHARD}) {
    SCOPED_TRACE(sharding_strategy_name(strategy));
    FullyShardedDataParallel fsdp(small_net(1), pg, {.flat = {.strategy = strategy}, .wrap_children = true});
    EXPECT_EQ(fsdp.num_units(), 2u);  // the two Linears; ReLU has no parameters
    auto ref = small_net(1);
    int64_t shard = 0;
    for (const auto& p : fsdp.parameters()) shard += p.numel();
    if (strategy != ShardingStrategy::NO_SHARD) EXPECT_LE(shard, ref->num_parameters() / n + 2 * n);
    optim::AdamW opt(fsdp.parameters(), {.lr = 0.01});
    optim::AdamW ref_opt(ref->parameters(), {.lr = 0.01});
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      nn::functional::mse_loss(fsdp(mine), mine_t).backward();
      Tensor norm = fsdp.clip_grad_norm_(0.05);
      opt.step();
      ref_opt.zero_grad();
      nn::functional::mse_loss(ref->forward(data), target).backward();
      Tensor ref_norm = nn::utils::clip_grad_norm_(ref->parameters(), 0.05);
      ref_opt.step();
      EXPECT_NEAR(norm.item<double>(), ref_norm.item<double>(), 1e-5);
    }
    auto got = fsdp.state_dict(), want = ref->state_dict();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i].first);
      EXPECT_TRUE(got[i].second.allclose(want[i].second, 1e-5, 1e-5)) << got[i].first;
    }
    if (strategy == ShardingStrategy::FULL_SHARD) {  // a parameter read outside forward raises
      EXPECT_THROW(dynamic_cast<nn::Sequential&>(fsdp.module()).at<nn::Linear>(0).weight.sum(), Error);
    }
    FullyShardedDataParallel other(small_net(5), pg, {.flat = {.strategy = strategy}, .wrap_children = true});
    other.load_state_dict(want);
    auto back = other.state_dict();
    for (size_t i = 0; i < back.size(); ++i) EXPECT_TRUE(back[i].second.equal(want[i].second)) << back[i].first;
  }
}

// Distributed checkpoints from C++: 3 ranks train FSDP 2 steps on their thirds of a 12-row batch
// and save sharded; 2 ranks load that into a differently initialised FSDP model. Both must hold
// one process's parameters after 2 steps on the whole batch.
void run_checkpoint(const std::shared_ptr<ProcessGroup>& pg, bool saving) {
  const int r = pg->rank(), n = pg->size();
  const std::string dir = std::string(std::getenv("EMBER_TEST_DIR")) + "/ckpt";
  manual_seed(99);
  Tensor data = randn({12, 6}), target = randn({12, 3});
  auto ref = small_net(1);
  optim::AdamW ref_opt(ref->parameters(), {.lr = 0.01});
  for (int step = 0; step < 2; ++step) {
    ref_opt.zero_grad();
    nn::functional::mse_loss(ref->forward(data), target).backward();
    ref_opt.step();
  }
  auto check = [&](const FullyShardedDataParallel& fsdp) {
    auto got = fsdp.state_dict(), want = ref->state_dict();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].second.allclose(want[i].second, 1e-5, 1e-5)) << got[i].first;
  };
  if (saving) {
    FullyShardedDataParallel fsdp(small_net(1), pg, {.wrap_children = true});
    optim::AdamW opt(fsdp.parameters(), {.lr = 0.01});
    const int64_t rows = 12 / n;
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      nn::functional::mse_loss(fsdp(data.narrow(0, r * rows, rows)), target.narrow(0, r * rows, rows)).backward();
      opt.step();
    }
    check(fsdp);
    auto state = fsdp.sharded_state_dict();
    EXPECT_EQ(state[0].second.local.size(0), 12 / n);  // 0.weight [12, 6]: this rank's rows
    checkpoint::save(state, dir, *pg);
    return;
  }
  FullyShardedDataParallel fsdp(small_net(5), pg, {.wrap_children = true});
  auto state = fsdp.sharded_state_dict();
  checkpoint::load(state, dir);
  fsdp.load_sharded_state_dict(state);
  check(fsdp);
  auto bad = fsdp.sharded_state_dict();
  bad[0].second.global_shape[0] += 1;
  EXPECT_THROW(checkpoint::load(bad, dir), Error);
}

// A 2 x 2 ("dp", "tp") mesh from C++: column/row-parallel Linears over "tp" inside FSDP over
// "dp", each dp pair on its half of the batch: every rank's pieces equal its slices of one
// process's training.
void run_mesh_2d(const std::shared_ptr<Store>& store, int rank) {
  namespace tp = ember::distributed::tensor_parallel;
  DeviceMesh mesh(store, rank, {2, 2}, {"dp", "tp"}, "gloo", {.timeout = Millis(30000), .hostname = "127.0.0.1"});
  EXPECT_EQ(mesh.coordinate(), (std::vector<int64_t>{rank / 2, rank % 2}));
  EXPECT_EQ(mesh.group("tp")->size(), 2);
  const int dp = mesh.local_rank(0), t = mesh.local_rank(1);
  manual_seed(99);
  Tensor data = randn({8, 6}), target = randn({8, 3});
  auto ref = small_net(1);
  auto& l1 = ref->at<nn::Linear>(0);
  auto& l2 = ref->at<nn::Linear>(2);
  auto model = std::make_shared<nn::Sequential>(tp::ColumnParallelLinear::from(l1, mesh.group("tp")),
                                                nn::make<nn::ReLU>(), tp::RowParallelLinear::from(l2, mesh.group("tp")));
  FullyShardedDataParallel fsdp(model, mesh.group("dp"), {.wrap_children = true});
  optim::AdamW opt(fsdp.parameters(), {.lr = 0.01});
  optim::AdamW ref_opt(ref->parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    nn::functional::mse_loss(fsdp(data.narrow(0, dp * 4, 4)), target.narrow(0, dp * 4, 4)).backward();
    opt.step();
    ref_opt.zero_grad();
    nn::functional::mse_loss(ref->forward(data), target).backward();
    ref_opt.step();
  }
  auto got = fsdp.state_dict();  // whole over "dp", this rank's "tp" pieces
  std::map<std::string, Tensor> want{{"0.weight", l1.weight.narrow(0, t * 6, 6)}, {"0.bias", l1.bias.narrow(0, t * 6, 6)},
                                     {"2.weight", l2.weight.narrow(1, t * 6, 6)}, {"2.bias", l2.bias}};
  ASSERT_EQ(got.size(), want.size());
  for (auto& [k, v] : got) EXPECT_TRUE(v.allclose(want.at(k), 1e-5, 1e-5)) << k;
}

// Tensor parallelism from C++: Linear(6, 12) -> ReLU -> Linear(12, 3) as a column-parallel and a
// row-parallel layer, every rank on the same batch, trains as one process; the gradients are the
// slices of one process's; gather_output / !input_is_parallel give the whole layers' outputs.
void run_tensor_parallel(const std::shared_ptr<ProcessGroup>& pg) {
  namespace tp = ember::distributed::tensor_parallel;
  const int r = pg->rank(), n = pg->size();
  manual_seed(99);
  Tensor data = randn({8, 6}), target = randn({8, 3});
  auto ref = small_net(1);
  auto& l1 = ref->at<nn::Linear>(0);
  auto& l2 = ref->at<nn::Linear>(2);
  auto fc1 = tp::ColumnParallelLinear::from(l1, pg);
  auto fc2 = tp::RowParallelLinear::from(l2, pg);
  std::vector<Tensor> params{fc1->weight, fc1->bias, fc2->weight, fc2->bias};
  optim::SGD opt(params, {.lr = 0.1});
  optim::SGD ref_opt(ref->parameters(), {.lr = 0.1});
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    nn::functional::mse_loss(fc2->forward(fc1->forward(data).relu()), target).backward();
    opt.step();
    ref_opt.zero_grad();
    nn::functional::mse_loss(ref->forward(data), target).backward();
    ref_opt.step();
  }
  const int64_t rows = 12 / n;
  EXPECT_TRUE(fc1->weight.allclose(l1.weight.narrow(0, r * rows, rows), 1e-5, 1e-5));
  EXPECT_TRUE(fc1->bias.allclose(l1.bias.narrow(0, r * rows, rows), 1e-5, 1e-5));
  EXPECT_TRUE(fc2->weight.allclose(l2.weight.narrow(1, r * rows, rows), 1e-5, 1e-5));
  EXPECT_TRUE(fc2->bias.allclose(l2.bias, 1e-5, 1e-5));
  auto whole1 = tp::ColumnParallelLinear::from(l1, pg, /*gather_output=*/true);
  auto whole2 = tp::RowParallelLinear::from(l2, pg, /*input_is_parallel=*/false);
  Tensor h = whole1->forward(data);
  EXPECT_TRUE(h.allclose(l1.forward(data), 1e-5, 1e-5));
  EXPECT_TRUE(whole2->forward(h).allclose(l2.forward(h), 1e-5, 1e-5));
}

// Pipeline parallelism from C++: four Linear+Tanh layers cut into one stage per rank, 4
// micro-batches, GPipe and 1F1B: each stage's parameters equal one process's after 2 SGD steps.
void run_pipeline(const std::shared_ptr<ProcessGroup>& pg) {
  const int r = pg->rank(), n = pg->size();
  auto make = [] {
    manual_seed(7);
    auto seq = std::make_shared<nn::Sequential>();
    for (int i = 0; i < 4; ++i) {
      seq->push_back(nn::make<nn::Linear>(5, 5));
      seq->push_back(nn::make<nn::Tanh>());
    }
    return seq;
  };
  manual_seed(3);
  Tensor data = randn({8, 5}), target = randn({8, 5});
  auto loss_fn = [](const Tensor& out, const Tensor& y) { return nn::functional::mse_loss(out, y); };
  auto ref = make();
  optim::SGD ref_opt(ref->parameters(), {.lr = 0.5});
  for (int step = 0; step < 2; ++step) {
    ref_opt.zero_grad();
    loss_fn(ref->forward(data), target).backward();
    ref_opt.step();
  }
  const int per = 8 / n;  // children per stage
  for (auto kind : {PipelineSchedule::Kind::kGPipe, PipelineSchedule::Kind::k1F1B}) {
    auto model = make();
    auto part = model->slice(r * per, (r + 1) * per);
    PipelineStage stage(part, r, n, pg);
    PipelineSchedule schedule(stage, 4, kind, loss_fn);
    optim::SGD opt(part->parameters(), {.lr = 0.5});
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      auto losses = schedule.step(r == 0 ? data : Tensor(), r == n - 1 ? target : Tensor());
      EXPECT_EQ(losses.size(), r == n - 1 ? 4u : 0u);
      opt.step();
    }
    auto got = model->named_parameters(), want = ref->named_parameters();
    for (size_t i = 0; i < got.size(); ++i) {
      const int layer = std::stoi(got[i].first.substr(0, got[i].first.find('.')));
      if (layer / per != r) continue;  // another stage's
      EXPECT_TRUE(got[i].second.allclose(want[i].second, 1e-5, 1e-5)) << got[i].first;
    }
  }
}

// The differentiable collectives: each rank's loss uses the output; x.grad must be the gradient
// of the sum of every rank's loss.
void run_functional(const std::shared_ptr<ProcessGroup>& pg) {
  namespace dfn = ember::distributed::functional;
  const int r = pg->rank(), n = pg->size();
  const double sum_w = n * (n + 1) / 2.0;
  Tensor x = arange(4, {.dtype = kFloat64}).mul(Scalar(r + 1)).requires_grad_();
  Tensor y = dfn::all_reduce(x, pg);
  EXPECT_DOUBLE_EQ(y[1].item<double>(), sum_w);  // 1 * (1 + 2 + ... + n)
  y.mul(Scalar(r + 1)).sum().backward();
  EXPECT_DOUBLE_EQ(x.grad()[0].item<double>(), sum_w) << "all_reduce";
  x = arange(4, {.dtype = kFloat64}).requires_grad_();
  Tensor g = dfn::all_gather(x, pg);
  ASSERT_EQ(g.size(0), 4 * n);
  g.mul(arange(4 * n, {.dtype = kFloat64}).add(Scalar(r))).sum().backward();
  for (int k = 0; k < 4; ++k)  // sum over ranks q of (4 r + k + q)
    EXPECT_DOUBLE_EQ(x.grad()[k].item<double>(), n * (4.0 * r + k) + (n - 1) * n / 2.0) << "all_gather " << k;
  x = ones({2 * n}, {.dtype = kFloat64}).requires_grad_();
  Tensor rs = dfn::reduce_scatter(x, pg);
  EXPECT_DOUBLE_EQ(rs[0].item<double>(), n);
  rs.mul(Scalar(r + 1)).sum().backward();
  for (int j = 0; j < n; ++j) EXPECT_DOUBLE_EQ(x.grad()[2 * j].item<double>(), j + 1) << "reduce_scatter " << j;
  x = full({3}, double(r + 7), {.dtype = kFloat64}).requires_grad_();
  Tensor b = dfn::broadcast(x, 0, pg);
  EXPECT_DOUBLE_EQ(b[0].item<double>(), 7.0);
  b.mul(Scalar(r + 1)).sum().backward();
  EXPECT_DOUBLE_EQ(x.grad()[0].item<double>(), r == 0 ? sum_w : 0.0) << "broadcast";
}

TEST(DistributedWorker, Run) {
  const int rank = env_int("EMBER_TEST_RANK"), size = env_int("EMBER_TEST_WORLD"), port = env_int("EMBER_TEST_PORT");
  if (rank < 0) GTEST_SKIP() << "runs as a worker process of the multi-process tests";
  const char* mode = std::getenv("EMBER_TEST_MODE");
  auto store = std::make_shared<TCPStore>("127.0.0.1", port, false, Millis(20000));
  auto pg = make_gloo_process_group(std::make_shared<PrefixStore>("default_pg", store), rank, size,
                                    {.timeout = Millis(mode && std::string(mode) == "die" ? 5000 : 30000),
                                     .hostname = "127.0.0.1"});
  if (mode && std::string(mode) == "die") {
    // the last rank exits without taking part: the others fail within the timeout, naming the op
    if (rank == size - 1) std::_Exit(3);
    Tensor t = ones({8});
    try {
      pg->all_reduce(t, ReduceOp::SUM)->wait();
      ADD_FAILURE() << "all_reduce without the last rank did not fail";
    } catch (const DistBackendError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("all_reduce on process group 'default_pg'"), std::string::npos) << m;
      EXPECT_NE(m.find("missing rank " + std::to_string(size - 1)), std::string::npos) << m;
    }
    return;
  }
  if (mode && std::string(mode) == "mesh2d") return run_mesh_2d(store, rank);
  if (mode && std::string(mode) == "ddp") run_ddp(pg);
  else if (mode && std::string(mode) == "functional") run_functional(pg);
  else if (mode && std::string(mode) == "fsdp") run_fsdp(pg);
  else if (mode && std::string(mode) == "tp") run_tensor_parallel(pg);
  else if (mode && std::string(mode) == "dcp_save") run_checkpoint(pg, true);
  else if (mode && std::string(mode) == "dcp_load") run_checkpoint(pg, false);
  else if (mode && std::string(mode) == "pipeline") run_pipeline(pg);
  else run_collectives(*pg);
}

// Starts `n` workers of this binary; returns their exit statuses.
std::vector<int> run_workers(int n, const char* mode = "") {
  TCPStore master("127.0.0.1", 0, true, Millis(20000));
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("EMBER_TEST_RANK=" + std::to_string(r));
    env_strings.push_back("EMBER_TEST_WORLD=" + std::to_string(n));
    env_strings.push_back("EMBER_TEST_PORT=" + std::to_string(master.port()));
    env_strings.push_back(std::string("EMBER_TEST_MODE=") + mode);
    env_strings.push_back("OMP_NUM_THREADS=1");
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string filter = "--gtest_filter=DistributedWorker.Run";
    std::string brief = "--gtest_brief=1";
    char* argv[] = {exe.data(), filter.data(), brief.data(), nullptr};
    pid_t pid = 0;
    EXPECT_EQ(::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
    pids.push_back(pid);
  }
  std::vector<int> codes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  for (pid_t pid : pids) {
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

TEST(DistributedGloo, CollectivesOnTwoProcesses) {
  for (int code : run_workers(2)) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, CollectivesOnFourProcesses) {
  for (int code : run_workers(4)) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, DataParallelFromCppMatchesOneProcess) {
  for (int code : run_workers(2, "ddp")) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, FullyShardedFromCppMatchesOneProcess) {
  for (int code : run_workers(3, "fsdp")) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, ShardedCheckpointFromCppSavedAt3LoadsAt2And1) {
  const auto dir = std::filesystem::temp_directory_path() / ("ember_dcp_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  setenv("EMBER_TEST_DIR", dir.c_str(), 1);
  for (int code : run_workers(3, "dcp_save")) EXPECT_EQ(code, 0);
  for (int code : run_workers(2, "dcp_load")) EXPECT_EQ(code, 0);
  for (int code : run_workers(1, "dcp_load")) EXPECT_EQ(code, 0);
  unsetenv("EMBER_TEST_DIR");
  std::filesystem::remove_all(dir);
}

TEST(DistributedGloo, FsdpAndTensorParallelOnA2dMeshFromCppMatchOneProcess) {
  for (int code : run_workers(4, "mesh2d")) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, TensorParallelLinearsFromCppMatchOneProcess) {
  for (int code : run_workers(2, "tp")) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, PipelineStagesFromCppMatchOneProcess) {
  for (int code : run_workers(2, "pipeline")) EXPECT_EQ(code, 0);
  for (int code : run_workers(4, "pipeline")) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, DifferentiableCollectivesGiveTheGradientOfTheSummedLoss) {
  for (int code : run_workers(3, "functional")) EXPECT_EQ(code, 0);
}

TEST(DistributedGloo, ARankThatDiesFailsTheOthersWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const auto codes = run_workers(3, "die");
  EXPECT_EQ(codes[0], 0);
  EXPECT_EQ(codes[1], 0);
  EXPECT_EQ(codes[2], 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace ember::distributed

#else
TEST(Distributed, NotBuilt) { GTEST_SKIP() << "built without Gloo (EMBER_DISTRIBUTED off): scripts/setup.sh installs libgloo-dev"; }
#endif
