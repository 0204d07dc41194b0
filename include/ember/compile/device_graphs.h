#pragma once
// Work captured as device graphs (torch.cuda.graphs) and replayed as one launch: a forward alone
// (inference), or a forward and its backward as two graphs in one memory pool
// (torch.cuda.make_graphed_callables' core). GraphedRun puts a compiled graph's run behind them
// for mode="reduce-overhead" (ember::compile, and Python's ember.compile and
// make_graphed_callables through the bindings). src/compile/device_graphs.cpp.
//
// Replays write the tensors the capture allocated: new inputs are copied into the static inputs
// the capture read, the outputs are the capture's own tensors (the next replay overwrites them),
// and the backward reads the activations of the latest forward replay.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::compiler {

using Call = std::function<std::vector<Tensor>()>;

struct ForwardGraph {
  std::vector<Tensor> static_outputs;
  std::function<void()> replay;
};

// What capture_forward_backward leaves. static_grad_outputs: one per output, undefined for
// outputs without grad (fill the others, then replay_backward). static_grad_inputs: one per
// static input, undefined where it needs no gradient or its gradient is unused.
struct ForwardBackwardGraphs {
  std::vector<Tensor> static_inputs, static_outputs, static_grad_outputs, static_grad_inputs;
  std::function<void()> replay_forward, replay_backward;
};

// call() (which computes from tensors the caller keeps as static inputs) captured on a side
// stream of the device of `device` after synchronizing it; nothing runs. pool: 0 for a pool of
// its own. Throws (the capture void, the streams as before) when the work cannot be captured.
ForwardGraph capture_forward(const Call& call, Device device, int64_t pool = 0);
// call() captured as a forward graph, and the gradients of its outputs for the static inputs
// that require grad as a backward graph, both in one pool.
ForwardBackwardGraphs capture_forward_backward(const Call& call, std::vector<Tensor> static_inputs, int64_t pool = 0,
                                               bool allow_unused = false);
// The backward graph replayed for these output gradients (undefined: zeros); the input
// gradients as new tensors (undefined where there is none), so .grad never aliases the graph's.
std::vector<Tensor> replay_backward(ForwardBackwardGraphs& graphs, const std::vector<Tensor>& grads);

// Whether tensors can run as device graphs: all on one device whose backend captures graphs.
bool device_graphable(const std::vector<Tensor>& tensors);

// A compiled graph's run (over its arguments, then the tensors it reads from outside: parameters,
// buffers) replayed as device graphs. Arguments are copied into static tensors of its own;
// outside tensors are read in place, so in-place updates (an optimizer's) are seen. Training when
// grad mode is on and an input requires grad: forward and backward graphs behind one autograd
// node ("CompiledGraphsBackward") whose backward replays the backward graph. The activations
// exist once: a call made while an earlier replay's backward is still to come runs without the
// graphs (run() returns nullopt), and a backward whose activations a later replay overwrote throws.
class GraphedRun {
 public:
  using Run = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  // Captures run over a copy of inputs' first n_args and the rest as they are; throws with the
  // reason when it cannot (an op that synchronizes, random numbers, an input returned).
  GraphedRun(Run run, const std::vector<Tensor>& inputs, size_t n_args);
  ~GraphedRun();
  // A replay's outputs for these inputs (same signature as the capture's), or nullopt when this
  // call must run the graph itself.
  std::optional<std::vector<Tensor>> operator()(const std::vector<Tensor>& inputs);
  // False when an outside tensor has new storage since the capture (`p.data = ...`): capture again.
  bool reads_current_storage(const std::vector<Tensor>& inputs) const;
  bool training() const;
  int64_t replays() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// torch.compiler.cudagraph_mark_step_begin: a new iteration starts, so the outputs and pending
// backwards of earlier replays will not be used (an evaluation loop in grad mode that never calls
// backward): later calls replay instead of waiting for those backwards, and one of them run
// anyway after a replay overwrote its activations throws, as any stale backward.
void mark_step_begin();

namespace detail {
// Test seam for machines without a GPU: captures on any device run the call once, and a
// "replay" runs it again and copies its results into the static outputs (the backward: the
// gradients of the latest forward run), so the static-tensor semantics of real graphs can be
// checked on the CPU. Returns the previous setting.
bool set_emulated_device_graphs(bool on);
}  // namespace detail

}  // namespace ember::compiler
