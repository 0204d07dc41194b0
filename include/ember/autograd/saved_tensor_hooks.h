#pragma once
// Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks): while a pair is installed on a
// thread, every tensor autograd saves for backward there goes through `pack`, whose result is
// kept instead of the tensor, and comes back through `unpack` when backward needs it. Offloading
// activations to the CPU, compressing them, or recomputing them are built on this.
#include <functional>
#include <memory>

#include "ember/tensor.h"

namespace ember::autograd {

// What pack returns is opaque to autograd: it only hands it back to the same pair's unpack.
using PackHook = std::function<std::shared_ptr<void>(const Tensor&)>;
using UnpackHook = std::function<Tensor(const std::shared_ptr<void>&)>;

struct SavedTensorHooks {
  PackHook pack;
  UnpackHook unpack;
};

// A stack per thread: the innermost pair applies.
void push_saved_tensor_hooks(SavedTensorHooks hooks);
void pop_saved_tensor_hooks();
// The innermost pair, or null when none is installed on this thread.
const SavedTensorHooks* current_saved_tensor_hooks();

// RAII for C++ callers: installs a pair for the scope.
class SavedTensorHooksGuard {
 public:
  explicit SavedTensorHooksGuard(SavedTensorHooks hooks) { push_saved_tensor_hooks(std::move(hooks)); }
  ~SavedTensorHooksGuard() { pop_saved_tensor_hooks(); }
  SavedTensorHooksGuard(const SavedTensorHooksGuard&) = delete;
  SavedTensorHooksGuard& operator=(const SavedTensorHooksGuard&) = delete;
};

}  // namespace ember::autograd
