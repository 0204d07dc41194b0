#pragma once
// ember::compile (torch.compile for C++ programs): wraps a function of tensors or a module so the
// first call per input signature captures what it runs (ember/compile/capture.h) and later calls
// run the compiled graph (fused elementwise kernels, the other ops replayed from C++). Results
// are the eager ones; whatever capture cannot stand for runs eagerly (fullgraph: an error).
//
//   auto fast = ember::compile(model);          // std::shared_ptr<nn::Module> -> CompiledModule
//   Tensor y = fast->forward(x);                 // parameters stay the model's own
//   auto f = ember::compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{...}; });
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/compile/compiled_graph.h"
#include "ember/nn/module.h"

namespace ember {

struct CompileOptions {
  bool fullgraph = false;          // a break is an error (naming what and where) instead of eager
  // Graphs stay specialised per shape: a C++ function's branches on sizes cannot be seen, so the
  // symbolic sizes Python's ember.compile fits (its SymSize guards) are not fitted here. true lets
  // shapes vary freely: a new shape is captured in one eager call, reuses the compiled kernels,
  // and does not count against cache_size_limit (the cache keeps 64 signatures).
  bool dynamic = false;
  // "default", "reduce-overhead" (on a GPU: each signature's graph replayed as CUDA graphs from its
  // third call, in training too; outputs are the graphs' tensors, overwritten by the next call),
  // "max-autotune", "max-autotune-no-cudagraphs"
  std::string mode = "default";
  int64_t cache_size_limit = 8;    // signatures captured per function; past it, new ones run eagerly
  bool fuse = true;                // generate fused kernels (off: replay only)
};

struct CompileStats {
  int64_t captures = 0;     // graphs captured (first calls of a signature)
  int64_t graph_runs = 0;   // calls served by a compiled graph
  int64_t eager_runs = 0;   // calls run eagerly (breaks, past the cache limit)
  std::vector<std::string> breaks;  // why a signature runs eagerly
  int64_t device_graph_captures = 0;  // mode="reduce-overhead": signatures captured as device graphs
  int64_t device_graph_replays = 0;   // ... and calls served by a replay
};

class CompiledFunction {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  // extra_inputs: tensors the function reads besides its arguments (a module's parameters and
  // buffers), passed as graph inputs and guarded by identity; extra_key: more of the signature
  // (a module's training flags).
  explicit CompiledFunction(Fn fn, CompileOptions options = {}, std::function<std::vector<Tensor>()> extra_inputs = {},
                            std::function<std::string()> extra_key = {});
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  const CompileStats& stats() const;
  // Every signature's graph, fused kernels and guards, and the breaks.
  std::string explain() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// A module whose forward runs compiled. The original module is its child "_orig_mod" (torch's
// name), so parameters(), state_dict() and optimizers see the same tensors.
class CompiledModule : public nn::Module {
 public:
  CompiledModule(std::shared_ptr<nn::Module> module, CompileOptions options);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "OptimizedModule"; }
  nn::Module& original() { return *module_; }
  CompiledFunction& function() { return function_; }

 private:
  std::shared_ptr<nn::Module> module_;
  CompiledFunction function_;
};

std::shared_ptr<CompiledModule> compile(std::shared_ptr<nn::Module> module, CompileOptions options = {});
CompiledFunction compile(CompiledFunction::Fn fn, CompileOptions options = {});

}  // namespace ember
