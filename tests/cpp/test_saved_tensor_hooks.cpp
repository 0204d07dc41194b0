// Saved-tensor hooks: every tensor autograd saves inside a SavedTensorHooksGuard goes through
// pack, and backward gets it back through unpack; gradients are those of the plain graph.
#include <vector>

#include <gtest/gtest.h>

#include "ember/autograd/saved_tensor_hooks.h"
#include "ember/ember.h"

using namespace ember;

namespace {

// Packs each tensor as a clone kept in a box (as an offload to another memory would), counting calls.
struct CountingHooks {
  int packed = 0, unpacked = 0;
  autograd::SavedTensorHooks pair() {
    return {[this](const Tensor& t) -> std::shared_ptr<void> {
              ++packed;
              return std::make_shared<Tensor>(t.clone());
            },
            [this](const std::shared_ptr<void>& box) {
              ++unpacked;
              return *static_cast<Tensor*>(box.get());
            }};
  }
};

}  // namespace

TEST(SavedTensorHooks, PackAndUnpackEverySavedTensorAndKeepGradients) {
  Tensor x = tensor({1.0, 2.0, 3.0}, {.requires_grad = true});
  Tensor w = tensor({0.5, -1.0, 2.0}, {.requires_grad = true});
  CountingHooks hooks;
  Tensor loss;
  {
    autograd::SavedTensorHooksGuard guard(hooks.pair());
    loss = (x * w).exp().sum();  // mul saves x and w, exp saves its output
  }
  EXPECT_EQ(hooks.packed, 3);
  EXPECT_EQ(hooks.unpacked, 0);
  loss.backward();
  EXPECT_EQ(hooks.unpacked, 3);
  std::vector<float> gx = x.grad().tolist<float>(), gw = w.grad().tolist<float>();
  std::vector<double> xs{1, 2, 3}, ws{0.5, -1, 2};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(gx[i], ws[i] * std::exp(xs[i] * ws[i]), 1e-4);
    EXPECT_NEAR(gw[i], xs[i] * std::exp(xs[i] * ws[i]), 1e-3);
  }
}

TEST(SavedTensorHooks, OnlyInsideTheGuardAndInnermostWins) {
  EXPECT_EQ(autograd::current_saved_tensor_hooks(), nullptr);
  Tensor x = tensor({1.0, 2.0}, {.requires_grad = true});
  CountingHooks outer, inner;
  {
    autograd::SavedTensorHooksGuard a(outer.pair());
    {
      autograd::SavedTensorHooksGuard b(inner.pair());
      (x * x).sum().backward();
    }
    EXPECT_EQ(inner.packed, 2);
    EXPECT_EQ(outer.packed, 0);
  }
  EXPECT_EQ(autograd::current_saved_tensor_hooks(), nullptr);
  (x * x).sum().backward();  // no hooks: nothing counted
  EXPECT_EQ(inner.packed, 2);
  EXPECT_THROW(autograd::pop_saved_tensor_hooks(), Error);
}
