// ember::compile for C++ callers (ember/compile/compile.h): per input signature, capture once,
// then run the compiled graph; breaks and an overflowing cache run eagerly.
#include "ember/compile/compile.h"

#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "ember/compile/capture.h"
#include "ember/compile/device_graphs.h"
#include "ember/core/errors.h"

namespace ember {

using compiler::CaptureSession;
using compiler::CompiledGraph;

namespace {

// One input signature: its graph (null: it runs eagerly) and, with mode="reduce-overhead", that
// graph as device graphs, captured on its second compiled run (the first warmed up cuBLAS, cuDNN
// and the backward's kernels).
struct Signature {
  std::shared_ptr<CompiledGraph> graph;
  int64_t runs = 0;
  std::mutex graphs_mu;  // a replay writes the signature's static tensors: one call at a time
  std::unique_ptr<compiler::GraphedRun> graphed;
  std::string no_graphs;  // why it has none (then it runs its kernels one by one)
};

// The signature's graph as device graphs for this call, or nullopt when it runs as it is.
std::optional<std::vector<Tensor>> replayed(Signature& sig, const std::vector<Tensor>& all, size_t n_args,
                                            CompileStats& stats) {
  std::lock_guard<std::mutex> lock(sig.graphs_mu);
  if (!sig.no_graphs.empty() || ++sig.runs < 2 || !compiler::device_graphable(all)) return std::nullopt;
  if (sig.graphed && !sig.graphed->reads_current_storage(all)) sig.graphed.reset();  // a parameter moved: again
  if (!sig.graphed) {
    try {
      sig.graphed = std::make_unique<compiler::GraphedRun>(
          [graph = sig.graph](const std::vector<Tensor>& in) { return graph->run(in); }, all, n_args);
    } catch (const std::exception& e) {
      sig.no_graphs = e.what();
      return std::nullopt;
    }
    ++stats.device_graph_captures;
  }
  auto out = (*sig.graphed)(all);
  if (out) ++stats.device_graph_replays;
  return out;
}

}  // namespace

struct CompiledFunction::Impl {
  Fn fn;
  CompileOptions options;
  std::function<std::vector<Tensor>()> extra_inputs;
  std::function<std::string()> extra_key;
  std::mutex mu;
  // (shared: a call keeps its signature while another thread's new one evicts it)
  std::map<std::string, std::shared_ptr<Signature>> cache;
  CompileStats stats;
  bool warned_limit = false;
};

CompiledFunction::CompiledFunction(Fn fn, CompileOptions options, std::function<std::vector<Tensor>()> extra_inputs,
                                   std::function<std::string()> extra_key)
    : impl_(std::make_shared<Impl>()) {
  EMBER_CHECK_VALUE(options.mode == "default" || options.mode == "reduce-overhead" || options.mode == "max-autotune" ||
                        options.mode == "max-autotune-no-cudagraphs",
                    "compile: unknown mode '", options.mode,
                    "' (expected 'default', 'reduce-overhead', 'max-autotune' or 'max-autotune-no-cudagraphs')");
  EMBER_CHECK_VALUE(options.cache_size_limit >= 0, "compile: cache_size_limit must be >= 0, got ",
                    options.cache_size_limit);
  impl_->fn = std::move(fn);
  impl_->options = std::move(options);
  impl_->extra_inputs = std::move(extra_inputs);
  impl_->extra_key = std::move(extra_key);
}

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& inputs) {
  auto& m = *impl_;
  std::vector<Tensor> all = inputs;
  if (m.extra_inputs)
    for (auto& t : m.extra_inputs()) all.push_back(t);
  std::string extra = m.extra_key ? m.extra_key() : "";
  if (m.extra_inputs)  // the module's own tensors are guarded by identity
    for (size_t i = inputs.size(); i < all.size(); ++i) extra += "#" + std::to_string(reinterpret_cast<uintptr_t>(all[i].impl()));
  const std::string key = compiler::guard_signature(all) + "|" + extra;
  std::shared_ptr<Signature> sig;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (auto it = m.cache.find(key); it != m.cache.end()) {
      known = true;
      sig = it->second;
    } else if (m.options.dynamic && m.cache.size() >= 64) {
      m.cache.erase(m.cache.begin());  // shapes vary freely: make room (kernels stay in the cache)
    } else if (!m.options.dynamic && int64_t(m.cache.size()) >= m.options.cache_size_limit) {
      if (!m.warned_limit)
        std::cerr << "ember.compile: cache_size_limit (" << m.options.cache_size_limit
                  << ") reached; new input signatures run eagerly\n";
      m.warned_limit = true;
      known = true;  // eager
    }
  }
  if (known) {
    if (!sig || !sig->graph) {
      ++m.stats.eager_runs;
      return m.fn(inputs);
    }
    ++m.stats.graph_runs;
    if (m.options.mode == "reduce-overhead")
      if (auto out = replayed(*sig, all, inputs.size(), m.stats)) return *std::move(out);
    return sig->graph->run(all);
  }
  // first call of this signature: run it eagerly under capture
  std::vector<Tensor> out;
  compiler::Graph g;
  std::string reason;
  {
    CaptureSession session(all);
    out = m.fn(inputs);  // (an exception closes the session and propagates)
    g = session.finish(out);
    reason = session.break_reason();
  }
  std::lock_guard<std::mutex> lock(m.mu);
  ++m.stats.captures;
  if (!reason.empty()) {
    EMBER_CHECK(!m.options.fullgraph, "compile(fullgraph=True): the function cannot be captured whole: ", reason);
    m.stats.breaks.push_back(reason);
    m.cache[key] = std::make_shared<Signature>();  // eager from now on
    return out;
  }
  auto made = std::make_shared<Signature>();
  made->graph = compiler::compile_graph(std::move(g), {.fuse = m.options.fuse});
  m.cache[key] = std::move(made);
  return out;
}

