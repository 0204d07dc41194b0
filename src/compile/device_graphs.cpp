// Device graphs for a forward, a forward and its backward, and a compiled graph's run
// (include/ember/compile/device_graphs.h). The capture itself is the backend's (DeviceGraph:
// CUDA graphs); this file arranges what torch.cuda.graph and make_graphed_callables arrange
// around it -- a synchronized device, a side stream, one pool for both graphs, static tensors --
// and, for mode="reduce-overhead" in training, the autograd node that replays the backward.
#include "ember/compile/device_graphs.h"

#include <atomic>
#include <map>
#include <mutex>

#include "autograd/record.h"
#include "ember/autograd/autograd.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/backend.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::compiler {

namespace {

std::atomic<bool> emulated{false};
std::atomic<int64_t> step{0};  // mark_step_begin's count

// One stream per device that captures run on (torch.cuda.graph's default capture stream):
// capturing on the default stream is not allowed.
Stream capture_stream(DeviceBackend& backend, int index) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, Stream> streams;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(int(backend.type()), index);
  auto it = streams.find(key);
  if (it == streams.end()) it = streams.emplace(key, backend.new_stream(index)).first;
  return it->second;
}

// body() captured into graph on the capture stream of `device`, after the device finished what
// was queued before; a failure ends the capture, voids the graph and propagates.
template <class Body> auto captured(DeviceGraph& graph, Device device, int64_t pool, Body&& body) {
  DeviceBackend& backend = device_backend(device.type);
  backend.synchronize(device.index);
  StreamGuard on_side(capture_stream(backend, device.index));
  graph.capture_begin(backend.current_stream(device.index), pool, /*global*/ 0);
  try {
    auto result = body();
    graph.capture_end();
    return result;
  } catch (...) {
    try {
      graph.capture_end();
    } catch (...) {  // the body's error is the one to see
    }
    graph.reset();
    throw;
  }
}

std::function<void()> replayer(std::shared_ptr<DeviceGraph> graph, Device device) {
  return [graph = std::move(graph), device] {
    graph->replay(device_backend(device.type).current_stream(device.index));
  };
}

// The gradients of outputs whose grad slot is defined, for `wants`; undefined where unused.
std::vector<Tensor> gradients(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                              const std::vector<Tensor>& wants, bool allow_unused) {
  std::vector<Tensor> outs, grads;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (grad_outputs[i].defined()) outs.push_back(outputs[i]), grads.push_back(grad_outputs[i]);
  if (outs.empty() || wants.empty()) return std::vector<Tensor>(wants.size());
  return autograd::grad(outs, wants, grads, /*retain_graph=*/false, /*create_graph=*/false, allow_unused);
}

void copy_into(std::vector<Tensor>& statics, const std::vector<Tensor>& values) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < statics.size(); ++i)
    if (statics[i].defined() && values[i].defined()) statics[i].copy_(values[i]);
}

Device device_of(const std::vector<Tensor>& tensors, const char* what) {
  for (const auto& t : tensors)
    if (t.defined()) return resolve_device(t.device());
  EMBER_CHECK(false, what, ": no tensor to tell the device to capture on");
  return Device{};
}

}  // namespace

void mark_step_begin() { ++step; }

namespace detail {
bool set_emulated_device_graphs(bool on) { return emulated.exchange(on); }
}  // namespace detail

bool device_graphable(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return false;
  const Device d = tensors[0].device();
  for (const auto& t : tensors)
    if (t.device() != d) return false;
  if (emulated) return true;
  return d.type == DeviceType::CUDA && has_device_backend(d.type);
}

ForwardGraph capture_forward(const Call& call, Device device, int64_t pool) {
  ForwardGraph f;
  if (emulated) {
    f.static_outputs = call();
    f.replay = [call, outs = f.static_outputs]() mutable { copy_into(outs, call()); };
    return f;
  }
  device = resolve_device(device);
  std::shared_ptr<DeviceGraph> graph = device_backend(device.type).new_graph();
  f.static_outputs = captured(*graph, device, pool, call);
  f.replay = replayer(std::move(graph), device);
  return f;
}

