// F::embedding_bag (the _embedding_bag op and its backward): hand-computed bags in every mode and
// input form, float64 gradchecks of the weight and per-sample-weight gradients, and the errors.
// (Against PyTorch itself, over random bags: tests/python/test_nn_more15.py.)
#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {
Tensor rows() { return tensor(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {.dtype = kFloat64}).view({4, 2}); }
Tensor ints(std::vector<int64_t> v) { return tensor(v); }
}  // namespace

TEST(EmbeddingBag, ModesAndInputForms) {
  Tensor w = rows();  // rows [1 2] [3 4] [5 6] [7 8]
  // bags {0, 1}, {}, {3, 3, 2}
  Tensor in = ints({0, 1, 3, 3, 2}), off = ints({0, 2, 2});
  EXPECT_EQ(F::embedding_bag(in, w, off, "sum").tolist<double>(), (std::vector<double>{4, 6, 0, 0, 19, 22}));
  EXPECT_EQ(F::embedding_bag(in, w, off, "mean").tolist<double>(),
            (std::vector<double>{2, 3, 0, 0, 19.0 / 3, 22.0 / 3}));
  EXPECT_EQ(F::embedding_bag(in, w, off, "max").tolist<double>(), (std::vector<double>{3, 4, 0, 0, 7, 8}));
  // include_last_offset: the last offset closes the bags (entry 4 belongs to none)
  EXPECT_EQ(F::embedding_bag(in, w, ints({0, 2, 4}), "sum", std::nullopt, true).tolist<double>(),
            (std::vector<double>{4, 6, 14, 16}));
  // 2-D input: one bag per row; padding_idx entries skipped (and not counted by the mean)
  EXPECT_EQ(F::embedding_bag(ints({0, 1, 3, 1}).view({2, 2}), w, std::nullopt, "mean", std::nullopt, false, 1)
                .tolist<double>(),
            (std::vector<double>{1, 2, 7, 8}));
  Tensor psw = tensor(std::vector<double>{2, -1, 1, 0.5, 1}, {.dtype = kFloat64});
  EXPECT_EQ(F::embedding_bag(in, w, off, "sum", psw).tolist<double>(), (std::vector<double>{-1, 0, 0, 0, 15.5, 18}));
}

TEST(EmbeddingBag, GradientsOfWeightAndPerSampleWeights) {
  Generator g(3);
  Tensor w = host_randn({6, 3}, g).to(kFloat64).requires_grad_();
  Tensor psw = host_randn({7}, g).to(kFloat64).requires_grad_();
  Tensor in = ints({0, 5, 2, 2, 4, 1, 3}), off = ints({0, 3, 3, 5});
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::embedding_bag(in, v[0], off, "sum", v[1]); }, {w, psw}));
  for (const char* mode : {"mean", "max"})
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::embedding_bag(in, v[0], off, mode, std::nullopt, false, 2); },
                          {w}))
        << mode;
}

TEST(EmbeddingBag, ErrorsNameTheProblem) {
  Tensor w = rows();
  EXPECT_THROW_MSG(F::embedding_bag(ints({0}), w, ints({0}), "min"), Error, "mode has to be one of sum, mean or max");
  EXPECT_THROW_MSG(F::embedding_bag(ints({0}), w, ints({0}), "mean", tensor(std::vector<double>{1.0})), Error,
                   "per_sample_weights is only supported for mode='sum'");
  EXPECT_THROW_MSG(F::embedding_bag(ints({0, 1}), w, ints({1})), Error, "offsets[0] has to be 0");
  EXPECT_THROW_MSG(F::embedding_bag(ints({0, 1}), w, ints({0, 3})), Error, "offsets[-1] can not be greater than");
  EXPECT_THROW_MSG(F::embedding_bag(ints({0, 1, 2}), w, ints({0, 2, 1})), Error,
                   "offsets must be non-decreasing, but got offsets[1] = 2 > offsets[2] = 1");
  EXPECT_THROW_MSG(F::embedding_bag(ints({0, 4}), w, ints({0})), IndexError, "index out of range in self");
  EXPECT_THROW_MSG(F::embedding_bag(ints({0, 1}), w), Error, "offsets has to be a 1D Tensor but got None");
}
