// Classifies Fashion-MNIST's test images with a program exported from Python
// (examples/export_cnn.py): libember only, no Python. Usage: classify_exported model.ember [root]
#include <cstdio>

#include "ember/data/datasets.h"
#include "ember/ember.h"
#include "ember/export.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s model.ember [fashion-mnist folder]\n", argv[0]);
    return 2;
  }
  ember::NoGradGuard no_grad;
  const auto program = ember::exporting::load(argv[1]);
  const ember::datasets::FashionMNIST test(argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist",
                                         {.train = false});
  // the same normalisation as in training; the batch is dynamic: 10,000 = 39 x 256 + 16
  const ember::Tensor images = test.data().to(ember::kFloat32).div(255.0).sub(0.2860).div(0.3530).unsqueeze(1);
  int64_t correct = 0;
  for (int64_t i = 0; i < images.size(0); i += 256) {
    const int64_t n = images.size(0) - i < 256 ? images.size(0) - i : 256;
    const ember::Tensor logits = program.run({images.narrow(0, i, n).contiguous()})[0];
    correct += logits.argmax(1).eq(test.targets().narrow(0, i, n)).sum().item<int64_t>();
  }
  const int64_t first = program.run({images.narrow(0, 0, 1).contiguous()})[0].argmax(1).item<int64_t>();
  std::printf("test accuracy %.2f%% (%lld of %lld), class of image 0: %s\n", 100.0 * double(correct) / double(images.size(0)),
              static_cast<long long>(correct), static_cast<long long>(images.size(0)), test.classes()[size_t(first)].c_str());
  return 0;
}
