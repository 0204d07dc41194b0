// einsum against a naive reference: loop over every assignment of the labels, multiply the
// operands' elements, add into the output. The reference takes explicit equations without
// "..." (tests spell out what "..." and implicit outputs stand for).
#include <map>
#include <random>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor rnd(IntArrayRef shape, DType dt, uint64_t seed) {
  std::mt19937_64 g(seed * 104729 + 3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(size_t(shape_numel(shape)));
  for (auto& x : v) x = is_floating(dt) ? u(g) : std::round(u(g) * 4);
  return tensor(v, {.dtype = kFloat64}).view(shape).to(dt);
}

// Reference einsum for "ab,bc->ac"-style equations (explicit output, no "..."). A size-1
// operand dim broadcasts against the label's size elsewhere.
Ref ref_einsum(const std::string& eq, const std::vector<Tensor>& ops) {
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs = eq.substr(arrow + 2);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  std::map<char, int64_t> size;
  std::vector<Ref> refs;
  for (size_t i = 0; i < ops.size(); ++i) {
    refs.push_back(ref_of(ops[i]));
    for (size_t d = 0; d < terms[i].size(); ++d) {
      int64_t s = ops[i].sizes()[d];
      auto it = size.find(terms[i][d]);
      if (it == size.end() || it->second == 1) size[terms[i][d]] = s;
    }
  }
  std::vector<char> labels;
  for (auto& [c, s] : size) labels.push_back(c);
  Shape out_shape;
  for (char c : rhs) out_shape.push_back(size[c]);
  Ref out{out_shape, std::vector<double>(size_t(shape_numel(out_shape)), 0.0)};
  Shape all;
  for (char c : labels) all.push_back(size[c]);
  int64_t total = shape_numel(all);
  std::map<char, int64_t> val;
  for (int64_t flat = 0; flat < total; ++flat) {
    auto idx = unravel(flat, all);
    for (size_t k = 0; k < labels.size(); ++k) val[labels[k]] = idx[k];
    double prod = 1;
    for (size_t i = 0; i < ops.size(); ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < terms[i].size(); ++d) {
        int64_t s = ops[i].sizes()[d];
        off = off * s + (s == 1 ? 0 : val[terms[i][d]]);
      }
      prod *= refs[i].v[size_t(off)];
    }
    int64_t o = 0;
    for (char c : rhs) o = o * size[c] + val[c];
    out.v[size_t(o)] += prod;
  }
  return out;
}

struct Case {
  std::string eq;       // what einsum gets
  std::string ref_eq;   // what the reference gets (explicit, no "...")
  std::vector<Shape> shapes;
};

void check_case(const Case& c, DType dt, bool non_contiguous) {
  SCOPED_TRACE(c.eq + " (" + dtype_name(dt) + (non_contiguous ? ", non-contiguous)" : ")"));
  std::vector<Tensor> ops;
  uint64_t seed = 1;
  for (const Shape& s : c.shapes) {
    Tensor t;
    if (non_contiguous && s.size() >= 1) {
      // Same logical shape, reversed memory order, and every other element of the last dim.
      Shape big(s.rbegin(), s.rend());
      big[0] *= 2;
      std::vector<int64_t> rev(s.size());
      for (size_t d = 0; d < s.size(); ++d) rev[d] = int64_t(s.size() - 1 - d);
      t = rnd(big, dt, seed++).slice(0, 0, std::nullopt, 2).permute(rev);
    } else {
      t = rnd(s, dt, seed++);
    }
    ops.push_back(t);
  }
  Tensor got = einsum(c.eq, ops);
  EXPECT_EQ(got.dtype(), dt);
  EXPECT_TRUE(close_to(got, ref_einsum(c.ref_eq, ops)));
}

