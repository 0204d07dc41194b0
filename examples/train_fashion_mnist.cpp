// The README's main job: train the seeds' MNIST CNN (or MLP) on Fashion-MNIST with ember.
//   ./build/train_fashion_mnist [--model cnn|mlp|mnistnet] [--epochs N] ... (--help)
#include <unistd.h>

#include <iostream>

#include "train/trainer.h"

int main(int argc, char** argv) {
  using namespace train_demo;
  TrainConfig config;
  try {
    config = parse_args(argc, argv);
  } catch (const UsageError& e) {
    bool help = std::string(e.what()).empty();
    (help ? std::cout : std::cerr) << (help ? "" : std::string("error: ") + e.what() + "\n\n") << usage();
    return help ? 0 : 2;
  }
  try {
    train(config, std::cout, isatty(STDOUT_FILENO));
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
