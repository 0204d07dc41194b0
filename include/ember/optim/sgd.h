#pragma once
// Stochastic gradient descent with optional momentum / Nesterov (torch.optim.SGD, 1.13).
//   optim::SGD sgd(model.parameters(), {.lr = 0.1, .momentum = 0.9});
// lr is required (as in torch). State per parameter: "momentum_buffer" (None without momentum).
#include <optional>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct SGDOptions {
  std::optional<double> lr;  // required, here or in every param group
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  explicit SGD(std::vector<ParamGroup> groups, SGDOptions options = {});
  void step() override;
};

}  // namespace ember::optim