std::vector<Case> cases() {
  return {
      {"ii->i", "ii->i", {{4, 4}}},                       // diagonal
      {"ii", "ii->", {{4, 4}}},                           // trace (implicit output)
      {"ij->ji", "ij->ji", {{3, 5}}},                     // transpose
      {"ba", "ba->ab", {{3, 5}}},                         // implicit output is sorted: a transpose
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},  // batch matmul
      {"i,j->ij", "i,j->ij", {{3}, {4}}},                 // outer
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}},  // attention scores
      {"ij->", "ij->", {{3, 4}}},                         // sum
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}},           // implicit matmul
      {"i,i->", "i,i->", {{6}, {6}}},                     // dot
      {"ij,j->i", "ij,j->i", {{3, 4}, {4}}},              // mv
      {"ijk->kji", "ijk->kji", {{2, 3, 4}}},
      {"ij->j", "ij->j", {{3, 4}}},                       // column sums
      {"iij->ij", "iij->ij", {{3, 3, 4}}},                // diagonal with a kept dim
      {"ij,ij->ij", "ij,ij->ij", {{3, 4}, {3, 4}}},       // Hadamard product
      {"ij,ij->", "ij,ij->", {{3, 4}, {3, 4}}},
      {"abc,cd,de->abe", "abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 2}}},  // a chain of three
      {"bn,anm,bm->ba", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},    // bilinear
      {"i,i,i->i", "i,i,i->i", {{5}, {5}, {5}}},
      {"a,b,c->abc", "a,b,c->abc", {{2}, {3}, {4}}},
      {"ij,kl->ijkl", "ij,kl->ijkl", {{2, 3}, {2, 2}}},
      {"ik,jk->", "ik,jk->", {{3, 4}, {2, 4}}},           // sum over a label each side keeps
      {"ij,jk->k", "ij,jk->k", {{3, 4}, {4, 5}}},         // i summed inside the first operand
      {"Ab,bC->AC", "Ab,bC->AC", {{3, 4}, {4, 2}}},       // upper-case labels
      {" ij , jk -> ik ", "ij,jk->ik", {{3, 4}, {4, 5}}}, // spaces
      {"...ij,...jk->...ik", "xyij,yjk->xyik", {{2, 1, 3, 4}, {5, 4, 2}}},  // "..." broadcasting
      {"...ij,jk", "xij,jk->xik", {{2, 3, 4}, {4, 5}}},   // implicit output keeps "..." first
      {"i...->...", "ixy->xy", {{3, 2, 4}}},              // sum the first dim
      {"...->...", "xy->xy", {{2, 3}}},
      {"...ii->...i", "xii->xi", {{2, 3, 3}}},            // batched diagonal
      {"bij,bjk->ik", "bij,bjk->ik", {{3, 2, 4}, {3, 4, 5}}},  // batch summed too
      {"ij,ij->i", "ij,ij->i", {{1, 4}, {3, 4}}},         // size-1 label broadcasts
      {"i...j,j...->...", "ixyj,jxy->xy", {{2, 3, 1, 4}, {4, 1, 5}}},  // "..." in the middle
  };
}

}  // namespace

EMBER_DEVICE_TEST(Einsum, PatternsFloat64) {
  for (const auto& c : cases()) check_case(c, kFloat64, false);
}
EMBER_DEVICE_TEST(Einsum, PatternsFloat32) {
  for (const auto& c : cases()) check_case(c, kFloat32, false);
}
EMBER_DEVICE_TEST(Einsum, PatternsInt64) {
  EMBER_SKIP_ON_CUDA("torch's CUDA has no int64 matmul, so no int64 einsum (\"addmm_cuda\" not implemented for 'Long')");
  for (const auto& c : cases()) check_case(c, kInt64, false);
}
EMBER_DEVICE_TEST(Einsum, PatternsNonContiguous) {
  for (const auto& c : cases()) check_case(c, kFloat64, true);
}

EMBER_DEVICE_TEST(Einsum, ViewsLikePyTorch) {
  // One operand without a sum: the result is a view, as in PyTorch.
  Tensor a = rnd({3, 3}, kFloat32, 1);
  EXPECT_TRUE(einsum("ii->i", {a}).is_alias_of(a));
  EXPECT_TRUE(einsum("ij->ji", {a}).is_alias_of(a));
  EXPECT_EQ(einsum("ii", {a}).dim(), 0);
}

