// bench_dataloader: DataLoader throughput. One epoch over 60000x784 float rows (TensorDataset,
// shuffle, batch 128), and an epoch of 10000 28x28 images through an expensive per-sample
// transform pipeline with 0, 1 and 2 worker threads.
//
//   bench_dataloader [--threads N] [--repeats R]
//
// Prints "name value unit" rows (median of R epochs); bench/compare_dataloader.py runs the same
// in PyTorch and prints ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ember/data.h"
#include "ember/ember.h"

using namespace ember;

namespace {

double epoch_ms(data::DataLoader& loader) {
  auto t0 = std::chrono::steady_clock::now();
  int64_t rows = 0;
  for (Value batch : loader) rows += batch[0].to_tensor().size(0);
  if (rows <= 0) std::abort();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median_epoch_ms(data::DataLoader& loader, int repeats) {
  epoch_ms(loader);  // warm-up: first-touch allocations, worker start
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) t.push_back(epoch_ms(loader));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  set_num_threads(threads);
  manual_seed(0);

  auto rows = std::make_shared<data::TensorDataset>(std::vector<Tensor>{randn({60000, 784}), randint(0, 10, {60000})});
  data::DataLoader plain(rows, {.batch_size = 128, .shuffle = true});
  std::printf("loader_epoch_60000x784_b128 %.3f ms\n", median_epoch_ms(plain, repeats));

  // Per-sample work that dominates loading: rotation, affine jitter and an upscale, bilinear.
  using namespace transforms;
  Transform heavy = Compose({RandomRotation(15, Interpolation::Bilinear),
                             RandomAffine(0, std::pair{0.1, 0.1}, std::pair{0.9, 1.1}, std::nullopt,
                                          Interpolation::Bilinear),
                             Resize({56, 56}), ToTensor(), Normalize({0.5}, {0.5})});
  Tensor images = randint(0, 256, {10000, 28, 28}).to(kUInt8);
  auto images_ds = std::make_shared<data::MapDataset>(
      std::make_shared<data::TensorDataset>(std::vector<Tensor>{images, randint(0, 10, {10000})}),
      [heavy](Value s) { return Value::tuple({heavy(s[0].to_tensor().unsqueeze(0)), s[1]}); });
  for (int workers : {0, 1, 2}) {
    data::DataLoader loader(images_ds, {.batch_size = 64, .shuffle = true, .num_workers = workers,
                                        .persistent_workers = workers > 0});
    std::printf("transform_epoch_10000_w%d %.3f ms\n", workers, median_epoch_ms(loader, std::max(1, repeats / 2)));
  }
  return 0;
}
