#pragma once
// Tensor parallelism for C++ models (Megatron-LM's layers; Python's is
// ember.distributed.tensor.parallel). Each rank of the group holds a slice of a Linear and every
// rank runs the same batch:
//   ColumnParallelLinear  weight rows out/n per rank (and the bias), input whole, output this
//                         rank's slice of the features (or gathered whole: gather_output)
//   RowParallelLinear     weight columns in/n per rank, input this rank's slice of the features
//                         (or cut from a whole input: !input_is_parallel), the partial products
//                         summed over the group, then the (replicated) bias added once
// A column-parallel layer feeding a row-parallel one needs one all-reduce forward and one
// backward. The communication steps are each other's adjoints:
//   copy_to      identity forward, all-reduce of the gradient
//   reduce_from  all-reduce forward, identity backward
//   gather_from  all-gather of the last dim forward, this rank's chunk of the gradient
//   scatter_to   this rank's chunk of the last dim forward, all-gather of the gradient
//
//   auto fc1 = ColumnParallelLinear::from(model.fc1, pg);   // slices rank r's part of a whole layer
//   auto fc2 = RowParallelLinear::from(model.fc2, pg);
//   Tensor y = fc2->forward(relu(fc1->forward(x)));         // equals model's y on every rank
#include <memory>

#include "ember/distributed/process_group.h"
#include "ember/nn/linear.h"

namespace ember::distributed::tensor_parallel {

Tensor copy_to(const Tensor& x, const std::shared_ptr<ProcessGroup>& group);
Tensor reduce_from(const Tensor& x, const std::shared_ptr<ProcessGroup>& group);
Tensor gather_from(const Tensor& x, const std::shared_ptr<ProcessGroup>& group);
Tensor scatter_to(const Tensor& x, const std::shared_ptr<ProcessGroup>& group);

class ColumnParallelLinear : public nn::Module {
 public:
  // This rank's rows of `whole` (out_features must divide by the group size).
  static std::shared_ptr<ColumnParallelLinear> from(const nn::Linear& whole, std::shared_ptr<ProcessGroup> group,
                                                    bool gather_output = false);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "ColumnParallelLinear"; }
  std::string extra_repr() const override;

  Tensor weight, bias;  // [out / n, in], [out / n]
  int64_t in_features = 0, out_features = 0;  // the whole layer's
  bool gather_output = false;

 private:
  std::shared_ptr<ProcessGroup> group_;
};

class RowParallelLinear : public nn::Module {
 public:
  // This rank's columns of `whole` (in_features must divide by the group size).
  static std::shared_ptr<RowParallelLinear> from(const nn::Linear& whole, std::shared_ptr<ProcessGroup> group,
                                                 bool input_is_parallel = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "RowParallelLinear"; }
  std::string extra_repr() const override;

  Tensor weight, bias;  // [out, in / n], [out] (replicated)
  int64_t in_features = 0, out_features = 0;
  bool input_is_parallel = true;

 private:
  std::shared_ptr<ProcessGroup> group_;
};

}  // namespace ember::distributed::tensor_parallel
