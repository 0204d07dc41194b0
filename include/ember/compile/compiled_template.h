#pragma once
// A compiled graph that runs at sizes it was not compiled at (src/compile/compiled_template.cpp).
//
// ember.compile's dynamic shapes fit a graph with symbolic sizes over a function's captures and
// specialise it per new set of sizes: substitute, simplify, fuse, plan (Program::specialise). That
// costs ~0.1-0.5 ms a size, paid on every step of a decode loop whose cache grows. When the
// compilations at the captured sizes are the same but for their numbers (equal
// CompiledGraph::structure_key and graph skeletons), the numbers of the compiled graph are fitted
// as polynomials of the sizes too (python/ember/_compile_dynamic.py), and a new size only
// renumbers the compiled graph: the kernels, steps and buffer plan are kept.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/compile/compiled_graph.h"
#include "ember/compile/symbolic.h"

namespace ember::compiler {

class CompiledTemplate {
 public:
  // `sites_json`: the "symbols"/"symbolic" members of export's graph.json over base's graph (the
  // example sizes: those base was compiled at). Throws ValueError when they do not hold there, or
  // when a kernel's sizes cannot be renumbered.
  CompiledTemplate(std::shared_ptr<const CompiledGraph> base, const std::string& sites_json);
  CompiledTemplate(std::shared_ptr<const CompiledGraph> base, std::shared_ptr<const SymbolicShapes> sites);
  // base's compilation at `dims` (one size per symbol, in the sites' order), or nullptr where a
  // size that is 2 or more in base would be 0 or 1 (broadcasting and squeezing: the passes may
  // have decided otherwise there; the caller compiles those sizes anew).
  std::shared_ptr<CompiledGraph> at(const std::vector<int64_t>& dims) const;
  int64_t sites() const { return int64_t(sites_->sites.size()); }

 private:
  std::shared_ptr<const CompiledGraph> base_;
  std::shared_ptr<const SymbolicShapes> sites_;
};

// A template fitted in C++, for exported programs (which run without Python to fit with;
// src/compile/fit_template.cpp). `compile(dims)` is called on a grid of sizes: per dim, the base
// size (the example, or lower where the range ends) and as many steps past it as the highest power
// any of `sym`'s polynomials gives that dim, plus one point beyond in every dim to check. The
// compiled numbers that differ are interpolated exactly (Newton's forward differences in integer
// arithmetic, turned into integer polynomials of the dims). nullptr, with the reason in `why`,
// when the compilations differ beyond their numbers, a number is no integer polynomial of those
// degrees, the grid leaves the dims' ranges or would take more than 64 compilations.
using CompileAt = std::function<std::shared_ptr<CompiledGraph>(const std::vector<int64_t>& dims)>;
std::shared_ptr<const CompiledTemplate> fit_template(const SymbolicShapes& sym, const CompileAt& compile, std::string& why);

}  // namespace ember::compiler
