// Running a captured graph (ember/compile/compiled_graph.h): fused kernels where fusion found
// chains, the recorded ops elsewhere, intermediates released after their last reader.
#include "ember/compile/compiled_graph.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "autograd/record.h"
#include "compile/device_codegen.h"
#include "compile/fusion.h"
#include "compile/kernel_cache.h"
#include "compile/passes.h"
#include "core/parallel.h"
#include "ember/compile/symbolic.h"
#include "ember/core/errors.h"
#include "ember/dispatch/op_recording.h"
#include "ember/ops.h"

namespace ember::compiler {

namespace {

void run_on_pool(int64_t rows, int64_t grain, void* ctx, void (*body)(void*, int64_t, int64_t)) {
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) { body(ctx, r0, r1); });
}

struct Step {
  int32_t node = -1;   // a node replaying its op
  int32_t kernel = -1;  // or a fused kernel
  bool grad_enabled = true;  // grad mode as capture saw it there
};

struct Kernel {
  FusedGroup group;
  FusedKernelFn fn = nullptr;  // a CPU group's
  FusedBackwardFn backward = nullptr;
  std::shared_ptr<const DeviceKernel> device;  // a device group's (device_codegen.h)
  std::vector<char> host_number;  // per operand: a number on the host, passed to a device kernel by value
  bool from_cache = false;
  // where renumbered() reads the group's numbers: a value of the group's shape (kNoValue: none, the
  // kernel cannot be renumbered) and, for an elementwise group over rows, a kInner operand
  ValueId sizes_from = kNoValue, inner_from = kNoValue;
};

// Finds k's sizes_from and inner_from in G (left kNoValue where the group's numbers are not all
// read from its values).
void locate_numbers(const Graph& G, Kernel& k) {
  const FusedGroup& grp = k.group;
  for (size_t o = 0; o < grp.outputs.size(); ++o)
    if (G.values[size_t(grp.outputs[o])].sizes != grp.output_sizes[o]) return;
  if (!grp.rows && grp.inner > 0) {
    for (const auto& o : grp.inputs)
      if (o.kind == FusedOperand::kInner && fusion_detail::numel(G.values[size_t(o.value)].sizes) == grp.inner) {
        k.inner_from = o.value;
        break;
      }
    if (k.inner_from == kNoValue) return;
  }
  for (int32_t i : grp.nodes)
    for (const auto* list : {&G.nodes[size_t(i)].outputs, &G.nodes[size_t(i)].inputs})
      for (ValueId v : *list)
        if (v != kNoValue && G.values[size_t(v)].sizes == grp.sizes) {
          k.sizes_from = v;
          return;
        }
}

