// CPU kernels of _embedding_bag and its backward (checks and the 2-D / include_last_offset forms:
// src/nn/functional/embedding_bag.cpp). A bag b is indices[bounds[b] .. bounds[b + 1]); positions
// whose index is padding_idx are skipped (they neither count nor receive gradient).
//  - forward: bags split across threads, each writing its own output row;
//  - backward: the embedding dim split across threads, so two bags adding into one weight row
//    never write the same element, and each element's additions keep the bags' order.
#include <cmath>
#include <limits>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

enum BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// -> (output (B, D), aux): aux is the per-bag count of non-padding entries (sum, mean) or the
// weight row each output element came from (max; -1 for an empty bag).
std::tuple<Tensor, Tensor> embedding_bag_cpu(const Tensor& weight, const Tensor& indices, const Tensor& bounds,
                                             int64_t mode, const std::optional<Tensor>& per_sample_weights,
                                             int64_t padding_idx) {
  const int64_t B = bounds.numel() - 1, D = weight.size(1);
  Tensor w = weight.contiguous(), idx = indices.contiguous(), bnd = bounds.contiguous();
  Tensor psw = per_sample_weights ? per_sample_weights->contiguous() : Tensor();
  Tensor out = empty({B, D}, weight.options());
  Tensor aux = mode == kMax ? empty({B, D}, {.dtype = kInt64, .device = weight.device()})
                            : empty({B}, {.dtype = kInt64, .device = weight.device()});
  if (B == 0) return {out, aux};
  const int64_t* ix = idx.data_ptr<int64_t>();
  const int64_t* bd = bnd.data_ptr<int64_t>();
  int64_t* ax = aux.data_ptr<int64_t>();
  visit_dtype<kFloatTypes>(weight.dtype(), "embedding_bag_cpu", [&]<class T>() {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;  // (half types add in float)
    const T* W = w.data_ptr<T>();
    const T* P = psw.defined() ? psw.data_ptr<T>() : nullptr;
    T* O = out.data_ptr<T>();
    parallel_for(0, B, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, D)), [&](int64_t b0, int64_t b1) {
      std::vector<A> acc(static_cast<size_t>(D));
      for (int64_t b = b0; b < b1; ++b) {
        T* o = O + b * D;
        int64_t count = 0;
        if (mode == kMax) {
          int64_t* arg = ax + b * D;
          for (int64_t d = 0; d < D; ++d) arg[d] = -1;
          for (int64_t j = bd[b]; j < bd[b + 1]; ++j) {
            if (ix[j] == padding_idx) continue;
            const T* row = W + ix[j] * D;
            // torch's rule: the bag's first entry, then any larger one (a NaN stays only if first)
            for (int64_t d = 0; d < D; ++d)
              if (arg[d] < 0 || A(row[d]) > acc[d]) {
                acc[d] = A(row[d]);
                arg[d] = ix[j];
              }
          }
          for (int64_t d = 0; d < D; ++d) o[d] = arg[d] < 0 ? T(0) : T(acc[d]);
          continue;
        }
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t j = bd[b]; j < bd[b + 1]; ++j) {
          if (ix[j] == padding_idx) continue;
          ++count;
          const T* row = W + ix[j] * D;
          const A s = P ? A(P[j]) : A(1);
          for (int64_t d = 0; d < D; ++d) acc[d] += A(row[d]) * s;
        }
        const A scale = mode == kMean && count > 0 ? A(1) / A(count) : A(1);
        for (int64_t d = 0; d < D; ++d) o[d] = T(acc[d] * scale);
        ax[b] = count;
      }
    });
  });
  return {out, aux};
}

// -> (grad_weight, grad_per_sample_weights (undefined without them))
std::tuple<Tensor, Tensor> embedding_bag_backward_cpu(const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                                      const Tensor& bounds, const Tensor& aux, int64_t mode,
                                                      const std::optional<Tensor>& per_sample_weights,
                                                      int64_t padding_idx) {
  const int64_t B = bounds.numel() - 1, D = weight.size(1);
  Tensor grad_weight = zeros(weight.sizes(), weight.options());
  Tensor grad_psw = per_sample_weights ? zeros(per_sample_weights->sizes(), per_sample_weights->options()) : Tensor();
  if (B == 0 || D == 0) return {grad_weight, grad_psw};
  Tensor g = grad.contiguous(), w = weight.contiguous(), idx = indices.contiguous(), bnd = bounds.contiguous();
  Tensor ax = aux.contiguous(), psw = per_sample_weights ? per_sample_weights->contiguous() : Tensor();
  const int64_t* ix = idx.data_ptr<int64_t>();
  const int64_t* bd = bnd.data_ptr<int64_t>();
  const int64_t* a = ax.data_ptr<int64_t>();
  visit_dtype<kFloatTypes>(weight.dtype(), "embedding_bag_backward_cpu", [&]<class T>() {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* G = g.data_ptr<T>();
    const T* P = psw.defined() ? psw.data_ptr<T>() : nullptr;
    T* GW = grad_weight.data_ptr<T>();
    // (bags per column block: a block of 16 columns at least, so rows are touched in lines)
    parallel_for(0, D, std::max<int64_t>(16, 65536 / std::max<int64_t>(1, indices.numel())), [&](int64_t d0, int64_t d1) {
      for (int64_t b = 0; b < B; ++b) {
        const T* gb = G + b * D;
        if (mode == kMax) {
          for (int64_t d = d0; d < d1; ++d)
            if (a[b * D + d] >= 0) GW[a[b * D + d] * D + d] = T(A(GW[a[b * D + d] * D + d]) + A(gb[d]));
          continue;
        }
        const A scale = mode == kMean && a[b] > 0 ? A(1) / A(a[b]) : A(1);
        for (int64_t j = bd[b]; j < bd[b + 1]; ++j) {
          if (ix[j] == padding_idx) continue;
          const A s = (P ? A(P[j]) : A(1)) * scale;
          T* row = GW + ix[j] * D;
          for (int64_t d = d0; d < d1; ++d) row[d] = T(A(row[d]) + A(gb[d]) * s);
        }
      }
    });
    if (P) {  // d out[b] / d psw[j] = weight[ix[j]]: a dot product per position
      const T* Wp = w.data_ptr<T>();
      T* GP = grad_psw.data_ptr<T>();
      parallel_for(0, B, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, D)), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
          for (int64_t j = bd[b]; j < bd[b + 1]; ++j) {
            if (ix[j] == padding_idx) continue;
            A dot = A(0);
            for (int64_t d = 0; d < D; ++d) dot += A(G[b * D + d]) * A(Wp[ix[j] * D + d]);
            GP[j] = T(dot);
          }
      });
    }
  });
  return {grad_weight, grad_psw};
}

EMBER_REGISTER_KERNEL(_embedding_bag, CPU, embedding_bag_cpu);
EMBER_REGISTER_KERNEL(_embedding_bag_backward, CPU, embedding_bag_backward_cpu);

}  // namespace
}  // namespace ember::cpu
