#pragma once
// Activation and dropout layers: thin modules over nn::functional.
#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

#define EMBER_SIMPLE_ACTIVATION(Cls, expr)                         \
  class Cls : public Module {                                      \
   public:                                                         \
    Tensor forward(const Tensor& x) override { return expr; }      \
    std::string name() const override { return #Cls; }             \
  };
EMBER_SIMPLE_ACTIVATION(ReLU, functional::relu(x))
EMBER_SIMPLE_ACTIVATION(ReLU6, functional::relu6(x))
EMBER_SIMPLE_ACTIVATION(SiLU, functional::silu(x))
EMBER_SIMPLE_ACTIVATION(Sigmoid, functional::sigmoid(x))
EMBER_SIMPLE_ACTIVATION(Tanh, functional::tanh(x))
#undef EMBER_SIMPLE_ACTIVATION

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override { return functional::leaky_relu(x, negative_slope); }
  std::string name() const override { return "LeakyReLU"; }
  std::string extra_repr() const override;
  double negative_slope;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return functional::gelu(x, approximate); }
  std::string name() const override { return "GELU"; }
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  std::string approximate;
};

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& x) override { return functional::elu(x, alpha); }
  std::string name() const override { return "ELU"; }
  std::string extra_repr() const override;
  double alpha;
};

class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0) : beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x) override { return functional::softplus(x, beta, threshold); }
  std::string name() const override { return "Softplus"; }
  std::string extra_repr() const override;
  double beta, threshold;
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override { return functional::softmax(x, dim); }
  std::string name() const override { return "Softmax"; }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override { return functional::log_softmax(x, dim); }
  std::string name() const override { return "LogSoftmax"; }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};

// Dropout is active in training mode only (module.train() / eval()).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override { return functional::dropout(x, p, is_training()); }
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;
  double p;
};

class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5);
  Tensor forward(const Tensor& x) override { return functional::dropout2d(x, p, is_training()); }
  std::string name() const override { return "Dropout2d"; }
  std::string extra_repr() const override;
  double p;
};

}  // namespace ember::nn