// A device kernel's numbers from the host, converted to float as the CPU kernels convert them.
std::vector<float> host_numbers(const Kernel& k, const std::vector<Tensor>& operands) {
  std::vector<float> s(k.group.inputs.size(), 0.0f);
  for (size_t i = 0; i < s.size(); ++i)
    if (k.host_number[i]) s[i] = float(operands[i].item().to_double());
  return s;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The backward of a fused group under autograd: the generated backward kernel gives full-size
// gradients of the operands that need one; a broadcast operand's is summed back to its shape.
autograd::variable_list fused_backward(const Kernel& k, const autograd::variable_list& grads, autograd::LambdaNode& node,
                             const std::vector<size_t>& differentiable) {
  EMBER_CHECK(!autograd::GradMode::is_enabled(), "ember.compile: a double backward (create_graph=True) through a fused kernel "
              "is not supported; compile with fusion off (EMBER_COMPILE_FUSE=0) for it");
  const FusedGroup& grp = k.group;
  const int64_t numel = numel_of(grp.sizes);
  const TensorOptions f32{.dtype = kFloat32, .device = grp.device};
  std::vector<Tensor> operands(grp.inputs.size());
  for (size_t i = 0; i < operands.size(); ++i) operands[i] = node.unpack(i);
  std::vector<Tensor> gout(grp.outputs.size());
  std::vector<const void*> gout_ptr, in_ptr;
  for (size_t o = 0; o < gout.size(); ++o) {
    gout[o] = grads[o].defined() ? grads[o].to(kFloat32).contiguous() : zeros(grp.output_sizes[o], f32);
    gout_ptr.push_back(gout[o].data_ptr());
  }
  for (size_t i = 0; i < operands.size(); ++i)
    in_ptr.push_back(k.device && k.host_number[i] ? nullptr : operands[i].data_ptr());
  std::vector<Tensor> full(grp.inputs.size());
  std::vector<void*> gin_ptr(grp.inputs.size(), nullptr);
  // a CPU kernel sums a kInner operand's gradient per chunk of rows (kGradientChunks)
  const int64_t row_length = grp.inner > 0 ? grp.inner : 4096;
  const int64_t rows = (numel + row_length - 1) / row_length;
  const int64_t chunks = std::min(rows, kGradientChunks);
  auto in_chunks = [&](size_t i) { return !k.device && grp.inputs[i].kind == FusedOperand::kInner; };
  for (size_t d = 0; d < differentiable.size(); ++d) {  // (the kernel writes all of them)
    const size_t i = differentiable[d];
    // (a row group's per-row operand gets one number per row)
    full[i] = in_chunks(i) ? empty({chunks, row_length}, f32)
              : empty(grp.inputs[i].kind == FusedOperand::kRow ? Shape(operands[i].sizes().begin(), operands[i].sizes().end())
                                                               : grp.sizes, f32);
    gin_ptr[i] = full[i].data_ptr();
  }
  {
    profiler::detail::CompositeScope event(grp.rows ? "ember::fused_rows_backward" : "ember::fused_elementwise_backward");
    if (k.device)
      k.device->run_backward(grp.device, numel, grp.inner > 0 ? grp.inner : 1, in_ptr.data(), gout_ptr.data(),
                             gin_ptr.data(), host_numbers(k, operands).data());
    else
      k.backward(numel, row_length, in_ptr.data(), gout_ptr.data(), gin_ptr.data(), &run_on_pool);
  }
  autograd::variable_list out;
  for (size_t d = 0; d < differentiable.size(); ++d) {
    const size_t i = differentiable[d];
    if (!node.needs_input_grad(d)) {
      out.emplace_back();
      continue;
    }
    const Tensor& operand = operands[i];
    Tensor g = grp.inputs[i].kind == FusedOperand::kFull ? full[i]
               : in_chunks(i)                                 ? full[i].sum({0}).reshape(operand.sizes())
                                                              : autograd::sum_to(full[i], operand.sizes());
    out.push_back(g.dtype() == operand.dtype() ? g : g.to(operand.dtype()));
  }
  return out;
}


bool fusion_enabled(const CompileConfig& c) {
  const char* env = std::getenv("EMBER_COMPILE_FUSE");
  return c.fuse && !(env && std::strcmp(env, "0") == 0);
}

}  // namespace

struct CompiledGraph::Impl {
  Graph g;
  std::vector<Step> steps;
  std::vector<std::shared_ptr<const Kernel>> kernels;  // shared: autograd nodes of a run keep theirs
  std::vector<std::vector<ValueId>> release_after;  // per step
  // per kernel step, per output: the operand whose buffer it may take (-1: none), an intermediate
  // read for the last time there, of the output's shape (run() checks nothing else holds it)
  std::vector<std::vector<int32_t>> reuse;
  std::vector<char> clone_constant;  // the graph's own constants some node writes: a copy per run
  int64_t fused_nodes = 0;
  double codegen_seconds = 0;
  // A renumbered compilation (renumbered(), compiled_template.h) runs its template's graph and
  // plan (`base`) with its own kernels' sizes, the replays of the nodes whose arguments changed
  // (per node; empty: the graph's own) and the wrapped numbers that changed; `g` is built from
  // the sites on the first graph() only (a run does not read it).
  std::shared_ptr<const CompiledGraph> base;
  std::vector<Replay> replays;
  std::vector<std::pair<ValueId, Tensor>> numbers;
  std::shared_ptr<const SymbolicShapes> sites;
  std::vector<int64_t> dims;
  std::once_flag built;
  // The graph and plan a run follows.
  const Impl& plan() const { return base ? *base->impl_ : *this; }
};

