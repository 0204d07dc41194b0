#pragma once
// Grad mode: whether ops record history. Thread-local and nestable, as in PyTorch.
#include "ember/dispatch/dispatch_key.h"

namespace ember::autograd {

struct GradMode {
  static bool is_enabled() { return local_dispatch_state().grad_enabled; }
  static void set_enabled(bool on) { local_dispatch_state().grad_enabled = on; }
};

// Sets grad mode for a scope and restores the previous mode on exit.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;
 private:
  bool prev_;
};

struct NoGradGuard : AutoGradMode { NoGradGuard() : AutoGradMode(false) {} };
struct EnableGradGuard : AutoGradMode { EnableGradGuard() : AutoGradMode(true) {} };

// torch.inference_mode: no history is recorded. (ember does not yet mark the tensors made inside
// as inference tensors; it behaves as no_grad.)
struct InferenceMode : AutoGradMode { explicit InferenceMode(bool on = true) : AutoGradMode(!on) {} };

}  // namespace ember::autograd

namespace ember {
using autograd::EnableGradGuard;
using autograd::InferenceMode;
using autograd::NoGradGuard;
inline void set_grad_enabled(bool on) { autograd::GradMode::set_enabled(on); }
inline bool is_grad_enabled() { return autograd::GradMode::is_enabled(); }
}  // namespace ember