ForwardBackwardGraphs capture_forward_backward(const Call& call, std::vector<Tensor> static_inputs, int64_t pool,
                                               bool allow_unused) {
  ForwardBackwardGraphs c;
  c.static_inputs = std::move(static_inputs);
  std::vector<Tensor> wants;
  for (const auto& t : c.static_inputs)
    if (t.defined() && t.requires_grad()) wants.push_back(t);
  auto grad_slots = [&c](const std::vector<Tensor>& outputs) {
    for (const auto& o : outputs) c.static_grad_outputs.push_back(o.requires_grad() ? empty_like(o) : Tensor());
  };
  auto place_grads = [&c](const std::vector<Tensor>& grads, bool fresh) {
    size_t k = 0;
    for (const auto& t : c.static_inputs) {
      Tensor g = t.defined() && t.requires_grad() ? grads[k++] : Tensor();
      c.static_grad_inputs.push_back(fresh && g.defined() ? empty_like(g) : g);
    }
  };
  if (emulated) {
    // the forward's latest run and its autograd graph: what a real backward graph reads
    auto latest = std::make_shared<std::vector<Tensor>>(call());
    grad_slots(*latest);
    c.static_outputs = *latest;  // (a real capture's outputs are the call's too: an input returned is seen)
    std::vector<Tensor> zeros;
    for (const auto& g : c.static_grad_outputs) zeros.push_back(g.defined() ? zeros_like(g) : Tensor());
    place_grads(gradients(*latest, zeros, wants, allow_unused), /*fresh=*/true);  // which are unused
    c.replay_forward = [call, latest, outs = c.static_outputs]() mutable {
      {
        autograd::EnableGradGuard with_grad;
        *latest = call();
      }
      copy_into(outs, *latest);
    };
    c.replay_backward = [latest, wants, allow_unused, inputs = c.static_inputs, grad_outputs = c.static_grad_outputs,
                         grad_inputs = c.static_grad_inputs]() mutable {
      std::vector<Tensor> grads = gradients(*latest, grad_outputs, wants, allow_unused);
      autograd::NoGradGuard no_grad;
      for (size_t i = 0, k = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
        const Tensor& g = grads[k++];
        if (grad_inputs[i].defined()) g.defined() ? grad_inputs[i].copy_(g) : grad_inputs[i].zero_();
      }
    };
    return c;
  }
  const Device device = device_of(c.static_inputs, "capture_forward_backward");
  DeviceBackend& backend = device_backend(device.type);
  if (pool == 0) pool = backend.graph_pool_handle(device.index);  // both graphs in one pool
  std::shared_ptr<DeviceGraph> forward = backend.new_graph(), backward = backend.new_graph();
  c.static_outputs = captured(*forward, device, pool, call);
  grad_slots(c.static_outputs);
  place_grads(captured(*backward, device, pool,
                       [&] { return gradients(c.static_outputs, c.static_grad_outputs, wants, allow_unused); }),
              /*fresh=*/false);
  c.replay_forward = replayer(std::move(forward), device);
  c.replay_backward = replayer(std::move(backward), device);
  return c;
}

std::vector<Tensor> replay_backward(ForwardBackwardGraphs& graphs, const std::vector<Tensor>& grads) {
  EMBER_CHECK_VALUE(grads.size() == graphs.static_grad_outputs.size(), "replay_backward: expected ",
                    graphs.static_grad_outputs.size(), " output gradients, got ", grads.size());
  {
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor& slot = graphs.static_grad_outputs[i];
      if (!slot.defined()) continue;
      if (!grads[i].defined()) slot.zero_();
      else if (slot.data_ptr() != grads[i].data_ptr()) slot.copy_(grads[i]);
    }
  }
  graphs.replay_backward();
  // copies: a parameter's .grad must not be the graph's buffer, which the next replay overwrites
  // (and accumulating into it would add the buffer to itself)
  std::vector<Tensor> out;
  out.reserve(graphs.static_grad_inputs.size());
  for (const auto& g : graphs.static_grad_inputs) out.push_back(g.defined() ? g.detach().clone() : Tensor());
  return out;
}

struct GraphedRun::State {
  bool training = false;
  size_t n_args = 0;
  std::vector<Tensor> static_args;
  std::vector<const void*> outside_storage;  // where the outside tensors' data was at the capture
  ForwardGraph forward;          // inference
  ForwardBackwardGraphs graphs;  // training
  std::vector<size_t> differentiable;  // training: the outputs with a gradient slot
  std::atomic<int64_t> generation{0}, waiting{0}, replays{0};
  std::atomic<int64_t> waiting_since{0};  // the step (mark_step_begin) of the latest replay still waited on

  void copy_args(const std::vector<Tensor>& inputs) {
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < n_args; ++i)
      if (static_args[i].data_ptr() != inputs[i].data_ptr()) static_args[i].copy_(inputs[i]);
  }
};

