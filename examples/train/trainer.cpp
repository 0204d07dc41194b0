// The training demo's loop: data, model, optimizer and schedule as configured; one row per
// epoch; best and resumable checkpoints; curves; per-class accuracy of the best model.
#include "trainer.h"

#include "distributed_run.h"

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <sstream>

#include <ember/amp.h>
#include <ember/data.h>
#include <ember/ember.h>
#include <ember/nn.h>
#include <ember/optim.h>
#include <ember/profiler.h>
#include <ember/serialize/serialize.h>

#include "models.h"
#include "progress_bar.h"
#include "svg_plot.h"

namespace train_demo {

using namespace ember;
namespace F = ember::nn::functional;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Fashion-MNIST's pixel statistics over the training set (the seeds use MNIST's 0.1307/0.3081).
constexpr double kMean = 0.2860, kStd = 0.3530;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

Device pick_device(const std::string& name) {
  Device dev = [&] {
    try {
      return Device(name);
    } catch (const std::exception& e) {
      throw UsageError("--device: " + std::string(e.what()));
    }
  }();
  if (!dev.is_cpu()) {
    try {
      empty({1}, {.device = dev});
    } catch (const std::exception& e) {
      throw UsageError("--device " + name + ": this ember build cannot use it (" + e.what() + "); use --device cpu");
    }
  }
  return dev;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<Tensor> params) {
  if (c.optimizer == "adamw") return std::make_unique<optim::AdamW>(params, optim::AdamWOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  if (c.optimizer == "adam") return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = c.lr, .weight_decay = c.weight_decay});
  return std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = c.lr, .momentum = 0.9, .weight_decay = c.weight_decay});
}

std::unique_ptr<optim::LRScheduler> make_scheduler(const TrainConfig& c, optim::Optimizer& opt, int64_t steps_per_epoch) {
  if (c.scheduler == "cosine") return std::make_unique<optim::CosineAnnealingLR>(opt, c.epochs);
  if (c.scheduler == "step") return std::make_unique<optim::StepLR>(opt, std::max<int64_t>(1, c.epochs / 3), 0.1);
  if (c.scheduler == "onecycle")
    return std::make_unique<optim::OneCycleLR>(opt, c.lr * 10,
                                               optim::OneCycleOptions{.epochs = c.epochs, .steps_per_epoch = steps_per_epoch});
  return nullptr;
}

// The options that shape the trajectory: a resumed run must use the same ones.
Value trajectory_config(const TrainConfig& c) {
  Value d = Value::dict();
  d["model"] = c.model;
  d["batch_size"] = c.batch_size;
  d["lr"] = c.lr;
  d["weight_decay"] = c.weight_decay;
  d["optimizer"] = c.optimizer;
  d["scheduler"] = c.scheduler;
  d["seed"] = int64_t(c.seed);
  d["augment"] = c.augment;
  d["limit_train"] = c.limit_train;
  d["data"] = c.data.string();
  // The schedule's length depends on the epoch count; the random stream of augmentations on
  // which worker loads which batch.
  if (c.scheduler != "none" && c.scheduler != "step") d["epochs"] = c.epochs;
  if (!c.amp.empty()) d["amp"] = c.amp;
  if (c.augment) d["workers"] = int64_t(c.workers);
  return d;
}

struct EvalResult {
  double loss = 0, acc = 0;
  std::vector<int64_t> correct, total;
};

// The autocast dtype of --amp on `device` (nullopt: off).
std::optional<DType> amp_dtype(const TrainConfig& c, Device device) {
  if (c.amp.empty()) return std::nullopt;
  if (c.amp == "bf16") return DType::BFloat16;
  if (c.amp == "fp16") return DType::Float16;
  return device.is_cuda() ? DType::Float16 : DType::BFloat16;
}

EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device, int64_t num_classes,
                    std::optional<DType> precision) {
  NoGradGuard no_grad;
  ember::amp::AutocastGuard autocast(device.type, precision, precision.has_value());
  model.eval();
  EvalResult r;
  r.correct.assign(size_t(num_classes), 0);
  r.total.assign(size_t(num_classes), 0);
  double loss_sum = 0;
  int64_t n = 0;
  for (Value batch : loader) {
    Tensor x = batch[0].to_tensor().to(device), y = batch[1].to_tensor().to(device);
    Tensor out = model(x);
    loss_sum += F::cross_entropy(out, y).item<double>() * double(y.size(0));
    std::vector<int64_t> pred = out.argmax(1).tolist<int64_t>(), truth = y.tolist<int64_t>();
    for (size_t i = 0; i < truth.size(); ++i) {
      r.total[size_t(truth[i])]++;
      r.correct[size_t(truth[i])] += pred[i] == truth[i];
    }
    n += y.size(0);
  }
  int64_t correct = std::accumulate(r.correct.begin(), r.correct.end(), int64_t(0));
  r.loss = n ? loss_sum / double(n) : 0;
  r.acc = n ? 100.0 * double(correct) / double(n) : 0;
  return r;
}