const CompileStats& CompiledFunction::stats() const { return impl_->stats; }

std::string CompiledFunction::explain() const {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  std::ostringstream os;
  os << m.stats.captures << " captures, " << m.stats.graph_runs << " compiled runs, " << m.stats.eager_runs
     << " eager runs\n";
  int i = 0;
  for (const auto& [key, signature] : m.cache) {
    const Signature& sig = *signature;
    os << "signature " << i++ << ": " << key << "\n";
    if (sig.graph) os << sig.graph->describe();
    else os << "  (runs eagerly)\n";
    if (sig.graphed) os << "  device graphs (" << (sig.graphed->training() ? "forward and backward" : "forward") << ")\n";
    if (!sig.no_graphs.empty()) os << "  no device graphs: " << sig.no_graphs << "\n";
  }
  for (const auto& b : m.stats.breaks) os << "break: " << b << "\n";
  return os.str();
}

CompiledModule::CompiledModule(std::shared_ptr<nn::Module> module, CompileOptions options)
    : module_(std::move(module)),
      function_(
          [m = module_.get()](const std::vector<Tensor>& in) { return std::vector<Tensor>{m->forward(in[0])}; },
          std::move(options),
          [m = module_.get()] {
            std::vector<Tensor> t = m->parameters();
            for (auto& b : m->buffers()) t.push_back(b);
            return t;
          },
          [m = module_.get()] {
            std::string flags;
            for (auto& [name, sub] : m->named_modules()) flags += sub->is_training() ? '1' : '0';
            return "training=" + flags;
          }) {
  EMBER_CHECK(module_ != nullptr, "compile: expected a module, got a null pointer");
  register_module("_orig_mod", module_);
}

Tensor CompiledModule::forward(const Tensor& x) { return function_({x})[0]; }

std::shared_ptr<CompiledModule> compile(std::shared_ptr<nn::Module> module, CompileOptions options) {
  return std::make_shared<CompiledModule>(std::move(module), std::move(options));
}

CompiledFunction compile(CompiledFunction::Fn fn, CompileOptions options) {
  return CompiledFunction(std::move(fn), std::move(options));
}

}  // namespace ember