namespace {
// Held by a training replay's autograd node until its backward runs: while one is held, a new
// call must not overwrite the activations that backward reads. Dropped with the node (outputs
// freed without a backward), it stops holding.
struct Waiting {
  std::weak_ptr<GraphedRun::State> state;
  std::atomic<bool> held{true};
  explicit Waiting(const std::shared_ptr<GraphedRun::State>& s) : state(s) { ++s->waiting; }
  void release() {
    if (held.exchange(false))
      if (auto s = state.lock()) --s->waiting;
  }
  ~Waiting() { release(); }
};
}  // namespace

GraphedRun::GraphedRun(Run run, const std::vector<Tensor>& inputs, size_t n_args) : state_(std::make_shared<State>()) {
  State& s = *state_;
  EMBER_CHECK_VALUE(n_args <= inputs.size(), "GraphedRun: n_args (", n_args, ") exceeds the ", inputs.size(),
                    " inputs");
  s.n_args = n_args;
  std::vector<Tensor> all;
  all.reserve(inputs.size());
  for (size_t i = 0; i < n_args; ++i) {
    s.static_args.push_back(inputs[i].detach().clone());
    if (inputs[i].requires_grad()) s.static_args.back().requires_grad_(true);
    all.push_back(s.static_args.back());
  }
  for (size_t i = n_args; i < inputs.size(); ++i) {
    all.push_back(inputs[i]);
    s.outside_storage.push_back(inputs[i].data_ptr());
  }
  s.training = autograd::GradMode::is_enabled() && autograd::any_requires_grad(all);
  Call call = [run = std::move(run), all] { return run(all); };
  const std::vector<Tensor>* outs;
  if (s.training) {
    s.graphs = capture_forward_backward(call, all, 0, /*allow_unused=*/true);
    outs = &s.graphs.static_outputs;
    for (size_t i = 0; i < outs->size(); ++i)
      if (s.graphs.static_grad_outputs[i].defined()) s.differentiable.push_back(i);
  } else {
    s.forward = capture_forward(call, device_of(all, "GraphedRun"));
    outs = &s.forward.static_outputs;
  }
  for (const auto& o : *outs)
    for (const auto& t : all)
      EMBER_CHECK(!o.defined() || o.impl() != t.impl(), "it returns one of its inputs");
}

GraphedRun::~GraphedRun() = default;

bool GraphedRun::training() const { return state_->training; }
int64_t GraphedRun::replays() const { return state_->replays; }

bool GraphedRun::reads_current_storage(const std::vector<Tensor>& inputs) const {
  const State& s = *state_;
  for (size_t i = 0; i < s.outside_storage.size(); ++i)
    if (inputs[s.n_args + i].data_ptr() != s.outside_storage[i]) return false;
  return true;
}

std::optional<std::vector<Tensor>> GraphedRun::operator()(const std::vector<Tensor>& inputs) {
  State& s = *state_;
  if (!s.training) {
    s.copy_args(inputs);
    s.forward.replay();
    ++s.replays;
    return s.forward.static_outputs;
  }
  if (s.waiting > 0 && s.waiting_since == step) return std::nullopt;  // (an earlier step's are given up)
  s.copy_args(inputs);
  s.graphs.replay_forward();
  ++s.replays;
  const int64_t generation = ++s.generation;
  std::vector<Tensor> outs, differentiable_outs;
  for (const auto& o : s.graphs.static_outputs) outs.push_back(o.defined() ? o.detach() : o);
  for (size_t i : s.differentiable) differentiable_outs.push_back(outs[i]);
  auto waiting = std::make_shared<Waiting>(state_);
  s.waiting_since = step.load();
  auto node = autograd::record(
      "CompiledGraphsBackward", inputs, differentiable_outs, {},
      [state = state_, waiting, generation](const autograd::variable_list& g, autograd::LambdaNode&) {
        waiting->release();
        State& st = *state;
        EMBER_CHECK(generation == st.generation,
                    "compile(mode='reduce-overhead'): this backward reads activations that a later call of the same "
                    "compiled graph overwrote (its device graphs keep one copy per signature); run backward before "
                    "calling it again, or compile with mode='default'");
        std::vector<Tensor> grads(st.graphs.static_outputs.size());
        for (size_t k = 0; k < st.differentiable.size(); ++k) grads[st.differentiable[k]] = g[k];
        return replay_backward(st.graphs, grads);
      });
  if (!node) waiting->release();  // nothing will run a backward
  return outs;
}

}  // namespace ember::compiler
