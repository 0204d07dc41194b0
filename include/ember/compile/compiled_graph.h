#pragma once
// A captured graph made runnable (src/compile/compiled_graph.cpp): its elementwise chains fused
// into kernels generated as C++ and built by the system compiler at run time (fusion.cpp,
// codegen_cpu.cpp), every other node re-running its op. Running frees each intermediate after
// its last reader, so the caching allocator hands its buffer to the next one.
#include <memory>
#include <string>
#include <vector>

#include "ember/compile/graph.h"

namespace ember::compiler {

struct SymbolicShapes;  // symbolic.h

struct CompileConfig {
  bool fuse = true;  // off: every node replays its op (EMBER_COMPILE_FUSE=0 too)
};

class CompiledGraph {
 public:
  explicit CompiledGraph(Graph g, const CompileConfig& config = {});
  ~CompiledGraph();
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Graph& graph() const;
  // Input i's value (dtype, device, sizes, strides) as this compilation takes it; a renumbered
  // one's without building its graph.
  ValueInfo input_info(size_t i) const;
  int64_t fused_kernels() const;   // kernels generated
  int64_t fused_nodes() const;     // captured ops they replace
  double codegen_seconds() const;  // generating and building (0 when the disk cache had them)
  // The graph, its fused kernels and their sources, for explain() and logs.
  std::string describe(bool with_source = false) const;
  // What decides a run besides the graph's numbers: the steps, each kernel (source, operands and
  // their kinds, outputs), when buffers are released and which ones outputs reuse, and the graph's
  // skeleton (symbolic.h: graph_numbers). Two compilations of one fitted graph at different sizes
  // with equal keys differ only in numbers (compiled_template.h).
  std::string structure_key() const;
  // `base` with `sites` (over its graph) evaluated at `dims`: the same kernels, steps and buffer
  // plan, shared; the replays of the nodes whose arguments change, the Python numbers and each
  // kernel's sizes (read from its values) its own. graph() builds the renumbered graph on first
  // use. Throws when a kernel's sizes are not those of a value of the graph.
  static std::shared_ptr<CompiledGraph> renumbered(std::shared_ptr<const CompiledGraph> base,
                                                   std::shared_ptr<const SymbolicShapes> sites,
                                                   const std::vector<int64_t>& dims);

  struct Impl;

 private:
  explicit CompiledGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// CompiledGraph(g, config), or, when its fused kernels do not build (no compiler, a compiler
// error), the same graph without fusion after a note on stderr.
std::shared_ptr<CompiledGraph> compile_graph(Graph g, const CompileConfig& config = {});

}  // namespace ember::compiler
