// Whole-node hooks: a pre-hook replaces the gradients arriving at a node, a post-hook the ones
// it computed; removing them restores plain backward.
#include <gtest/gtest.h>

#include "ember/ember.h"

using namespace ember;
using autograd::variable_list;

TEST(NodeHooks, PreAndPostHooksReplaceGradients) {
  Tensor x = tensor({1.0, 2.0}, {.requires_grad = true});
  Tensor y = x * x;
  int pre_calls = 0;
  int id = y.grad_fn()->add_node_pre_hook([&](const variable_list& go) {
    ++pre_calls;
    return variable_list{go[0] * 10};
  });
  y.sum().backward();
  EXPECT_EQ(pre_calls, 1);
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{20, 40}));  // 10 * 2x

  Tensor z = x * 3;
  z.grad_fn()->add_node_post_hook([](const variable_list& gi, const variable_list& go) {
    EXPECT_EQ(go.size(), 1u);
    return variable_list{gi[0] * 0 + 1, Tensor()};  // x's gradient becomes ones
  });
  x.mutable_grad().zero_();
  z.sum().backward();
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{1, 1}));

  y.grad_fn()->remove_node_hook(id);
  EXPECT_TRUE(y.grad_fn()->node_pre_hooks().empty());
}
