#pragma once
// The seeds' models for 28x28 grey images: SimpleCNN (the MNIST CNN, 421,834 parameters), the
// two-layer MLP of the MNIST script (203,530) and the full project's MNISTNet (4 conv blocks).
// Names and structure equal the PyTorch originals, so state_dict keys match theirs and a .pt
// written here loads into the Python model.
#include <ember/nn.h>

#include <memory>
#include <string>

namespace train_demo {

using namespace ember;

inline nn::Conv2dOptions same_3x3() { return nn::Conv2dOptions{.padding = std::vector<int64_t>{1, 1}}; }

struct SimpleCNN : nn::Module {
  explicit SimpleCNN(int64_t num_classes = 10)
      : conv_layers(nn::make<nn::Conv2d>(1, 32, 3, same_3x3()), nn::make<nn::BatchNorm2d>(32), nn::make<nn::ReLU>(),
                    nn::make<nn::MaxPool2d>(2, 2),  // 28x28 -> 14x14
                    nn::make<nn::Conv2d>(32, 64, 3, same_3x3()), nn::make<nn::BatchNorm2d>(64), nn::make<nn::ReLU>(),
                    nn::make<nn::MaxPool2d>(2, 2)),  // 14x14 -> 7x7
        fc_layers(nn::make<nn::Flatten>(), nn::make<nn::Linear>(64 * 7 * 7, 128), nn::make<nn::ReLU>(),
                  nn::make<nn::Dropout>(0.5), nn::make<nn::Linear>(128, num_classes)) {
    register_module("conv_layers", &conv_layers);
    register_module("fc_layers", &fc_layers);
  }
  Tensor forward(const Tensor& x) override { return fc_layers(conv_layers(x)); }
  std::string name() const override { return "SimpleCNN"; }
  nn::Sequential conv_layers, fc_layers;
};

struct MLP : nn::Module {
  MLP()
      : net(nn::make<nn::Flatten>(), nn::make<nn::Linear>(784, 256), nn::make<nn::ReLU>(), nn::make<nn::Dropout>(0.1),
            nn::make<nn::Linear>(256, 10)) {
    register_module("net", &net);
  }
  Tensor forward(const Tensor& x) override { return net(x); }
  std::string name() const override { return "MLP"; }
  nn::Sequential net;
};

struct MNISTNet : nn::Module {
  explicit MNISTNet(int64_t num_classes = 10, double dropout = 0.25)
      : features(nn::make<nn::Conv2d>(1, 32, 3, same_3x3()), nn::make<nn::BatchNorm2d>(32), nn::make<nn::ReLU>(),
                 nn::make<nn::Conv2d>(32, 32, 3, same_3x3()), nn::make<nn::BatchNorm2d>(32), nn::make<nn::ReLU>(),
                 nn::make<nn::MaxPool2d>(2, 2), nn::make<nn::Dropout2d>(dropout),
                 nn::make<nn::Conv2d>(32, 64, 3, same_3x3()), nn::make<nn::BatchNorm2d>(64), nn::make<nn::ReLU>(),
                 nn::make<nn::Conv2d>(64, 64, 3, same_3x3()), nn::make<nn::BatchNorm2d>(64), nn::make<nn::ReLU>(),
                 nn::make<nn::MaxPool2d>(2, 2), nn::make<nn::Dropout2d>(dropout)),
        classifier(nn::make<nn::Flatten>(), nn::make<nn::Linear>(64 * 7 * 7, 256), nn::make<nn::ReLU>(),
                   nn::make<nn::Dropout>(dropout), nn::make<nn::Linear>(256, num_classes)) {
    register_module("features", &features);
    register_module("classifier", &classifier);
    // The seed's Kaiming initialisation.
    for (nn::Module* m : modules()) {
      if (auto* conv = dynamic_cast<nn::Conv2d*>(m)) {
        nn::init::kaiming_normal_(conv->weight, 0.0, "fan_out", "relu");
      } else if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(m)) {
        nn::init::constant_(bn->weight, 1);
        nn::init::constant_(bn->bias, 0);
      } else if (auto* fc = dynamic_cast<nn::Linear*>(m)) {
        nn::init::kaiming_normal_(fc->weight);
        nn::init::constant_(fc->bias, 0);
      }
    }
  }
  Tensor forward(const Tensor& x) override { return classifier(features(x)); }
  std::string name() const override { return "MNISTNet"; }
  nn::Sequential features, classifier;
};

// "cnn", "mlp" or "mnistnet".
inline std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "cnn") return std::make_shared<SimpleCNN>();
  if (name == "mlp") return std::make_shared<MLP>();
  if (name == "mnistnet") return std::make_shared<MNISTNet>();
  throw ValueError("unknown model '" + name + "' (choose cnn, mlp or mnistnet)");
}

}  // namespace train_demo
