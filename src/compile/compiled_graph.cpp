// Running a captured graph (ember/compile/compiled_graph.h): fused kernels where fusion found
// chains, the recorded ops elsewhere, intermediates released after their last reader.
#include "ember/compile/compiled_graph.h"

#include <cstdlib>
#include <iostream>
#include <cstring>
#include <sstream>

#include "compile/fusion.h"
#include "core/parallel.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::compiler {

namespace {

struct Step {
  int32_t node = -1;   // a node replaying its op
  int32_t kernel = -1;  // or a fused kernel
};

struct Kernel {
  FusedGroup group;
  FusedKernelFn fn = nullptr;
  bool from_cache = false;
};

void run_on_pool(int64_t rows, int64_t grain, void* ctx, void (*body)(void*, int64_t, int64_t)) {
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) { body(ctx, r0, r1); });
}

bool fusion_enabled(const CompileConfig& c) {
  const char* env = std::getenv("EMBER_COMPILE_FUSE");
  return c.fuse && !(env && std::strcmp(env, "0") == 0);
}

}  // namespace

struct CompiledGraph::Impl {
  Graph g;
  std::vector<Step> steps;
  std::vector<Kernel> kernels;
  std::vector<std::vector<ValueId>> release_after;  // per step
  std::vector<char> clone_constant;                 // constants some node writes: a copy per run
  int64_t fused_nodes = 0;
  double codegen_seconds = 0;
};

CompiledGraph::CompiledGraph(Graph g, const CompileConfig& config) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.g = std::move(g);
  const Graph& G = m.g;
  std::vector<int32_t> kernel_at(G.nodes.size(), -1);  // the kernel that runs at a node (its group's last)
  std::vector<char> fused(G.nodes.size(), 0);
  if (fusion_enabled(config)) {
    for (auto& grp : find_fusion_groups(G)) {
      Kernel k;
      const BuiltKernel built = build_cpu_kernel(grp.source);
      k.fn = built.fn;
      k.from_cache = built.from_cache;
      m.codegen_seconds += built.seconds;
      for (int32_t i : grp.nodes) fused[size_t(i)] = 1;
      m.fused_nodes += int64_t(grp.nodes.size());
      kernel_at[size_t(grp.nodes.back())] = int32_t(m.kernels.size());
      k.group = std::move(grp);
      m.kernels.push_back(std::move(k));
    }
  }
  for (size_t i = 0; i < G.nodes.size(); ++i) {
    if (kernel_at[i] >= 0) m.steps.push_back({-1, kernel_at[i]});
    else if (!fused[i]) m.steps.push_back({int32_t(i), -1});
  }
  // last reader of each value, so run() can drop it there
  std::vector<int64_t> last(G.values.size(), -1);
  auto reads = [&](const Step& s) -> std::vector<ValueId> {
    if (s.node >= 0) return G.nodes[size_t(s.node)].inputs;
    std::vector<ValueId> v;
    for (const auto& o : m.kernels[size_t(s.kernel)].group.inputs) v.push_back(o.value);
    return v;
  };
  for (size_t s = 0; s < m.steps.size(); ++s)
    for (ValueId v : reads(m.steps[s]))
      if (v != kNoValue) last[size_t(v)] = int64_t(s);
  std::vector<char> keep(G.values.size(), 0);
  for (ValueId v : G.outputs) keep[size_t(v)] = 1;
  m.release_after.resize(m.steps.size());
  for (size_t v = 0; v < G.values.size(); ++v)
    if (last[v] >= 0 && !keep[v] && G.values[v].kind == ValueKind::NodeOutput)
      m.release_after[size_t(last[v])].push_back(ValueId(v));
  m.clone_constant.assign(G.values.size(), 0);
  for (const auto& n : G.nodes)
    if (n.mutates)
      for (ValueId v : n.inputs)
        if (v != kNoValue && G.values[size_t(v)].kind == ValueKind::Constant) m.clone_constant[size_t(v)] = 1;
}

CompiledGraph::~CompiledGraph() = default;