Value history_value(const std::vector<EpochStats>& h) {
  Value list = Value::list();
  for (const EpochStats& e : h) {
    Value d = Value::dict();
    d["epoch"] = e.epoch;
    d["train_loss"] = e.train_loss;
    d["train_acc"] = e.train_acc;
    d["test_loss"] = e.test_loss;
    d["test_acc"] = e.test_acc;
    d["lr"] = e.lr;
    d["seconds"] = e.seconds;
    d["samples_per_s"] = e.samples_per_s;
    list.push_back(d);
  }
  return list;
}

std::vector<EpochStats> history_from(const Value& list) {
  std::vector<EpochStats> h;
  for (const Value& d : list.items_list())
    h.push_back({d.at("epoch").to_int(), d.at("train_loss").to_double(), d.at("train_acc").to_double(),
                 d.at("test_loss").to_double(), d.at("test_acc").to_double(), d.at("lr").to_double(),
                 d.at("seconds").to_double(), d.at("samples_per_s").to_double()});
  return h;
}

void write_history_csv(const fs::path& file, const std::vector<EpochStats>& h) {
  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << "epoch,train_loss,train_acc,test_loss,test_acc,lr,seconds,samples_per_s\n";
    for (const EpochStats& e : h)
      out << e.epoch << ',' << e.train_loss << ',' << e.train_acc << ',' << e.test_loss << ',' << e.test_acc << ','
          << e.lr << ',' << e.seconds << ',' << e.samples_per_s << '\n';
    EMBER_CHECK(out.good(), "cannot write ", tmp.string());
  }
  fs::rename(tmp, file);
}

void write_plot(const fs::path& file, const std::string& title, const std::vector<EpochStats>& h) {
  Series train_loss{"train", "#1f77b4", {}}, test_loss{"test", "#d62728", {}};
  Series train_acc{"train", "#1f77b4", {}}, test_acc{"test", "#d62728", {}};
  for (const EpochStats& e : h) {
    train_loss.y.push_back(e.train_loss);
    test_loss.y.push_back(e.test_loss);
    train_acc.y.push_back(e.train_acc);
    test_acc.y.push_back(e.test_acc);
  }
  write_svg_plot(file, title,
                 {Panel{"Loss", "cross-entropy", {train_loss, test_loss}},
                  Panel{"Accuracy", "accuracy (%)", {train_acc, test_acc}}});
}

std::string thousands(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

}  // namespace

