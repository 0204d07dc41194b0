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

struct CompileConfig {
  bool fuse = true;  // off: every node replays its op (EMBER_COMPILE_FUSE=0 too)
};

class CompiledGraph {
 public:
  explicit CompiledGraph(Graph g, const CompileConfig& config = {});
  ~CompiledGraph();
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Graph& graph() const;
  int64_t fused_kernels() const;   // kernels generated
  int64_t fused_nodes() const;     // captured ops they replace
  double codegen_seconds() const;  // generating and building (0 when the disk cache had them)
  // The graph, its fused kernels and their sources, for explain() and logs.
  std::string describe(bool with_source = false) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// CompiledGraph(g, config), or, when its fused kernels do not build (no compiler, a compiler
// error), the same graph without fusion after a note on stderr.
std::shared_ptr<CompiledGraph> compile_graph(Graph g, const CompileConfig& config = {});

}  // namespace ember::compiler
