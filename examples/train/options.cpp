// Command-line options of the training demo.
#include <charconv>
#include <sstream>

#include "trainer.h"

namespace train_demo {

std::string usage() {
  return R"(usage: train_fashion_mnist [options]
Trains a classifier on Fashion-MNIST (or any MNIST-format folder) with ember.

  --model NAME        cnn (the seeds' SimpleCNN, default) | mlp | mnistnet
  --epochs N          number of epochs (default 4)
  --batch-size N      samples per batch (default 128)
  --lr X              learning rate (default 0.001)
  --weight-decay X    weight decay (default 0.0001)
  --optimizer NAME    adamw (default) | adam | sgd
  --scheduler NAME    cosine (default) | step | onecycle | none
  --workers N         DataLoader worker threads (default 1; 0 loads in the training thread)
  --threads N         threads for the math (default: all cores)
  --seed N            random seed (default 0)
  --device NAME       cpu (default) | cuda | cuda:N
  --amp [DTYPE]       mixed precision (autocast): bf16 on cpu, fp16 with a GradScaler on cuda;
                      DTYPE bf16 | fp16 picks one
  --data DIR          MNIST-format folder (default /usr/share/datasets/fashion-mnist)
  --out DIR           where checkpoints, history and the plot go (default runs/fashion_mnist)
  --resume            continue the run saved in OUT/last.pt
  --augment           random rotation and translation of training images
  --limit-train N     train on the first N samples only
  --limit-test N      test on the first N samples only
  --stop-after N      stop after epoch N (a later --resume continues the run)
  --no-plot           do not write the SVG plot
  --no-progress       no progress bar
  --profile           profile batches 3-5 of the first epoch: OUT/profile_table.txt (the op
                      table) and OUT/profile_trace.json (open in https://ui.perfetto.dev)
  -h, --help          this text
)";
}

namespace {

template <class T> T parse_number(const std::string& flag, const std::string& text, T min) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end)
    throw UsageError(flag + " expects a number, got '" + text + "'");
  if (value < min) {
    std::ostringstream os;
    os << flag << " must be at least " << min << ", got " << text;
    throw UsageError(os.str());
  }
  return value;
}

double parse_positive_double(const std::string& flag, const std::string& text) {
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw UsageError(flag + " expects a number, got '" + text + "'");
  }
  if (!(value >= 0)) throw UsageError(flag + " must be non-negative, got " + text);
  return value;
}

std::string one_of(const std::string& flag, const std::string& text, std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (text == c) return text;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  throw UsageError(flag + " must be one of " + list + "; got '" + text + "'");
}

}  // namespace

TrainConfig parse_args(int argc, const char* const* argv) {
  TrainConfig c;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "-h" || flag == "--help") throw UsageError("");
    else if (flag == "--model") c.model = one_of(flag, value(), {"cnn", "mlp", "mnistnet"});
    else if (flag == "--epochs") c.epochs = parse_number<int64_t>(flag, value(), 1);
    else if (flag == "--batch-size") c.batch_size = parse_number<int64_t>(flag, value(), 1);
    else if (flag == "--lr") {
      c.lr = parse_positive_double(flag, value());
      if (c.lr == 0) throw UsageError("--lr must be positive, got 0");
    } else if (flag == "--weight-decay") c.weight_decay = parse_positive_double(flag, value());
    else if (flag == "--optimizer") c.optimizer = one_of(flag, value(), {"adamw", "adam", "sgd"});
    else if (flag == "--scheduler") c.scheduler = one_of(flag, value(), {"cosine", "step", "onecycle", "none"});
    else if (flag == "--workers") c.workers = parse_number<int>(flag, value(), 0);
    else if (flag == "--threads") c.threads = parse_number<int>(flag, value(), 1);
    else if (flag == "--seed") c.seed = parse_number<uint64_t>(flag, value(), 0);
    else if (flag == "--device") c.device = value();
    else if (flag == "--amp") {
      // An optional value: the next argument when it names a dtype.
      c.amp = "auto";
      if (i + 1 < argc && (std::string(argv[i + 1]) == "bf16" || std::string(argv[i + 1]) == "fp16")) c.amp = argv[++i];
    }
    else if (flag == "--data") c.data = value();
    else if (flag == "--out") c.out = value();
    else if (flag == "--resume") c.resume = true;
    else if (flag == "--augment") c.augment = true;
    else if (flag == "--limit-train") c.limit_train = parse_number<int64_t>(flag, value(), 1);
    else if (flag == "--limit-test") c.limit_test = parse_number<int64_t>(flag, value(), 1);
    else if (flag == "--stop-after") c.stop_after = parse_number<int64_t>(flag, value(), 1);
    else if (flag == "--no-plot") c.plot = false;
    else if (flag == "--no-progress") c.progress = false;
    else if (flag == "--profile") c.profile = true;
    else throw UsageError("unknown option '" + flag + "' (see --help)");
  }
  return c;
}

}  // namespace train_demo
