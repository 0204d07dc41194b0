#pragma once
// What the dispatcher's Profiler layer calls (src/profiler/recorder.cpp implements it): the op's
// begin and end, and, when shapes are recorded, a description of each argument. Kept apart from
// ember/profiler.h so op.h stays light.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/core/array_ref.h"
#include "ember/core/scalar.h"
#include "ember/dispatch/dispatch_key.h"
#include "ember/tensor.h"

namespace ember::profiler {

// One argument of an op as record_shapes keeps it (see ember/profiler.h).
struct InputInfo {
  std::vector<int64_t> dims;     // a tensor's sizes
  std::vector<int64_t> strides;
  std::string type;              // torch's names: "float", "c10::BFloat16", "long int", "Scalar", ...
  std::string concrete;          // scalars' values as torch prints them ("1", "0.5", "[8, 32]")
  std::vector<std::vector<int64_t>> list_dims;  // a TensorList's sizes, one per tensor
};

namespace detail {

// Who watches dispatched ops, one word so the dispatcher's check is one load: a profiler session
// recording ops, wanting their inputs (record_shapes / with_flops), plain op observers.
inline constexpr uint32_t kRecordOps = 1, kRecordInputs = 2, kPlainObservers = 4;
extern std::atomic<uint32_t> g_op_recording;
inline bool recording_ops() { return g_op_recording.load(std::memory_order_relaxed) & kRecordOps; }
inline bool recording_inputs() { return g_op_recording.load(std::memory_order_relaxed) & kRecordInputs; }

// Opens an op event on this thread; `autograd` says whether the op records a graph node (its
// event then carries the sequence number the node will get). Returns a handle for op_end, or
// -1 when no session is recording.
int64_t op_begin(const char* name, bool autograd, std::vector<InputInfo>&& inputs);
void op_end(int64_t handle);

void describe(std::vector<InputInfo>& out, const Tensor& t);
void describe(std::vector<InputInfo>& out, const std::optional<Tensor>& t);
void describe(std::vector<InputInfo>& out, ArrayRef<Tensor> ts);
void describe(std::vector<InputInfo>& out, ArrayRef<std::optional<Tensor>> ts);
void describe(std::vector<InputInfo>& out, const Scalar& s);
void describe(std::vector<InputInfo>& out, ArrayRef<int64_t> values);
void describe_none(std::vector<InputInfo>& out);

// Turns an op's arguments into InputInfos; anything that is not a tensor, scalar or int list is
// an empty entry, as torch records it.
struct InputDescriber {
  std::vector<InputInfo>& out;
  template <class T> void operator()(const T& v) {
    using U = std::decay_t<T>;
    if constexpr (std::is_same_v<U, Tensor> || std::is_same_v<U, std::optional<Tensor>> ||
                  std::is_same_v<U, ArrayRef<Tensor>> || std::is_same_v<U, ArrayRef<std::optional<Tensor>>> ||
                  std::is_same_v<U, Scalar> || std::is_same_v<U, ArrayRef<int64_t>>)
      describe(out, v);
    else if constexpr (std::is_same_v<U, std::vector<Tensor>>)
      describe(out, ArrayRef<Tensor>(v));
    else if constexpr (std::is_same_v<U, std::vector<int64_t>>)
      describe(out, ArrayRef<int64_t>(v));
    else if constexpr (std::is_same_v<U, bool> || std::is_arithmetic_v<U>)
      describe(out, Scalar(v));
    else if constexpr (std::is_same_v<U, std::optional<Scalar>> || std::is_same_v<U, std::optional<int64_t>> ||
                       std::is_same_v<U, std::optional<double>> || std::is_same_v<U, std::optional<bool>>) {
      if (v) (*this)(*v); else describe_none(out);
    } else
      describe_none(out);
  }
};

bool any_requires_grad_for_record(const Tensor& t);
// The innermost composite being recorded on this thread (by name).
bool is_open_composite(const char* name);
const char* swap_open_composite(const char* name);  // returns the previous one

// A composite (an op built from other ops, e.g. linear or cross_entropy) recorded as one event
// with its children inside, as torch shows aten::linear over aten::addmm.
class CompositeScope {
 public:
  template <class... A>
  CompositeScope(const char* name, const A&... args) {
    // Autocast re-enters a composite with cast arguments: that inner call is not a second op.
    if (!recording_ops() || is_open_composite(name)) return;
    std::vector<InputInfo> inputs;
    if (recording_inputs()) {
      inputs.reserve(sizeof...(A));
      InputDescriber d{inputs};
      (d(args), ...);
    }
    bool autograd = (grad_check(args) || ...);
    handle_ = op_begin(name, autograd, std::move(inputs));
    if (handle_ >= 0) saved_ = swap_open_composite(name);
  }
  ~CompositeScope() {
    if (handle_ < 0) return;
    op_end(handle_);
    swap_open_composite(saved_);
  }
  CompositeScope(const CompositeScope&) = delete;
  CompositeScope& operator=(const CompositeScope&) = delete;

 private:
  template <class T> static bool grad_check(const T& v) {
    if constexpr (std::is_same_v<std::decay_t<T>, Tensor>) return any_requires_grad_for_record(v);
    else if constexpr (std::is_same_v<std::decay_t<T>, std::optional<Tensor>>) return v && any_requires_grad_for_record(*v);
    else return false;
  }
  int64_t handle_ = -1;
  const char* saved_ = nullptr;
};

}  // namespace detail
}  // namespace ember::profiler

// At a composite's entry: records it as an op named `name` ("linear") with its arguments.
#define EMBER_RECORD_COMPOSITE(name, ...) \
  ::ember::profiler::detail::CompositeScope ember_record_composite_scope_{name, __VA_ARGS__}
