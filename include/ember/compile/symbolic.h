#pragma once
// Symbolic sizes of an exported program (export's dynamic_shapes, issue 24): which sizes, strides
// and integer arguments of a captured graph depend on the program's dynamic dims, each as a
// polynomial in them ("batch*seq", "768*seq", "12*seq^2").
//
// ember's tensors have concrete sizes, so a graph is never traced with symbols: export() captures
// the forward at several sizes of each dynamic dim, checks the graphs are the same node for node,
// and fits every number that changed (python/ember/export.py). A program then specialises its graph
// to the sizes of each call (cached per size): replay, fusion and the kernels stay concrete.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/compile/graph.h"

namespace ember::compiler {

// coef * prod over dims of dim^power (power[i] for dim i; fewer entries: the rest 0)
struct SymTerm {
  int64_t coef = 0;
  std::vector<uint8_t> power;
};

struct SymPoly {
  std::vector<SymTerm> terms;
  // Throws ValueError on overflow (a tampered file).
  int64_t eval(const std::vector<int64_t>& dims) const;
  // "768*seq + 1", "batch*seq^2"
  std::string str(const std::vector<std::string>& names) const;
  // dim i alone (coefficient 1, power 1)
  bool is_dim(size_t i) const;
};

// One number of the graph that depends on the dims.
struct SymSite {
  // Value: a Python number in the forward (`x / x.shape[1]`), a 0-dim wrapped-number constant
  enum Where : uint8_t { Size, Stride, Arg, Value };
  Where where = Size;
  int32_t item = 0;      // Size/Stride/Value: the value; Arg: the node
  int32_t index = 0;     // Size/Stride: the dim; Arg: the argument
  int32_t element = -1;  // Arg: the element of an Ints/Doubles argument (-1: an Int/Double one)
  SymPoly poly;
};

// Where a call's inputs give a dim its value: input `input`'s dim `dim` is dynamic dim `symbol`.
struct DimBinder {
  int32_t input = 0, dim = 0, symbol = 0;
};

struct SymbolicShapes {
  std::vector<std::string> names;
  std::vector<int64_t> min, max;  // the sizes accepted (max -1: unbounded)
  std::vector<int64_t> example;   // the sizes the graph holds
  std::vector<SymSite> sites;
  // ember.compile's dynamic shapes: the caller gives the dims (a Python int argument can be one),
  // so check() lets a dim be no input's size and bind() is not used.
  bool caller_binds = false;

  // Checks the sites against g: each on a number of the graph (a size, a stride, an Int/Ints/
  // Double/Doubles argument), polynomials over these dims giving the graph's own numbers at the
  // example, and every dim the size of some input dim. Throws ValueError naming what is wrong.
  // Returns the input dims that are one dim alone (what bind reads).
  std::vector<DimBinder> check(const Graph& g) const;
  // The dims' values in a call, read through `binders` (check's), checked to agree and to lie in
  // [min, max]. Throws ValueError naming the input, dim and sizes.
  std::vector<int64_t> bind(const Graph& g, const std::vector<DimBinder>& binders,
                            const std::vector<Tensor>& inputs) const;
  // g with every site's number evaluated at dims and the changed nodes' replays rebuilt.
  Graph specialise(const Graph& g, const std::vector<int64_t>& dims) const;
  // What specialise(g, dims) changes that running g reads, without copying g: each node whose
  // arguments change, with its new replay; each wrapped number's new tensor; and, for the values
  // already in `sizes` (their sizes in g), their sizes at dims.
  struct Overlay {
    std::vector<std::pair<int32_t, Replay>> replays;
    std::vector<std::pair<ValueId, Tensor>> numbers;
  };
  Overlay overlay(const Graph& g, const std::vector<int64_t>& dims, std::vector<std::pair<ValueId, Shape>>& sizes) const;
  // "[batch, 16]": an input's size as the program takes it.
  std::string describe_sizes(const Graph& g, ValueId v) const;
};

// Every number of g a site can stand on -- sizes, strides, Int/Double/Ints/Doubles arguments,
// 0-dim wrapped-number constants -- in one order, and the rest of g as text: two graphs with equal
// skeletons differ only in these numbers. What ember.compile fits a compiled graph's numbers over
// (compiled_template.h).
struct GraphNumbers {
  std::string skeleton;
  std::vector<SymSite> places;  // (polys empty)
  std::vector<double> doubles;  // a Double place's value (0 for the others)
  std::vector<int64_t> ints;    // the other places' values (0 for Double ones)
  std::vector<char> is_double;
};
GraphNumbers graph_numbers(const Graph& g);
// The places whose number differs between some of `all` (graph_numbers of graphs with one skeleton).
// Throws when their places do not line up.
std::vector<size_t> differing_places(const std::vector<GraphNumbers>& all);

}  // namespace ember::compiler