TrainResult train(const TrainConfig& c, std::ostream& lead_log, bool interactive) {
  Device device = pick_device(c.device);
  // Under ember-run: one process of a data-parallel job; rank 0 prints and writes the files.
  const DistributedRun run = join_from_environment();
  std::ostream null_log(nullptr);
  std::ostream& log = run.lead() ? lead_log : null_log;
  interactive = interactive && run.lead();
  if (c.threads > 0) set_num_threads(c.threads);
  fs::create_directories(c.out);
  const fs::path best_path = c.out / "best.pt", last_path = c.out / "last.pt";

  manual_seed(c.seed);
  std::shared_ptr<nn::Module> model = make_model(c.model);
  model->to(device);

  log << std::string(75, '=') << "\n  Fashion-MNIST with ember: " << model->name() << "\n" << std::string(75, '=') << "\n";
  log << "  device " << device.str() << " | threads " << get_num_threads() << " | workers " << c.workers
      << " | batch size " << c.batch_size << " | lr " << c.lr << " | " << c.optimizer << " (weight decay "
      << c.weight_decay << ") | scheduler " << c.scheduler << " | epochs " << c.epochs << " | seed " << c.seed << "\n";

  // ---- data ----
  log << "\n[1/4] data from " << c.data.string() << "\n";
  using namespace ember::transforms;
  std::vector<Transform> train_steps;
  if (c.augment) {
    train_steps.push_back(RandomRotation(10));
    train_steps.push_back(RandomAffine(0, std::pair{0.1, 0.1}));
  }
  train_steps.push_back(ToTensor());
  train_steps.push_back(Normalize({kMean}, {kStd}));
  Transform test_tf = Compose({ToTensor(), Normalize({kMean}, {kStd})});
  auto full_train = std::make_shared<datasets::FashionMNIST>(c.data, datasets::VisionOptions{.train = true, .transform = Compose(train_steps)});
  auto full_test = std::make_shared<datasets::FashionMNIST>(c.data, datasets::VisionOptions{.train = false, .transform = test_tf});
  std::vector<std::string> classes = full_train->classes();
  auto first_n = [](const std::shared_ptr<datasets::FashionMNIST>& ds, int64_t n) -> data::DatasetPtr {
    if (n <= 0 || n >= ds->size()) return ds;
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), int64_t(0));
    return std::make_shared<data::Subset>(ds, idx);
  };
  data::DatasetPtr train_set = first_n(full_train, c.limit_train), test_set = first_n(full_test, c.limit_test);
  // several processes: each reads its 1/N of every epoch with batch/N (the same global batch)
  std::shared_ptr<data::DistributedSampler> shard;
  if (run.world > 1)
    shard = std::make_shared<data::DistributedSampler>(
        train_set->size(), data::DistributedSamplerOptions{.num_replicas = run.world, .rank = run.rank, .seed = c.seed});
  data::DataLoader train_loader(train_set, {.batch_size = std::max<int64_t>(1, c.batch_size / run.world),
                                            .shuffle = !shard, .sampler = shard, .num_workers = c.workers,
                                            .pin_memory = device.is_cuda(), .persistent_workers = c.workers > 0});
  data::DataLoader test_loader(test_set, {.batch_size = 512, .num_workers = c.workers,
                                          .pin_memory = device.is_cuda(), .persistent_workers = c.workers > 0});
  if (run.world > 1)
    log << "  " << run.world << " processes (ember-run): DistributedDataParallel over Gloo, " << c.batch_size / run.world
        << " samples per process and batch\n";
  log << "  train " << thousands(train_set->size()) << " samples (" << train_loader.size() << " batches) | test "
      << thousands(test_set->size()) << " samples | " << classes.size() << " classes"
      << (c.augment ? " | augmentation: rotation 10 deg, translation 10%" : "") << "\n";

  // ---- model, optimizer, schedule ----
  log << "\n[2/4] model " << model->name() << ": " << thousands(model->num_parameters()) << " parameters\n";
  const auto forward = training_forward(run, model);  // DDP when distributed
  auto opt = make_optimizer(c, model->parameters());
  auto sched = make_scheduler(c, *opt, train_loader.size());
  const bool per_batch_schedule = c.scheduler == "onecycle";
  // --amp: the forward and the loss under autocast; float16 gradients need loss scaling.
  const std::optional<DType> precision = amp_dtype(c, device);
  ember::amp::GradScaler scaler(device, {.enabled = precision == DType::Float16});
  if (precision) log << "  mixed precision: " << dtype_name(*precision) << " autocast on " << device.str()
               << (scaler.is_enabled() ? " with a GradScaler" : "") << "\n";

  TrainResult result;
  result.classes = classes;
  int64_t start_epoch = 1;
  if (c.resume) {
    EMBER_CHECK_VALUE(fs::exists(last_path), "--resume: there is no ", last_path.string(),
                      " to resume from (start a run without --resume first)");
    Value ckpt = load(last_path.string());
    Value saved = ckpt.at("config"), now = trajectory_config(c);
    for (const auto& [key, value] : now.items()) {
      bool same = saved.contains(key) && saved.at(key) == value;
      EMBER_CHECK_VALUE(same, "--resume: ", last_path.string(), " was trained with ", key.to_string(), " = ",
                        saved.contains(key) ? saved.at(key).repr() : "(unset)", ", this run asks for ", value.repr(),
                        "; use the same options (or another --out) to continue it");
    }
    model->load_state_dict(to_state_dict(ckpt.at("model_state_dict")));
    opt->load_state_dict(ckpt.at("optimizer_state_dict"));
    if (scaler.is_enabled() && ckpt.contains("scaler_state_dict")) scaler.load_state_dict(ckpt.at("scaler_state_dict"));
    if (sched) sched->load_state_dict(ckpt.at("scheduler_state_dict"));
    result.history = history_from(ckpt.at("history"));
    result.best_acc = ckpt.at("best_acc").to_double();
    result.best_epoch = ckpt.at("best_epoch").to_int();
    {  // the generator's state is torch's byte tensor (torch.get_rng_state())
      Tensor st = ckpt.at("rng_state").to_tensor().contiguous();
      default_generator().set_state(std::string(static_cast<const char*>(st.data_ptr()), size_t(st.numel())));
    }
    start_epoch = ckpt.at("epoch").to_int() + 1;
    log << "  resumed from " << last_path.string() << " after epoch " << start_epoch - 1 << " (best test acc "
        << fmt("%.2f", result.best_acc) << "% at epoch " << result.best_epoch << ")\n";
  }

  // ---- training ----
  log << "\n[3/4] training\n" << std::string(75, '-') << "\n"
      << "Epoch | Train Loss | Train Acc | Test Loss | Test Acc |         LR |  Time | samples/s\n"
      << std::string(75, '-') << "\n";
  for (const EpochStats& e : result.history)
    log << std::setw(5) << e.epoch << " | " << fmt("%10.4f", e.train_loss) << " | " << fmt("%8.2f%%", e.train_acc)
        << " | " << fmt("%9.4f", e.test_loss) << " | " << fmt("%7.2f%%", e.test_acc) << " | " << fmt("%10.6f", e.lr)
        << " | " << fmt("%4.1fs", e.seconds) << " | " << fmt("%9.0f", e.samples_per_s) << "  (resumed)\n";
  // --profile: batch 1 waits, batch 2 warms up, batches 3-5 are recorded; then the table and
  // the trace are written and training goes on unprofiled.
  std::optional<ember::profiler::Profiler> prof;
  if (c.profile) {
    prof.emplace(ember::profiler::ProfilerConfig{.cuda = device.is_cuda(), .record_shapes = true, .profile_memory = true},
                 ember::profiler::schedule(1, 1, 3, 1), [&](ember::profiler::Profiler& p) {
                   const auto& r = p.result();
                   std::string t = ember::profiler::table(ember::profiler::key_averages(r),
                                                          {.sort_by = device.is_cuda() ? "self_cuda_time_total" : "self_cpu_time_total",
                                                           .row_limit = 12},
                                                          r.use_device(), true, false);
                   atomic_write_file((c.out / "profile_table.txt").string(), t);
                   r.export_chrome_trace((c.out / "profile_trace.json").string());
                   log << "  profiled batches 3-5:\n" << t << "  table: " << (c.out / "profile_table.txt").string()
                       << ", trace: " << (c.out / "profile_trace.json").string() << " (open in https://ui.perfetto.dev)\n";
                 });
    prof->start();
  }
  auto run_start = Clock::now();
  const int64_t last_epoch = c.stop_after > 0 ? std::min(c.stop_after, c.epochs) : c.epochs;
  for (int64_t epoch = start_epoch; epoch <= last_epoch; ++epoch) {
    auto t0 = Clock::now();
    double lr = opt->param_groups[0].lr();
    model->train();
    if (shard) shard->set_epoch(epoch);
    ProgressBar bar(log, "epoch " + std::to_string(epoch) + "/" + std::to_string(c.epochs), train_loader.size(),
                    interactive);
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (Value batch : train_loader) {
      Tensor x = batch[0].to_tensor().to(device), y = batch[1].to_tensor().to(device);
      Tensor out, loss;
      {
        ember::profiler::RecordFunction region("forward");
        ember::amp::AutocastGuard autocast(device.type, precision, precision.has_value());
        out = forward(x);
        loss = F::cross_entropy(out, y);
      }
      {
        ember::profiler::RecordFunction region("backward");
        opt->zero_grad();
        scaler.scale(loss).backward();
      }
      {
        ember::profiler::RecordFunction region("optimizer_step");
        scaler.step(*opt);
        scaler.update();
      }
      if (per_batch_schedule) sched->step();
      int64_t n = y.size(0);
      loss_sum += loss.item<double>() * double(n);
      correct += out.argmax(1).eq(y).sum().item<int64_t>();
      seen += n;
      if (c.progress) bar.update(n, loss_sum / double(seen), 100.0 * double(correct) / double(seen));
      if (prof) {
        if (prof->step_num() < 5) prof->step();  // wait 1 + warmup 1 + active 3
        else prof.reset();                       // the schedule is done: stop profiling
      }
    }
    if (prof) prof.reset();  // an epoch shorter than the schedule: what was recorded is written
    double train_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (c.progress) bar.finish();
    if (run.world > 1) {  // the epoch's numbers over every process's shard
      Tensor totals = tensor({loss_sum, double(correct), double(seen)}, {.dtype = kFloat64});
      sum_over_job(run, totals);
      loss_sum = totals[0].item<double>();
      correct = int64_t(totals[1].item<double>());
      seen = int64_t(totals[2].item<double>());
    }
    EvalResult ev = evaluate(*model, test_loader, device, int64_t(classes.size()), precision);
    if (sched && !per_batch_schedule) sched->step();
    EpochStats e{epoch, loss_sum / double(seen), 100.0 * double(correct) / double(seen), ev.loss, ev.acc, lr,
                 std::chrono::duration<double>(Clock::now() - t0).count(), double(seen) / train_seconds};
    result.history.push_back(e);
    bool best = e.test_acc > result.best_acc;
    if (best) {
      result.best_acc = e.test_acc;
      result.best_epoch = epoch;
      if (run.lead()) save(to_value(model->state_dict()), best_path.string());  // torch.load + load_state_dict read it
    }
    if (!run.lead()) continue;  // the files are rank 0's
    // Everything needed to continue after this epoch, written atomically.
    Value ckpt = Value::dict();
    ckpt["epoch"] = epoch;
    ckpt["model_state_dict"] = to_value(model->state_dict());
    ckpt["optimizer_state_dict"] = opt->state_dict();
    if (scaler.is_enabled()) ckpt["scaler_state_dict"] = scaler.state_dict();
    ckpt["scheduler_state_dict"] = sched ? sched->state_dict() : Value();
    ckpt["best_acc"] = result.best_acc;
    ckpt["best_epoch"] = result.best_epoch;
    ckpt["history"] = history_value(result.history);
    {
      std::string st = default_generator().get_state();
      Tensor bytes = empty({int64_t(st.size())}, {.dtype = kUInt8});
      std::memcpy(bytes.data_ptr(), st.data(), st.size());
      ckpt["rng_state"] = bytes;
    }
    ckpt["config"] = trajectory_config(c);
    save(ckpt, last_path.string());
    write_history_csv(c.out / "history.csv", result.history);
    if (c.plot) write_plot(c.out / "curves.svg", "Fashion-MNIST, " + model->name() + " (ember)", result.history);
    log << std::setw(5) << epoch << " | " << fmt("%10.4f", e.train_loss) << " | " << fmt("%8.2f%%", e.train_acc)
        << " | " << fmt("%9.4f", e.test_loss) << " | " << fmt("%7.2f%%", e.test_acc) << " | " << fmt("%10.6f", e.lr)
        << " | " << fmt("%4.1fs", e.seconds) << " | " << fmt("%9.0f", e.samples_per_s) << (best ? "  *best" : "")
        << "\n" << std::flush;
  }
  if (run.world > 1) {  // every process waits until rank 0 has written best.pt
    Tensor none = zeros({1}, {.dtype = kFloat64});
    sum_over_job(run, none);
  }
  double total = std::chrono::duration<double>(Clock::now() - run_start).count();
  log << std::string(75, '-') << "\n";
  if (start_epoch > c.epochs)
    log << "nothing left to train: the run in " << c.out.string() << " finished its " << c.epochs << " epochs\n";
  else
    log << "trained epochs " << start_epoch << "-" << last_epoch << " in " << fmt("%.1f", total) << " s"
        << (last_epoch < c.epochs ? " (stopped early: --resume continues)" : "") << "\n";
  log << "best test accuracy " << fmt("%.2f", result.best_acc) << "% (epoch " << result.best_epoch << ")\n";

  // ---- the best model, class by class (as the seed's detailed evaluation) ----
  log << "\n[4/4] per-class test accuracy of the best checkpoint (" << best_path.string() << ")\n";
  model->load_state_dict(to_state_dict(load(best_path.string())));
  EvalResult ev = evaluate(*model, test_loader, device, int64_t(classes.size()), precision);
  result.class_correct = ev.correct;
  result.class_total = ev.total;
  for (size_t k = 0; k < classes.size(); ++k) {
    double acc = ev.total[k] ? 100.0 * double(ev.correct[k]) / double(ev.total[k]) : 0;
    char row[128];
    std::snprintf(row, sizeof row, "  %-12s %6.2f%%  (%lld/%lld)  ", classes[k].c_str(), acc, (long long)ev.correct[k],
                  (long long)ev.total[k]);
    log << row << std::string(size_t(acc / 5), '#') << "\n";
  }
  log << "\nfiles in " << c.out.string() << ": best.pt (state_dict; torch.load reads it), last.pt (resume with --resume), "
      << "history.csv" << (c.plot ? ", curves.svg (loss and accuracy curves)" : "") << "\n";
  return result;
}

}  // namespace train_demo
