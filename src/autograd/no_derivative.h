#pragma once
// For a backward op PyTorch defines no derivative of (grid_sampler_2d_backward,
// _embedding_bag_backward): under create_graph its results get a node that refuses, naming the op,
// to be differentiated, instead of results that silently have no second derivative.
#include "autograd/record.h"
#include "ember/core/errors.h"

namespace ember::autograd {

inline void record_no_derivative(const char* node, const char* op, const variable_list& inputs,
                                 const variable_list& outputs) {
  if (!GradMode::is_enabled() || !any_requires_grad(inputs)) return;
  record(node, inputs, outputs, {}, [op](const variable_list&, LambdaNode&) -> variable_list {
    throw ::ember::Error(::ember::detail::cat("derivative for ", op, " is not implemented (as in PyTorch)"));
  });
}

}  // namespace ember::autograd