CompiledGraph::CompiledGraph(Graph g, const CompileConfig& config) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.g = std::move(g);
  // (EMBER_COMPILE_EPILOGUES=0 leaves the products alone, to compare)
  const char* epilogues_env = std::getenv("EMBER_COMPILE_EPILOGUES");
  if (fusion_enabled(config) && !(epilogues_env && std::strcmp(epilogues_env, "0") == 0)) fuse_matmul_epilogues(m.g);
  if (fusion_enabled(config)) join_pieces(m.g);
  if (fusion_enabled(config)) masked_fills_as_where(m.g);
  const Graph& G = m.g;
  std::vector<int32_t> kernel_at(G.nodes.size(), -1);  // the kernel that runs at a node (its group's last)
  std::vector<char> fused(G.nodes.size(), 0);
  if (fusion_enabled(config)) {
    for (auto& grp : find_fusion_groups(G)) {
      Kernel k;
      if (grp.device.is_cpu()) {
        const BuiltKernel built = build_cpu_kernel(grp.source);
        k.fn = built.fn;
        k.backward = built.backward;
        EMBER_CHECK(!grp.needs_grad || k.backward, "ember.compile: the fused kernel has no backward");
        k.from_cache = built.from_cache;
        m.codegen_seconds += built.seconds;
      } else {
        const DeviceKernelBuilder build = device_codegen(grp.device.type);
        EMBER_CHECK(build, "ember.compile: no kernel builder for ", grp.device.str());
        k.device = build(grp.source, {int(grp.inputs.size()), int(grp.outputs.size()), grp.needs_grad});
        k.from_cache = k.device->from_cache;
        m.codegen_seconds += k.device->seconds;
        for (const auto& o : grp.inputs)
          k.host_number.push_back(o.kind == FusedOperand::kScalar && G.values[size_t(o.value)].device.is_cpu());
      }
      for (int32_t i : grp.nodes) fused[size_t(i)] = 1;
      m.fused_nodes += int64_t(grp.nodes.size());
      kernel_at[size_t(grp.nodes.back())] = int32_t(m.kernels.size());
      k.group = std::move(grp);
      locate_numbers(G, k);
      m.kernels.push_back(std::make_shared<const Kernel>(std::move(k)));
    }
  }
  for (size_t i = 0; i < G.nodes.size(); ++i) {
    if (kernel_at[i] >= 0) m.steps.push_back({-1, kernel_at[i], G.nodes[i].grad_enabled});
    else if (!fused[i]) m.steps.push_back({int32_t(i), -1, G.nodes[i].grad_enabled});
  }
  // last reader of each value, so run() can drop it there
  std::vector<int64_t> last(G.values.size(), -1);
  auto reads = [&](const Step& s) -> std::vector<ValueId> {
    if (s.node >= 0) return G.nodes[size_t(s.node)].inputs;
    std::vector<ValueId> v;
    for (const auto& o : m.kernels[size_t(s.kernel)]->group.inputs) v.push_back(o.value);
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
  // memory planning: a fused kernel writes an output into an operand that dies there
  // (EMBER_COMPILE_REUSE=0 turns it off, to compare)
  m.reuse.resize(m.steps.size());
  const char* reuse_env = std::getenv("EMBER_COMPILE_REUSE");
  const bool reuse_on = !(reuse_env && std::strcmp(reuse_env, "0") == 0);
  for (size_t s = 0; s < m.steps.size(); ++s) {
    if (m.steps[s].kernel < 0) continue;
    const FusedGroup& grp = m.kernels[size_t(m.steps[s].kernel)]->group;
    std::vector<char> taken(grp.inputs.size(), 0);
    for (size_t o = 0; o < grp.outputs.size(); ++o) {
      int32_t pick = -1;
      for (size_t i = 0; i < grp.inputs.size() && reuse_on && pick < 0 && grp.output_sizes[o] == grp.sizes; ++i) {
        const ValueId v = grp.inputs[i].value;
        const auto& dies = m.release_after[s];
        if (!taken[i] && grp.inputs[i].kind == FusedOperand::kFull && G.values[size_t(v)].kind == ValueKind::NodeOutput &&
            G.values[size_t(v)].dtype == G.values[size_t(grp.outputs[o])].dtype &&
            std::find(dies.begin(), dies.end(), v) != dies.end())
          pick = int32_t(i);
      }
      if (pick >= 0) taken[size_t(pick)] = 1;
      m.reuse[s].push_back(pick);
    }
  }
  m.clone_constant.assign(G.values.size(), 0);
  for (const auto& n : G.nodes)
    if (n.mutates)
      for (ValueId v : n.inputs)
        if (v != kNoValue && G.values[size_t(v)].kind == ValueKind::Constant && !G.values[size_t(v)].external)
          m.clone_constant[size_t(v)] = 1;
}

CompiledGraph::CompiledGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledGraph::~CompiledGraph() = default;