std::shared_ptr<CompiledGraph> compile_graph(Graph g, const CompileConfig& config) {
  if (!config.fuse) return std::make_shared<CompiledGraph>(std::move(g), config);
  try {
    return std::make_shared<CompiledGraph>(g, config);
  } catch (const std::exception& e) {
    std::cerr << "ember.compile: " << e.what() << "\nember.compile: running this graph without fused kernels\n";
    CompileConfig plain = config;
    plain.fuse = false;
    return std::make_shared<CompiledGraph>(std::move(g), plain);
  }
}

const Graph& CompiledGraph::graph() const { return impl_->g; }
int64_t CompiledGraph::fused_kernels() const { return int64_t(impl_->kernels.size()); }
int64_t CompiledGraph::fused_nodes() const { return impl_->fused_nodes; }
double CompiledGraph::codegen_seconds() const { return impl_->codegen_seconds; }

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& inputs) const {
  const auto& m = *impl_;
  const Graph& G = m.g;
  EMBER_CHECK(inputs.size() == G.inputs.size(), "compiled graph: expected ", G.inputs.size(), " inputs, got ",
              inputs.size());
  std::vector<Tensor> env(G.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(G.inputs[i])] = inputs[i];
  for (size_t v = 0; v < G.values.size(); ++v) {
    const auto& info = G.values[v];
    if (info.kind != ValueKind::Constant || !info.constant.defined()) continue;
    env[v] = m.clone_constant[v] ? info.constant.clone() : info.constant;
  }
  std::vector<Tensor> args;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const Step& step = m.steps[s];
    if (step.node >= 0) {
      const Node& n = G.nodes[size_t(step.node)];
      args.clear();
      for (ValueId v : n.inputs) args.push_back(v == kNoValue ? Tensor() : env[size_t(v)]);
      std::vector<Tensor> out = n.replay(args);
      EMBER_CHECK(out.size() == n.outputs.size(), "compiled graph: ", n.op, " returned ", out.size(),
                  " tensors on replay, ", n.outputs.size(), " when captured");
      for (size_t k = 0; k < out.size(); ++k) env[size_t(n.outputs[k])] = std::move(out[k]);
    } else {
      const Kernel& k = m.kernels[size_t(step.kernel)];
      const FusedGroup& grp = k.group;
      in_ptrs.clear();
      out_ptrs.clear();
      for (const auto& o : grp.inputs) in_ptrs.push_back(env[size_t(o.value)].data_ptr());
      int64_t numel = 1;
      for (int64_t d : grp.sizes) numel *= d;
      for (ValueId v : grp.outputs) {
        Tensor t = empty(grp.sizes, {.dtype = kFloat32, .device = Device(DeviceType::CPU)});
        out_ptrs.push_back(t.data_ptr());
        env[size_t(v)] = std::move(t);
      }
      const int64_t inner = grp.inner > 0 ? grp.inner : 4096;
      k.fn(numel, inner, in_ptrs.data(), out_ptrs.data(), &run_on_pool);
    }
    for (ValueId v : m.release_after[s]) env[size_t(v)] = Tensor();
  }
  std::vector<Tensor> out;
  out.reserve(G.outputs.size());
  for (ValueId v : G.outputs) {
    const bool constant = G.values[size_t(v)].kind == ValueKind::Constant;
    out.push_back(constant ? env[size_t(v)].clone() : env[size_t(v)]);  // a fresh tensor per call, as eager
  }
  return out;
}

std::string CompiledGraph::describe(bool with_source) const {
  const auto& m = *impl_;
  std::ostringstream os;
  os << m.g.str();
  os << "  (" << m.g.ops_captured << " ops captured; " << m.g.dead_removed << " dead removed, " << m.g.common_merged
     << " common subexpressions merged, " << m.g.constants_folded << " folded into constants; " << m.kernels.size()
     << " fused kernels replace " << m.fused_nodes << " ops)\n";
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const auto& grp = m.kernels[k].group;
    os << "  fused kernel " << k << ":";
    for (int32_t i : grp.nodes) os << " " << m.g.nodes[size_t(i)].op;
    os << " -> ";
    for (size_t o = 0; o < grp.outputs.size(); ++o) os << (o ? ", " : "") << "%" << grp.outputs[o];
    os << (m.kernels[k].from_cache ? " (from the disk cache)" : "") << "\n";
    if (with_source) os << grp.source << "\n";
  }
  return os.str();
}

}  // namespace ember::compiler
