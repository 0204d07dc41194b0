// Pieces joined (passes.h: join_pieces). Capture records split/chunk as one slice per piece and
// unbind as one select per index (they are composites of those views), so a replayed graph
// gives each piece its own autograd node, whose backward scatters the piece's gradient into
// zeros of the whole input; the engine then adds those up: a full-size fill and add per piece.
// Eager's split and unbind record one node for all pieces, which joins their gradients with one
// cat or stack. This pass gives the graph the same: slices that tile a value along one dim
// become one split node, selects of every index one unbind node.
//
//   %22 = slice(%21, 2, 0, 256, 1)
//   %23 = slice(%21, 2, 256, 512, 1)   ->   %22, %23, %24 = split_with_sizes(%21, [256, 256, 256], 2)
//   %24 = slice(%21, 2, 512, 768, 1)
//
// The pieces are the same views either way. Only where gradients flow (the input requires grad,
// grad mode on) and in graphs that write no shared tensor in place; compile-only, as the matmul
// epilogues (an exported program keeps the slices).
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "compile/capture_kernel.h"
#include "compile/passes.h"
#include "ember/ops.h"

namespace ember::compiler {
namespace {

bool is(const Node& n, const char* op) { return std::strcmp(n.op, op) == 0; }

std::optional<int64_t> int_arg(const Arg& a) {
  if (a.kind == Arg::Int) return a.i;
  return std::nullopt;
}

struct Piece {
  int32_t node;
  int64_t start, end;  // the window along dim, normalised as the slice op does
};

// A slice of a value of `size` along its dim, with its bounds normalised; none for steps != 1.
std::optional<Piece> slice_piece(const Node& n, int32_t index, int64_t size) {
  if (n.args.size() != 5 || n.outputs.size() != 1 || int_arg(n.args[4]).value_or(0) != 1) return std::nullopt;
  const Arg &a_start = n.args[2], &a_end = n.args[3];
  if ((a_start.kind != Arg::Int && a_start.kind != Arg::None) || (a_end.kind != Arg::Int && a_end.kind != Arg::None))
    return std::nullopt;
  int64_t s = a_start.kind == Arg::Int ? a_start.i : 0, e = a_end.kind == Arg::Int ? a_end.i : size;
  if (s < 0) s += size;
  if (e < 0) e += size;
  s = std::clamp<int64_t>(s, 0, size);
  e = std::clamp<int64_t>(e, s, size);
  return Piece{index, s, e};
}

// Replaces the nodes in `pieces` (already in window order) by `joined` at the first one's place.
void replace(Graph& g, std::vector<int32_t> pieces, Node joined) {
  std::sort(pieces.begin(), pieces.end());
  g.nodes[size_t(pieces[0])] = std::move(joined);
  for (size_t k = 1; k < pieces.size(); ++k) g.nodes[size_t(pieces[k])].outputs.clear();  // dropped below
}

}  // namespace

void join_pieces(Graph& g) {
  if (writes_shared_tensors(g)) return;
  // (value, dim) -> the slices / selects reading it there, in grad mode
  std::map<std::pair<ValueId, int64_t>, std::vector<Piece>> slices, selects;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.inputs.size() != 1 || n.inputs[0] == kNoValue || !n.grad_enabled) continue;
    const ValueInfo& v = g.values[size_t(n.inputs[0])];
    if (!v.requires_grad) continue;  // (no gradient: the pieces' nodes cost nothing)
    const auto rank = int64_t(v.sizes.size());
    if (rank == 0 || n.args.size() < 3) continue;
    const auto dim = int_arg(n.args[1]);
    if (!dim || *dim < -rank || *dim >= rank) continue;
    const int64_t d = *dim < 0 ? *dim + rank : *dim;
    if (is(n, "slice")) {
      if (auto p = slice_piece(n, int32_t(i), v.sizes[size_t(d)])) slices[{n.inputs[0], d}].push_back(*p);
    } else if (is(n, "select") && n.args.size() == 3 && n.outputs.size() == 1) {
      if (auto idx = int_arg(n.args[2])) {
        const int64_t size = v.sizes[size_t(d)];
        const int64_t at = *idx < 0 ? *idx + size : *idx;
        if (at >= 0 && at < size) selects[{n.inputs[0], d}].push_back({int32_t(i), at, at + 1});
      }
    }
  }
  bool changed = false;
  for (auto* found : {&slices, &selects}) {
    const bool unbind = found == &selects;
    for (auto& [key, pieces] : *found) {
      const auto [value, d] = key;
      const int64_t size = g.values[size_t(value)].sizes[size_t(d)];
      if (pieces.size() < 2) continue;
      std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
      bool tiles = pieces.front().start == 0 && pieces.back().end == size;
      for (size_t k = 0; k + 1 < pieces.size() && tiles; ++k) tiles = pieces[k].end == pieces[k + 1].start;
      for (const auto& p : pieces) tiles = tiles && p.end > p.start;
      if (!tiles || (unbind && int64_t(pieces.size()) != size)) continue;
      Node joined;
      joined.inputs = {value};
      joined.grad_enabled = true;
      std::vector<int32_t> nodes;
      std::vector<int64_t> lengths;
      for (const auto& p : pieces) {
        joined.outputs.push_back(g.nodes[size_t(p.node)].outputs[0]);
        nodes.push_back(p.node);
        lengths.push_back(p.end - p.start);
      }
      if (unbind) {
        joined.op = "unbind";
        joined.args = {detail::to_arg_owned(Tensor()), detail::to_arg_owned(d)};
        joined.replay = [d = d](const std::vector<Tensor>& in) { return ember::unbind(in[0], d); };
      } else {
        joined.op = "split_with_sizes";
        joined.args = {detail::to_arg_owned(Tensor()), detail::to_arg_owned(lengths), detail::to_arg_owned(d)};
        joined.replay = [lengths, d = d](const std::vector<Tensor>& in) { return ember::split(in[0], lengths, d); };
      }
      replace(g, std::move(nodes), std::move(joined));
      ++g.pieces_joined;
      changed = true;
    }
  }
  if (!changed) return;
  std::vector<Node> kept;
  for (auto& n : g.nodes)
    if (!n.outputs.empty() || n.mutates) kept.push_back(std::move(n));
  g.nodes = std::move(kept);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) g.values[size_t(v)].producer = int32_t(i);
}

}  // namespace ember::compiler