std::string CompiledGraph::structure_key() const {
  const auto& m = impl_->plan();
  std::ostringstream os;
  for (const Step& s : m.steps) os << (s.node >= 0 ? "n" : "k") << (s.node >= 0 ? s.node : s.kernel) << (s.grad_enabled ? "g " : " ");
  for (const auto& k : impl_->kernels) {
    const FusedGroup& grp = k->group;
    os << "\nkernel " << content_key(grp.source) << (grp.rows ? " rows" : "") << (grp.needs_grad ? " grad" : "")
       << (grp.inner > 0 ? " inner " : " ") << grp.device.str() << " nodes";
    for (int32_t i : grp.nodes) os << " " << i;
    os << " in";
    for (const auto& o : grp.inputs) os << " " << o.value << ":" << int(o.kind) << ":" << dtype_name(o.dtype);
    os << " out";
    for (ValueId v : grp.outputs) os << " " << v;
  }
  os << "\nrelease";
  for (const auto& r : m.release_after) {
    os << " |";
    for (ValueId v : r) os << " " << v;
  }
  os << "\nreuse";
  for (const auto& r : m.reuse) {
    os << " |";
    for (int32_t i : r) os << " " << i;
  }
  os << "\nclone";
  for (size_t v = 0; v < m.clone_constant.size(); ++v)
    if (m.clone_constant[v]) os << " " << v;
  os << "\n" << graph_numbers(m.g).skeleton;
  return os.str();
}

std::shared_ptr<CompiledGraph> CompiledGraph::renumbered(std::shared_ptr<const CompiledGraph> base,
                                                         std::shared_ptr<const SymbolicShapes> sites,
                                                         const std::vector<int64_t>& dims) {
  EMBER_CHECK(base && sites && !base->impl_->base, "ember.compile: renumbering needs a compiled graph and its sites");
  const Impl& b = *base->impl_;
  auto r = std::make_unique<Impl>();
  r->fused_nodes = b.fused_nodes;
  // the values the kernels read their sizes from, at these dims
  std::vector<std::pair<ValueId, Shape>> sizes;
  std::unordered_map<ValueId, size_t> at;
  auto want = [&](ValueId v) {
    if (v != kNoValue && at.emplace(v, sizes.size()).second) sizes.emplace_back(v, b.g.values[size_t(v)].sizes);
  };
  for (const auto& kernel : b.kernels) {
    EMBER_CHECK(kernel->sizes_from != kNoValue, "ember.compile: fused kernel ", &kernel - b.kernels.data(),
                " has sizes that are not a value's; it cannot be renumbered");
    want(kernel->sizes_from);
    want(kernel->inner_from);
    for (ValueId v : kernel->group.outputs) want(v);
  }
  SymbolicShapes::Overlay overlay = sites->overlay(b.g, dims, sizes);
  if (!overlay.replays.empty()) r->replays.resize(b.g.nodes.size());
  for (auto& [n, replay] : overlay.replays) r->replays[size_t(n)] = std::move(replay);
  r->numbers = std::move(overlay.numbers);
  auto sizes_of = [&](ValueId v) -> const Shape& { return sizes[at.at(v)].second; };
  for (const auto& kernel : b.kernels) {
    auto k = std::make_shared<Kernel>(*kernel);
    FusedGroup& grp = k->group;
    grp.sizes = sizes_of(k->sizes_from);
    grp.inner = grp.rows ? (grp.sizes.empty() ? 0 : grp.sizes.back())
                : k->inner_from != kNoValue ? fusion_detail::numel(sizes_of(k->inner_from)) : 0;
    for (size_t o = 0; o < grp.outputs.size(); ++o) grp.output_sizes[o] = sizes_of(grp.outputs[o]);
    r->kernels.push_back(std::move(k));
  }
  r->base = std::move(base);
  r->sites = std::move(sites);
  r->dims = dims;
  return std::shared_ptr<CompiledGraph>(new CompiledGraph(std::move(r)));
}

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

const Graph& CompiledGraph::graph() const {
  Impl& m = *impl_;
  if (m.base) std::call_once(m.built, [&m] { m.g = m.sites->specialise(m.base->impl_->g, m.dims); });
  return m.g;
}
ValueInfo CompiledGraph::input_info(size_t i) const {
  const Impl& m = *impl_;
  const Graph& g = m.plan().g;
  EMBER_CHECK(i < g.inputs.size(), "compiled graph: input ", i, " of ", g.inputs.size());
  const ValueId v = g.inputs[i];
  ValueInfo info = g.values[size_t(v)];
  if (m.base)
    for (const auto& s : m.sites->sites) {
      if (s.item != v || (s.where != SymSite::Size && s.where != SymSite::Stride)) continue;
      auto& dims = s.where == SymSite::Size ? info.sizes : info.strides;
      if (s.index >= 0 && size_t(s.index) < dims.size()) dims[size_t(s.index)] = s.poly.eval(m.dims);
    }
  return info;
}