EMBER_DEVICE_TEST(Einsum, EmptyDims) {
  // A contracted dim of size 0 gives zeros of the right shape; a kept one gives an empty result.
  Tensor r = einsum("ij,jk->ik", {rnd({2, 0}, kFloat32, 1), rnd({0, 3}, kFloat32, 2)});
  EXPECT_TRUE(close_to(r, Ref{{2, 3}, std::vector<double>(6, 0.0)}));
  EXPECT_EQ(einsum("ij,jk->ik", {rnd({0, 4}, kFloat32, 1), rnd({4, 3}, kFloat32, 2)}).sizes(), (Shape{0, 3}));
  EXPECT_TRUE(close_to(einsum("ij->", {rnd({0, 3}, kFloat32, 1)}), Ref{{}, {0.0}}));
  EXPECT_EQ(einsum("bij,bjk->bik", {rnd({0, 2, 3}, kFloat32, 1), rnd({0, 3, 4}, kFloat32, 2)}).sizes(),
            (Shape{0, 2, 4}));
}

EMBER_DEVICE_TEST(Einsum, Errors) {
  Tensor a = rnd({2, 3}, kFloat32, 1);
  EXPECT_THROW_MSG(einsum("ij", {}), Error, "einsum(): must provide at least one operand");
  EXPECT_THROW_MSG(einsum("ij,jk->ik", {a}), Error, "einsum(): fewer operands were provided than specified in the equation");
  EXPECT_THROW_MSG(einsum("ij->ij", {a, a}), Error, "einsum(): more operands were provided than specified in the equation");
  EXPECT_THROW_MSG(einsum("ij->ij", {rnd({2, 3, 4}, kFloat32, 1)}), Error,
                   "einsum(): the number of subscripts in the equation (2) does not match the number of dimensions (3) "
                   "for operand 0 and no ellipsis was given");
  EXPECT_THROW_MSG(einsum("ijk...->i", {a}), Error,
                   "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (2) "
                   "for operand 0");
  EXPECT_THROW_MSG(einsum("ij,jk->ik", {a, rnd({4, 5}, kFloat32, 1)}), Error,
                   "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3");
  EXPECT_THROW_MSG(einsum("ij->ii", {a}), Error, "einsum(): output subscript i appears more than once in the output");
  EXPECT_THROW_MSG(einsum("ij->ik", {a}), Error,
                   "einsum(): output subscript k does not appear in the equation for any input operand");
  EXPECT_THROW_MSG(einsum("i1->i", {a}), Error,
                   "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]");
  EXPECT_THROW_MSG(einsum("ij-ji", {a}), Error,
                   "einsum(): invalid subscript given at index 2 in the equation string, subscripts must be in [a-zA-Z]");
  EXPECT_THROW_MSG(einsum("ij->j1", {a}), Error,
                   "einsum(): invalid subscript given at index 5 in the equation string, subscripts must be in [a-zA-Z]");
  EXPECT_THROW_MSG(einsum("i..j->i", {a}), Error, "einsum(): found '.' for operand 0 that is not part of any ellipsis");
  EXPECT_THROW_MSG(einsum("...i...->i", {a}), Error,
                   "einsum(): found '.' for operand 0 for which an ellipsis was already found");
  EXPECT_THROW_MSG(einsum("...ij->.", {a}), Error, "einsum(): found '.' for output that is not part of any ellipsis (...)");
  EXPECT_THROW_MSG(einsum("ii->i", {a}), Error,
                   "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2");
  EXPECT_THROW_MSG(einsum("...ij,...jk->...ik", {rnd({2, 2, 3}, kFloat32, 1), rnd({3, 3, 4}, kFloat32, 2)}), Error,
                   "which does not broadcast with previously seen ellipsis with size 2 for the respective dimension");
  EXPECT_THROW_MSG(einsum("ij,jk->ik", {a, rnd({3, 4}, kFloat64, 1)}), Error,
                   "expected scalar type Float but found Double");
}
