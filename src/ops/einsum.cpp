// einsum: parses the equation, lines every operand up on one shared list of dims, and contracts
// the operands left to right, each contraction a permute/reshape onto bmm (as PyTorch does).
//
// 1. Parse "ij,jk->ik" (or the implicit form "ij,jk": the labels used once, sorted, after any
//    "..."), checking subscripts with PyTorch's messages.
// 2. Global dims: the output's dims first (in output order, "..." expanded), then the labels
//    that are summed away. Every operand becomes a view with one dim per global dim: a
//    repeated label ("ii") is its diagonal, dims are permuted to global order and a missing
//    label is an unsqueezed size-1 dim (views autograd differentiates cheaply).
// 3. A summed label present in one operand only is summed inside it; then operands are
//    multiplied pairwise, summing each label after the last operand that has it:
//    dims in both operands are the batch of a bmm, dims in one are its rows or columns, the
//    summed dims its inner dimension. Without summed dims the pair is a broadcast mul.
// 4. The summed dims are size 1 by then and are dropped.
#include <algorithm>
#include <array>
#include <numeric>

#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "ember/ops.h"

namespace ember {

namespace {

constexpr int kNumLabels = 52;  // A-Z then a-z
constexpr int kEllipsis = -1;

bool is_label(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
int label_index(char c) { return c <= 'Z' ? c - 'A' : c - 'a' + 26; }
char label_char(int l) { return char(l < 26 ? 'A' + l : 'a' + (l - 26)); }

// Subscripts of one operand (or the output): label indices, kEllipsis for "...".
using Subscripts = std::vector<int>;

// Keeps the first `keep` dims (the rest are summed dims, all of size 1 by now). Squeezes are
// views with cheap gradients (as_strided's backward scatters over the whole storage window).
Tensor drop_trailing(Tensor t, int64_t keep) {
  for (int64_t d = t.dim() - 1; d >= keep; --d) t = t.squeeze(d);
  return t;
}

// Operand t as a view on the nd global dims; gdim[k] is the global dim of t's dim k. A label
// repeated in t becomes its diagonal; dims are put in global order; missing dims are size 1.
// Built from diagonal/permute/unsqueeze (not one as_strided) so autograd sees cheap views.
Tensor to_global_dims(Tensor t, std::vector<int64_t> gdim, int64_t nd) {
  for (bool again = true; again;) {
    again = false;
    for (size_t a = 0; a < gdim.size() && !again; ++a)
      for (size_t b = a + 1; b < gdim.size() && !again; ++b) {
        if (gdim[a] != gdim[b]) continue;
        int64_t g = gdim[a];
        t = diagonal(t, 0, int64_t(a), int64_t(b));  // the diagonal becomes the last dim
        gdim.erase(gdim.begin() + int64_t(b));
        gdim.erase(gdim.begin() + int64_t(a));
        gdim.push_back(g);
        again = true;
      }
  }
  std::vector<int64_t> order(gdim.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return gdim[size_t(x)] < gdim[size_t(y)]; });
  bool identity = true;
  for (size_t k = 0; k < order.size(); ++k) identity &= order[k] == int64_t(k);
  if (!identity) t = t.permute(order);
  std::vector<bool> present(size_t(nd), false);
  for (int64_t g : gdim) present[size_t(g)] = true;
  for (int64_t g = 0; g < nd; ++g)
    if (!present[size_t(g)]) t = t.unsqueeze(g);
  return t;
}

// Multiplies two operands laid out on the same global dims and sums over sum_dims (keeping
// them as size-1 dims). Dims of size 1 in one operand broadcast.
Tensor sumproduct_pair(Tensor left, Tensor right, const std::vector<int64_t>& sum_dims) {
  const int64_t nd = left.dim();
  std::vector<bool> is_sum(size_t(nd), false);
  for (int64_t d : sum_dims) is_sum[size_t(d)] = true;
  // A summed dim present in one operand only is summed there first.
  std::vector<int64_t> sum_left, sum_right;
  bool contract = false;
  for (int64_t d = 0; d < nd; ++d) {
    if (!is_sum[size_t(d)]) continue;
    int64_t sl = left.sizes()[d], sr = right.sizes()[d];
    if (sl != 1 && sr != 1) contract = true;
    else if (sl != 1) sum_left.push_back(d);
    else if (sr != 1) sum_right.push_back(d);
  }
  if (!sum_left.empty()) left = sum(left, sum_left, /*keepdim=*/true);
  if (!sum_right.empty()) right = sum(right, sum_right, /*keepdim=*/true);
  if (!contract) return mul(left, right);

  // Groups: lro (in both, kept: the bmm batch), lo (left only: rows), ro (right only: columns),
  // sum (contracted: the inner dim). Size-1-in-both dims go to lro.
  std::vector<int64_t> lro, lo, ro, sm;
  int64_t lro_size = 1, lo_size = 1, ro_size = 1, sum_size = 1;
  for (int64_t d = 0; d < nd; ++d) {
    int64_t sl = left.sizes()[d], sr = right.sizes()[d];
    if (is_sum[size_t(d)]) { sm.push_back(d); sum_size *= sl; }
    else if (sl != 1 && sr != 1) { lro.push_back(d); lro_size *= sl; }
    else if (sl != 1) { lo.push_back(d); lo_size *= sl; }
    else if (sr != 1) { ro.push_back(d); ro_size *= sr; }
    else lro.push_back(d);
  }
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> out;
    for (auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  // (Summed dims now have the same size in both: a one-sided one was summed above.)
  Tensor l = left.permute(concat({&lro, &lo, &sm, &ro})).reshape({lro_size, lo_size, sum_size});
  Tensor r = right.permute(concat({&lro, &sm, &ro, &lo})).reshape({lro_size, sum_size, ro_size});
  Tensor prod = bmm(l, r);
  // Back to the global dims: the product's dims are lro, lo, ro (then sm as size 1).
  Shape out_sizes;
  for (int64_t d : lro) out_sizes.push_back(left.sizes()[d] != 1 ? left.sizes()[d] : right.sizes()[d]);
  for (int64_t d : lo) out_sizes.push_back(left.sizes()[d]);
  for (int64_t d : ro) out_sizes.push_back(right.sizes()[d]);
  for (size_t i = 0; i < sm.size(); ++i) out_sizes.push_back(1);
  std::vector<int64_t> order = concat({&lro, &lo, &ro, &sm});
  std::vector<int64_t> inverse(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) inverse[size_t(order[size_t(i)])] = i;
  return prod.view(out_sizes).permute(inverse);
}

}  // namespace

Tensor einsum(const std::string& equation, TensorList operands) {
  EMBER_RECORD_COMPOSITE("einsum", equation, operands);
  EMBER_AUTOCAST(einsum, equation, operands);
  EMBER_CHECK(!operands.empty(), "einsum(): must provide at least one operand");
  const int64_t num_ops = int64_t(operands.size());

  // ---- parse the left-hand side
  const auto arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<Subscripts> subs(1);
  bool found_ell = false;
  for (size_t i = 0; i < lhs.size(); ++i) {
    const char c = lhs[i];
    if (c == ' ') continue;
    if (c == '.') {
      EMBER_CHECK(!found_ell, "einsum(): found '.' for operand ", subs.size() - 1,
                  " for which an ellipsis was already found");
      EMBER_CHECK(i + 2 < lhs.size() && lhs[i + 1] == '.' && lhs[i + 2] == '.', "einsum(): found '.' for operand ",
                  subs.size() - 1, " that is not part of any ellipsis");
      subs.back().push_back(kEllipsis);
      found_ell = true;
      i += 2;
    } else if (c == ',') {
      EMBER_CHECK(int64_t(subs.size()) < num_ops, "einsum(): fewer operands were provided than specified in the equation");
      subs.emplace_back();
      found_ell = false;
    } else {
      EMBER_CHECK(is_label(c), "einsum(): invalid subscript given at index ", i,
                  " in the equation string, subscripts must be in [a-zA-Z]");
      subs.back().push_back(label_index(c));
    }
  }
  EMBER_CHECK(int64_t(subs.size()) == num_ops, "einsum(): more operands were provided than specified in the equation");

  // ---- check ranks, count labels, find how many dims "..." covers
  std::array<int, kNumLabels> label_count{};
  int64_t ell_ndim = 0;
  for (int64_t i = 0; i < num_ops; ++i) {
    const auto& s = subs[size_t(i)];
    bool has_ell = std::find(s.begin(), s.end(), kEllipsis) != s.end();
    int64_t nlabels = int64_t(s.size()) - (has_ell ? 1 : 0);
    int64_t ndim = operands[size_t(i)].dim();
    if (has_ell) {
      EMBER_CHECK(ndim >= nlabels, "einsum(): the number of subscripts in the equation (", nlabels,
                  ") is more than the number of dimensions (", ndim, ") for operand ", i);
      ell_ndim = std::max(ell_ndim, ndim - nlabels);
    } else {
      EMBER_CHECK(ndim == nlabels, "einsum(): the number of subscripts in the equation (", nlabels,
                  ") does not match the number of dimensions (", ndim, ") for operand ", i,
                  " and no ellipsis was given");
    }
    for (int l : s)
      if (l != kEllipsis) ++label_count[size_t(l)];
  }

  // ---- the output's subscripts
  Subscripts out_subs;
  bool out_has_ell = false;
  if (arrow != std::string::npos) {
    const std::string rhs = equation.substr(arrow + 2);
    std::array<bool, kNumLabels> seen{};
    for (size_t i = 0; i < rhs.size(); ++i) {
      const char c = rhs[i];
      if (c == ' ') continue;
      if (c == '.') {
        EMBER_CHECK(!out_has_ell, "einsum(): found '.' for output but an ellipsis (...) was already found");
        EMBER_CHECK(i + 2 < rhs.size() && rhs[i + 1] == '.' && rhs[i + 2] == '.',
                    "einsum(): found '.' for output that is not part of any ellipsis (...)");
        out_subs.push_back(kEllipsis);
        out_has_ell = true;
        i += 2;
        continue;
      }
      EMBER_CHECK(is_label(c), "einsum(): invalid subscript given at index ", lhs.size() + 2 + i,
                  " in the equation string, subscripts must be in [a-zA-Z]");
      int l = label_index(c);
      EMBER_CHECK(!seen[size_t(l)], "einsum(): output subscript ", c, " appears more than once in the output");
      EMBER_CHECK(label_count[size_t(l)] > 0, "einsum(): output subscript ", c,
                  " does not appear in the equation for any input operand");
      seen[size_t(l)] = true;
      out_subs.push_back(l);
    }
  } else {
    out_subs.push_back(kEllipsis);  // implicit: "..." first, then the labels used once, sorted
    out_has_ell = true;
    for (int l = 0; l < kNumLabels; ++l)
      if (label_count[size_t(l)] == 1) out_subs.push_back(l);
  }

  // ---- global dims: output dims, then summed labels, then "..." dims not in the output
  std::array<int64_t, kNumLabels> label_dim;
  label_dim.fill(-1);
  int64_t ell_start = -1, nd = 0;
  for (int l : out_subs) {
    if (l == kEllipsis) { ell_start = nd; nd += ell_ndim; }
    else label_dim[size_t(l)] = nd++;
  }
  const int64_t out_ndim = nd;
  for (int l = 0; l < kNumLabels; ++l)
    if (label_count[size_t(l)] > 0 && label_dim[size_t(l)] < 0) label_dim[size_t(l)] = nd++;
  if (ell_start < 0) { ell_start = nd; nd += ell_ndim; }

  // ---- each operand as a view on the global dims; check that sizes broadcast
  std::vector<Tensor> views;
  std::vector<std::vector<bool>> present(size_t(num_ops), std::vector<bool>(size_t(nd), false));
  Shape seen_size(size_t(nd), 1);
  for (int64_t i = 0; i < num_ops; ++i) {
    const Tensor& t = operands[size_t(i)];
    const auto& s = subs[size_t(i)];
    Shape sizes(size_t(nd), 1);
    std::vector<int64_t> gdim;  // global dim of each of t's dims
    int64_t op_ell_ndim = t.dim() - (int64_t(s.size()) - (std::count(s.begin(), s.end(), kEllipsis) ? 1 : 0));
    int64_t dim = 0;
    for (int l : s) {
      if (l == kEllipsis) {
        for (int64_t k = 0; k < op_ell_ndim; ++k, ++dim) {
          int64_t g = ell_start + ell_ndim - op_ell_ndim + k;
          gdim.push_back(g);
          sizes[size_t(g)] = t.sizes()[dim];
          present[size_t(i)][size_t(g)] = true;
        }
        continue;
      }
      int64_t g = label_dim[size_t(l)];
      gdim.push_back(g);
      if (present[size_t(i)][size_t(g)]) {  // repeated label: the diagonal
        EMBER_CHECK(sizes[size_t(g)] == t.sizes()[dim], "einsum(): subscript ", label_char(l),
                    " is repeated for operand ", i, " but the sizes don't match, ", t.sizes()[dim], " != ",
                    sizes[size_t(g)]);
      } else {
        sizes[size_t(g)] = t.sizes()[dim];
        present[size_t(i)][size_t(g)] = true;
      }
      ++dim;
    }
    // Broadcast check against the operands before this one.
    dim = 0;
    for (int l : s) {
      if (l == kEllipsis) {
        for (int64_t k = 0; k < op_ell_ndim; ++k, ++dim) {
          int64_t g = ell_start + ell_ndim - op_ell_ndim + k;
          int64_t sz = sizes[size_t(g)], prev = seen_size[size_t(g)];
          EMBER_CHECK(sz == 1 || prev == 1 || sz == prev, "einsum(): dimension ", dim,
                      " covered by ellipsis in operand ", i, "has size ", sz,
                      " which does not broadcast with previously seen ellipsis with size ", prev,
                      " for the respective dimension");
        }
        continue;
      }
      int64_t g = label_dim[size_t(l)];
      int64_t sz = sizes[size_t(g)], prev = seen_size[size_t(g)];
      EMBER_CHECK(sz == 1 || prev == 1 || sz == prev, "einsum(): subscript ", label_char(l), " has size ", sz,
                  " for operand ", i, " which does not broadcast with previously seen size ", prev);
      ++dim;
    }
    for (int64_t g = 0; g < nd; ++g)
      if (sizes[size_t(g)] != 1) seen_size[size_t(g)] = sizes[size_t(g)];
    views.push_back(to_global_dims(t, std::move(gdim), nd));
  }

  // ---- contract. last_op[g]: the last operand that has summed dim g.
  std::vector<int64_t> last_op(size_t(nd), -1);
  for (int64_t i = 0; i < num_ops; ++i)
    for (int64_t g = out_ndim; g < nd; ++g)
      if (present[size_t(i)][size_t(g)]) last_op[size_t(g)] = i;
  // Sum away the dims only one operand has.
  for (int64_t i = 0; i < num_ops; ++i) {
    std::vector<int64_t> only_here;
    for (int64_t g = out_ndim; g < nd; ++g) {
      if (!present[size_t(i)][size_t(g)] || views[size_t(i)].sizes()[g] == 1) continue;
      bool elsewhere = false;
      for (int64_t j = 0; j < num_ops; ++j) elsewhere |= j != i && present[size_t(j)][size_t(g)];
      if (!elsewhere) only_here.push_back(g);
    }
    if (!only_here.empty()) views[size_t(i)] = sum(views[size_t(i)], only_here, /*keepdim=*/true);
  }
  Tensor result = views[0];
  for (int64_t i = 1; i < num_ops; ++i) {
    std::vector<int64_t> sum_dims;
    for (int64_t g = out_ndim; g < nd; ++g)
      if (last_op[size_t(g)] == i) sum_dims.push_back(g);
    result = sumproduct_pair(result, views[size_t(i)], sum_dims);
  }
  return drop_trailing(result, out_ndim);
}

}  // namespace ember