int64_t CompiledGraph::fused_kernels() const { return int64_t(impl_->kernels.size()); }
int64_t CompiledGraph::fused_nodes() const { return impl_->fused_nodes; }
double CompiledGraph::codegen_seconds() const { return impl_->codegen_seconds; }

std::vector<Tensor> CompiledGraph::run(const std::vector<Tensor>& inputs) const {
  const auto& m = impl_->plan();  // (a renumbered compilation's kernels, replays and numbers: impl_'s)
  const Graph& G = m.g;
  const auto& kernels = impl_->kernels;
  const auto& replays = impl_->replays;
  EMBER_CHECK(inputs.size() == G.inputs.size(), "compiled graph: expected ", G.inputs.size(), " inputs, got ",
              inputs.size());
  std::vector<Tensor> env(G.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(G.inputs[i])] = inputs[i];
  for (size_t v = 0; v < G.values.size(); ++v) {
    const auto& info = G.values[v];
    if (info.kind != ValueKind::Constant || !info.constant.defined()) continue;
    env[v] = m.clone_constant[v] ? info.constant.clone() : info.constant;
  }
  for (const auto& [v, number] : impl_->numbers) env[size_t(v)] = number;
  std::vector<Tensor> args;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const Step& step = m.steps[s];
    autograd::AutoGradMode grad_mode(step.grad_enabled);  // a no_grad() block inside the function
    if (step.node >= 0) {
      const Node& n = G.nodes[size_t(step.node)];
      args.clear();
      for (ValueId v : n.inputs) args.push_back(v == kNoValue ? Tensor() : env[size_t(v)]);
      const Replay& replay = !replays.empty() && replays[size_t(step.node)] ? replays[size_t(step.node)] : n.replay;
      std::vector<Tensor> out = replay(args);
      EMBER_CHECK(out.size() == n.outputs.size(), "compiled graph: ", n.op, " returned ", out.size(),
                  " tensors on replay, ", n.outputs.size(), " when captured");
      for (size_t k = 0; k < out.size(); ++k) env[size_t(n.outputs[k])] = std::move(out[k]);
    } else {
      const std::shared_ptr<const Kernel>& kernel = kernels[size_t(step.kernel)];
      const Kernel& k = *kernel;
      const FusedGroup& grp = k.group;
      in_ptrs.clear();
      out_ptrs.clear();
      std::vector<float> numbers(k.device ? grp.inputs.size() : 0, 0.0f);
      int64_t numel = 1;
      for (int64_t d : grp.sizes) numel *= d;
      for (const auto& o : grp.inputs) {
        // the kernel trusts these layouts: check them (a saved graph may lie about its shapes)
        const Tensor& t = env[size_t(o.value)];
        const bool fits =
            t.defined() && (o.kind == FusedOperand::kScalar ? t.device() == G.values[size_t(o.value)].device
                                                             : t.device() == grp.device) &&
            (o.kind == FusedOperand::kScalar
                 ? t.numel() == 1 && t.dtype() == o.dtype
                 : t.dtype() == o.dtype && t.is_contiguous() &&
                       (o.kind == FusedOperand::kFull  ? Shape(t.sizes().begin(), t.sizes().end()) == grp.sizes
                        : o.kind == FusedOperand::kRow ? grp.inner > 0 && t.numel() == numel / grp.inner
                                                       : t.numel() == grp.inner));
        EMBER_CHECK(fits, "compiled graph: an operand of a fused kernel is not what the graph declared (",
                    t.defined() ? dtype_name(t.dtype()) : "undefined", " of size ", t.defined() ? t.sizes() : IntArrayRef(),
                    " for a kernel over ", grp.sizes, ")");
        in_ptrs.push_back(t.data_ptr());
        if (k.device && k.host_number[in_ptrs.size() - 1]) {  // passed by value
          numbers[in_ptrs.size() - 1] = float(t.item().to_double());
          in_ptrs.back() = nullptr;
        }
      }
      // (an operand the group's autograd node will save must keep its values: no reuse then)
      const bool records = grp.needs_grad && autograd::GradMode::is_enabled();
      for (size_t o = 0; o < grp.outputs.size(); ++o) {
        Tensor t;
        const int32_t from = records ? -1 : m.reuse[s][o];
        if (from >= 0) {
          // only the graph holds it (no Python object, view, or saved copy): the output takes its buffer
          const Tensor& dying = env[size_t(grp.inputs[size_t(from)].value)];
          if (dying.impl_ptr().use_count() == 1 && dying.impl()->storage().use_count() == 1 && dying.is_contiguous())
            t = dying.detach();
        }
        if (!t.defined()) t = empty(grp.output_sizes[o], {.dtype = G.values[size_t(grp.outputs[o])].dtype, .device = grp.device});
        out_ptrs.push_back(t.data_ptr());
        env[size_t(grp.outputs[o])] = std::move(t);
      }
      const int64_t inner = grp.inner > 0 ? grp.inner : 4096;
      {
        // one profiler event per fused kernel, in place of the ops it replaced
        profiler::detail::CompositeScope event(grp.rows ? "ember::fused_rows" : "ember::fused_elementwise");
        if (k.device) k.device->run(grp.device, numel, grp.inner > 0 ? grp.inner : 1, in_ptrs.data(), out_ptrs.data(),
                                    numbers.data());
        else k.fn(numel, inner, in_ptrs.data(), out_ptrs.data(), &run_on_pool);
      }
      if (grp.needs_grad && autograd::GradMode::is_enabled()) {
        // one autograd node for the group: its inputs are the operands that want a gradient
        autograd::variable_list differentiable_inputs, outputs;
        std::vector<size_t> differentiable;
        std::vector<autograd::Save> saves;
        for (size_t i = 0; i < grp.inputs.size(); ++i) {
          const Tensor& t = env[size_t(grp.inputs[i].value)];
          saves.push_back(autograd::saved_input(t));
          if (t.requires_grad()) {
            differentiable.push_back(i);
            differentiable_inputs.push_back(t);
          }
        }
        // (an output that no input wanting a gradient reaches -- a branch of the group that does not
        // touch them -- gets no history, as in eager: its slot stays empty and its gradient zero)
        for (ValueId v : grp.outputs) outputs.push_back(G.values[size_t(v)].requires_grad ? env[size_t(v)] : Tensor());
        autograd::record(grp.rows ? "FusedRowsBackward" : "FusedElementwiseBackward", differentiable_inputs, outputs, std::move(saves),
                         [kernel, differentiable](const autograd::variable_list& g, autograd::LambdaNode& n) -> autograd::variable_list {
                           return fused_backward(*kernel, g, n, differentiable);
                         });
      }
    }
    for (ValueId v : m.release_after[s]) env[size_t(v)] = Tensor();
  }
  std::vector<Tensor> out;
  out.reserve(G.outputs.size());
  for (ValueId v : G.outputs) {
    // the graph's own constants are fresh tensors per call, as eager makes them; an external
    // tensor is returned itself, as eager would
    const auto& info = G.values[size_t(v)];
    const bool owned = info.kind == ValueKind::Constant && !info.external;
    out.push_back(owned ? env[size_t(v)].clone() : env[size_t(v)]);
  }
  return out;
}

