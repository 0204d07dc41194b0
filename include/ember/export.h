#pragma once
// Exported programs (torch.export's role; issue 24): a captured graph (ember/compile/) with its
// constants, saved to one file and run later without Python, from C++ or Python.
//
//   ember::exporting::Program p = ember::exporting::load("model.ember");
//   Tensor logits = p.run({images})[0];
//
// The file is a zip: program/graph.json (readable: values with dtype/shape, nodes with op names
// and arguments) and program/constants.safetensors (parameters, buffers, folded constants).
// Loading never runs code from the file: every op must be one of ember's, every argument must
// fit the op's signature, every value must be defined before it is read, every constant must have
// the declared dtype and shape; anything else is an error naming what is wrong.
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ember/compile/compiled_graph.h"
#include "ember/compile/symbolic.h"

namespace ember::compiler {
class CompiledTemplate;  // compiled_template.h
}  // namespace ember::compiler

namespace ember::exporting {

class Program {
 public:
  // `symbolic`: the program's dynamic dims (export's dynamic_shapes), checked against the graph.
  // `compile_now` off: the graph's kernels are built at the first run instead (ember.compile
  // keeps the raw graph of each capture this way, to fit symbolic sizes on).
  Program(compiler::Graph graph, std::map<std::string, std::string> metadata = {},
          std::shared_ptr<const compiler::SymbolicShapes> symbolic = nullptr, bool compile_now = true);
  // Inputs must have the dtypes, devices and shapes the program was exported with, where a
  // dynamic dim takes any size in its range (the graph is specialised to each new set of sizes,
  // the last 16 kept).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const compiler::Graph& graph() const;
  const compiler::SymbolicShapes* symbolic() const { return symbolic_.get(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  int64_t num_inputs() const;
  // Writes the program atomically. Throws for graphs that cannot be saved (opaque Python nodes,
  // complex scalars, explicit generators), naming the op.
  void save(const std::string& path) const;
  std::string save_to_bytes() const;
  // program/graph.json's text (what ONNX export and tools read).
  std::string graph_json() const;
  // The graph with its symbolic sizes at `dims` (one per dim of symbolic()), simplified and
  // compiled; not cached (ember.compile's dynamic shapes keep their own). The caller has checked
  // that the sizes are the ones its inputs give.
  std::shared_ptr<compiler::CompiledGraph> specialise(const std::vector<int64_t>& dims, bool fuse = true) const;
  // How run() got its compiled graphs at new sizes: renumbered from the fitted template, compiled,
  // and why there is no template ("" while none was tried, or one holds).
  struct SpecialisationStats {
    int64_t renumbered = 0, compiled = 0;
    std::string not_fitted;
  };
  SpecialisationStats specialisation_stats() const;

 private:
  std::vector<Tensor> run_exact(const compiler::CompiledGraph& compiled, const std::vector<Tensor>& inputs) const;
  std::shared_ptr<compiler::CompiledGraph> specialised(const std::vector<int64_t>& dims) const;
  std::shared_ptr<compiler::CompiledGraph> compiled() const;  // compiled_, built at first use
  // the graph as exported (what graph(), save and ONNX see); compiled_ runs a copy, which its
  // passes may rewrite (matmul epilogues are ember.compile's, not part of the program)
  compiler::Graph graph_;
  mutable std::shared_ptr<compiler::CompiledGraph> compiled_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const compiler::SymbolicShapes> symbolic_;
  std::vector<compiler::DimBinder> binders_;  // where the inputs give the dynamic dims (symbolic_->check's)
  struct Specialisations {
    std::mutex mu;
    std::map<std::vector<int64_t>, std::pair<std::shared_ptr<compiler::CompiledGraph>, uint64_t>> graphs;
    uint64_t clock = 0;
    // From the second new set of sizes on, a template fitted once (compiled_template.h: fit_template)
    // renumbers the compiled graph for each new set instead of compiling it.
    bool fit_tried = false;
    std::shared_ptr<const compiler::CompiledTemplate> fitted;
    std::string not_fitted;  // why there is no template
    int64_t renumbered = 0, compiled = 0;
  };
  std::shared_ptr<Specialisations> specialisations_ = std::make_shared<Specialisations>();
};

// device: run the program there (constants moved, factories' devices rewritten; one device for the
// whole program), instead of where it was exported.
Program load(const std::string& path, std::optional<Device> device = std::nullopt);
Program load_from_bytes(const std::string& bytes, std::optional<Device> device = std::nullopt);

// The program with the symbolic sizes in `json` (the "symbols"/"symbolic" members of graph.json,
// as export() fits them in Python), checked against its graph.
// `caller_binds`: the dims come from the caller (ember.compile), not all from input sizes.
Program with_symbolic(const Program& p, const std::string& json, bool caller_binds = false);

namespace detail {
// The loader without the zip's CRC check, for the fuzz target (fuzz/fuzz_load_export.cpp): random
// mutations rarely keep a CRC valid, and the checks behind it (JSON, ops, arguments, values,
// constants) are what the fuzzer should reach.
Program load_from_bytes_unchecked_crc(const std::string& bytes);
// The "symbols"/"symbolic" members of a graph.json text, unchecked (nullptr: none).
std::shared_ptr<const compiler::SymbolicShapes> parse_symbolic_json(const std::string& json);
}  // namespace detail

}  // namespace ember::exporting
