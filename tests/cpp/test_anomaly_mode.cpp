// Anomaly mode: with NaN checks on, backward stops at the first node whose gradient is NaN and
// names it; off (the default), the NaN flows to the leaves as torch lets it.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "ember/autograd/anomaly_mode.h"
#include "ember/ember.h"

using namespace ember;

namespace {
struct AnomalyScope {
  explicit AnomalyScope(bool check_nan) { autograd::set_anomaly_mode(true, check_nan); }
  ~AnomalyScope() { autograd::set_anomaly_mode(false); }
};
}  // namespace

TEST(AnomalyMode, NamesTheNodeThatReturnedNan) {
  Tensor x = tensor({0.0, 1.0}, {.requires_grad = true});
  EXPECT_FALSE(autograd::anomaly_mode_enabled());
  x.sqrt().sum().backward();  // d sqrt(x) at 0 is inf, not NaN: passes either way
  x.mutable_grad().zero_();
  {
    AnomalyScope on(true);
    Tensor y = (x * 0).sqrt().sum();  // sqrt's gradient 0.5/sqrt(0) = inf, times mul's 0 -> NaN in MulBackward0
    try {
      y.backward();
      FAIL() << "backward did not stop at the NaN";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Function 'MulBackward0' returned nan values in its 0th output."),
                std::string::npos)
          << e.what();
    }
  }
  {
    AnomalyScope on_without_check(false);
    x.mutable_grad().zero_();
    (x * 0).sqrt().sum().backward();
    EXPECT_TRUE(std::isnan(x.grad().tolist<float>()[0]));
  }
  EXPECT_FALSE(autograd::anomaly_mode_enabled());
}