std::string CompiledGraph::describe(bool with_source) const {
  graph();  // (a renumbered compilation's graph, built)
  const auto& m = *impl_;
  std::ostringstream os;
  os << m.g.str();
  os << "  (" << m.g.ops_captured << " ops captured; " << m.g.dead_removed << " dead removed, " << m.g.common_merged
     << " common subexpressions merged, " << m.g.constants_folded << " folded into constants; ";
  if (m.g.pools_before_relu) os << m.g.pools_before_relu << " max pools moved before their relu; ";
  if (m.g.matmul_epilogues) os << m.g.matmul_epilogues << " matmul epilogues; ";
  if (m.g.pieces_joined) os << m.g.pieces_joined << " splits joined; ";
  if (m.g.masked_fills) os << m.g.masked_fills << " masked fills made out of place; ";
  os << m.kernels.size() << " fused kernels replace " << m.fused_nodes << " ops)\n";
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const auto& grp = m.kernels[k]->group;
    os << "  fused kernel " << k << ":";
    for (int32_t i : grp.nodes) os << " " << m.g.nodes[size_t(i)].op;
    os << " -> ";
    for (size_t o = 0; o < grp.outputs.size(); ++o) os << (o ? ", " : "") << "%" << grp.outputs[o];
    os << (grp.rows ? " (row reductions)" : "") << (grp.needs_grad ? " (with a fused backward)" : "") << (m.kernels[k]->from_cache ? " (from the disk cache)" : "")
       << "\n";
    if (with_source) os << grp.source << "\n";
  }
  return os.str();
}

}  // namespace ember::compiler
