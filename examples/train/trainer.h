#pragma once
// The training demo: the seeds' MNIST project on Fashion-MNIST, as a library the demo program
// and the end-to-end tests share.
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace train_demo {

struct TrainConfig {
  std::string model = "cnn";          // cnn (SimpleCNN) | mlp | mnistnet
  int64_t epochs = 4;
  int64_t batch_size = 128;
  double lr = 1e-3;
  double weight_decay = 1e-4;
  std::string optimizer = "adamw";    // adamw | adam | sgd (momentum 0.9)
  std::string scheduler = "cosine";   // cosine (per epoch) | step | onecycle (per batch) | none
  int workers = 1;                    // DataLoader worker threads
  uint64_t seed = 0;
  std::string device = "cpu";
  // Mixed precision: "" (off), "auto" (bfloat16 on the CPU, float16 + GradScaler on CUDA),
  // "bf16" or "fp16" (float16 always with a GradScaler).
  std::string amp;
  bool profile = false;  // --profile: a scheduled profile of a few training steps
  std::filesystem::path out = "runs/fashion_mnist";
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  bool resume = false;                // continue from out/last.pt
  bool augment = false;               // RandomRotation(10) + RandomAffine(translate 0.1), as the seed
  int64_t limit_train = 0, limit_test = 0;  // use only the first N samples (0: all)
  int threads = 0;                    // intra-op threads (0: leave the default)
  int64_t stop_after = 0;             // end after this epoch (0: run all); --resume continues
  bool plot = true;
  bool progress = true;
};

struct EpochStats {
  int64_t epoch = 0;
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, lr = 0, seconds = 0, samples_per_s = 0;
};

struct TrainResult {
  std::vector<EpochStats> history;
  double best_acc = 0;
  int64_t best_epoch = 0;
  std::vector<int64_t> class_correct, class_total;  // of the best checkpoint on the test set
  std::vector<std::string> classes;
};

// Command-line parsing; a bad option throws UsageError with a message naming it.
struct UsageError : std::runtime_error { using std::runtime_error::runtime_error; };
TrainConfig parse_args(int argc, const char* const* argv);
std::string usage();

// Trains (or resumes) as configured, printing progress, the epoch table and the per-class
// accuracy to `log`; writes out/best.pt, out/last.pt, out/history.csv and out/curves.svg.
TrainResult train(const TrainConfig& config, std::ostream& log, bool interactive);

}  // namespace train_demo
