#pragma once
// The graph passes that run when a capture finishes (passes.cpp): constant folding, common
// subexpressions, dead code, and max pooling moved before the relu that feeds it. Matmul
// epilogues, fusion and code generation come after (compile_graph).
#include <vector>

#include "ember/compile/graph.h"

namespace ember::compiler {

// `captured[v]`: the tensor value v held during capture (what folding turns into a constant);
// none (a graph specialised from symbolic sizes, whose captured tensors had other sizes): no folding.
// `simplify` off: dead code only. An export with dynamic shapes wants the graph as the program ran
// it, so that captures at different sizes line up node for node (folding a factory of a dynamic
// size into a constant, or merging two nodes whose sizes happen to coincide, would not).
void run_graph_passes(Graph& g, const std::vector<Tensor>& captured, bool simplify = true);

// Nodes whose results nobody reads and that write nothing go (run_graph_passes does it; a
// rewriting pass that leaves such nodes calls it again).
void remove_dead_nodes(Graph& g);

// Every op with no side effect on its arguments, no randomness, defined contents and arguments the
// passes can see (not opaque Python): what they may drop, merge or precompute.
bool is_pure(const Node& n);

// Ops that write every element of their first argument without reading it (fill_, copy_, the
// random fills): on an `empty` they are how a factory gives it contents.
bool overwrites_first_argument(const char* op);
bool allocates_uninitialised(const char* op);  // empty, empty_strided

// Who reads each value: readers[v] the nodes (by index) that take it, returned[v] whether the
// graph returns it (the rewriting passes move or merge only values nothing else sees).
struct ValueUses {
  std::vector<std::vector<int32_t>> readers;
  std::vector<char> returned;
  explicit ValueUses(const Graph& g);
  // the one node reading v when v is read once and not returned, else -1
  int32_t sole_reader(ValueId v) const {
    return !returned[size_t(v)] && readers[size_t(v)].size() == 1 ? readers[size_t(v)][0] : -1;
  }
};

// Whether a node writes a tensor in place other than a fresh buffer's first fill: then a read
// moved to another place, merged or precomputed could see other contents.
bool writes_shared_tensors(const Graph& g);

// A Linear (addmm with a bias row, or mm without) whose result only an activation (relu, gelu) or a residual
// add reads, through a reshape or not, becomes one _addmm_epilogue node (src/compile/
// matmul_epilogue.cpp): the epilogue runs on each block of the product while it is in cache,
// and one autograd node replaces two. Run by compile_graph when fusion is on, not for export.
void fuse_matmul_epilogues(Graph& g);

// Slices that tile a value along one dim, or selects of its every index (how capture records
// split, chunk and unbind), become one split_with_sizes (unbind) node where gradients flow, so
// that their backward is one cat (stack) as in eager, not a full-size scatter and add per piece
// (src/compile/join_pieces.cpp). Run by compile_graph when fusion is on, not for export.
void join_pieces(Graph& g);

// An out-of-place masked_fill, captured as empty -> copy_ -> masked_fill_, becomes one
// where(mask, value, x) node that elementwise fusion takes (src/compile/masked_fill_as_where.cpp).
// Run by compile_graph when fusion is on, not for export.
void masked_fills_as_where(Graph& g);

}  // namespace ember::compiler
