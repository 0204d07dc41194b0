#pragma once
// THE autocast policy table: what each op does to its floating-point inputs inside an autocast
// region, in two columns: CUDA (torch's lists in ATen/autocast_mode.h, shared by every
// accelerator; ember's test device uses it too) and CPU (torch's CPU lists in autocast_mode.cpp).
// Checked against PyTorch 2.x: tests/python/test_autocast.py runs every row (the CPU column
// against torch itself when it is importable) and tests/cpp/test_autocast.cpp the CUDA column on
// the test device.
//
// Policies (torch's CastPolicy names in brackets):
//   Lower     [lower_precision_fp]  inputs cast to the region's dtype (bfloat16 / float16)
//   Fp32      [fp32]                inputs cast to float32
//   Fp32Opt   [fp32_set_opt_dtype]  an op with a dtype argument runs with dtype=float32 when
//                                   the caller gave none (output float32); as given otherwise
//   Promote   [promote]             inputs cast to the widest floating input type
//   Banned    [banned]              raises (binary_cross_entropy on CUDA: unsafe in float16)
//   None      not in torch's list: runs in its input types; ops it calls see autocast
//   Keep      not in torch's list either, for ember composites whose torch op is one kernel
//             (mv, addmv on the CPU): runs in its input types and what it calls is not cast
// Only "eligible" inputs are cast, as torch's: floating tensors of the region's device type
// that are not float64. Integer, bool and float64 tensors and other devices' tensors pass as
// they are.
//
// Dispatched ops get an Autocast kernel (src/amp/autocast_kernels.cpp); composites (C++
// functions built from dispatched ops) apply the policy at their entry with EMBER_AUTOCAST
// (src/amp/autocast.h), and the Python-only ones through ember.amp's wrapper by name, so what
// torch lists by its op name is applied where ember's user calls it. A dispatched op whose
// public function checks dtypes before dispatching (mm, bmm, addmm, dot, cat) also applies its
// row there, so a float32/bfloat16 mix is cast before the check, as in torch.
#include <cstdint>

namespace ember::amp {

enum class CastPolicy : uint8_t { None, Keep, Lower, Fp32, Fp32Opt, Promote, Banned };

// X(op, cuda column, cpu column). Ops with an Autocast kernel (names of src/ops/op_list.h).
#define EMBER_AUTOCAST_DISPATCHED_OPS(X)                                                         \
  /* lower precision: matmuls and convolutions */                                                \
  X(mm, Lower, Lower) X(bmm, Lower, Lower) X(addmm, Lower, Lower)                                \
  X(conv2d_forward, Lower, Lower) X(conv3d_forward, Lower, Lower)                                \
  /* float32: functions that lose range or precision in float16 (CUDA list) */                  \
  X(exp, Fp32, None) X(expm1, Fp32, None) X(log, Fp32, None) X(log10, Fp32, None)                \
  X(log2, Fp32, None) X(log1p, Fp32, None) X(reciprocal, Fp32, None) X(rsqrt, Fp32, None)        \
  X(sinh, Fp32, None) X(cosh, Fp32, None) X(tan, Fp32, None) X(acos, Fp32, None)                 \
  X(asin, Fp32, None) X(erfinv, Fp32, None) X(pow, Fp32, None)                                   \
  X(upsample, Fp32, None) /* upsample_nearest*, upsample_*linear*, upsample_bicubic2d */         \
  /* float32 on the CPU: 3-d pooling, reflection/replication padding, linear algebra, FFT */     \
  X(max_pool3d_with_indices, None, Fp32) X(avg_pool3d, None, Fp32)                               \
  X(adaptive_avg_pool3d, None, Fp32) X(adaptive_max_pool3d, None, Fp32)                          \
  X(pad_nd, None, Fp32) /* reflection_pad*, replication_pad* (and ember's circular) */           \
  X(linalg_inv_ex, None, Fp32) X(linalg_cholesky_ex, None, Fp32) X(linalg_qr, None, Fp32)        \
  X(linalg_svd, None, Fp32) X(linalg_eigh, None, Fp32) X(linalg_lstsq_gelsy, None, Fp32)         \
  X(linalg_lu_factor_ex, None, Fp32) X(fft_c2c, None, Fp32) X(fft_r2c, None, Fp32)               \
  X(fft_c2r, None, Fp32)                                                                         \
  /* reductions with a dtype argument: accumulate and return float32 (CUDA) */                  \
  X(sum, Fp32Opt, None) X(prod, Fp32Opt, Fp32) X(cumsum, Fp32Opt, None)                          \
  X(cumprod, Fp32Opt, None) X(softmax, Fp32Opt, None) X(log_softmax, Fp32Opt, None)              \
  /* the widest input type */                                                                    \
  X(norm, Fp32, None) /* torch: norm with dtype=float32 appended (fp32_append_dtype) */       \
  X(dot, Promote, None) /* and vdot, which is dot(conj(a), b) */                            \
  X(atan2, Promote, None) X(cat, None, Promote)

// Composites, applied by name at their entry: C++ functions (EMBER_AUTOCAST) and Python-only
// functions (ember.amp's wrapper). Same columns.
#define EMBER_AUTOCAST_COMPOSITE_OPS(X)                                                          \
  X(linear, Lower, Lower) X(matmul, Lower, Lower) X(baddbmm, Lower, Lower)                       \
  X(addmv, Lower, Keep) X(mv, Lower, Keep) X(einsum, Lower, None) X(chain_matmul, Lower, None)   \
  X(multi_dot, Lower, None) X(vecdot, Lower, Lower) X(prelu, Lower, Lower)                       \
  X(conv1d, Lower, Lower) X(conv2d, Lower, Lower) X(conv3d, Lower, Lower)                        \
  X(conv_transpose1d, Lower, Lower) X(conv_transpose2d, Lower, Lower)                            \
  X(conv_transpose3d, Lower, Lower) X(scaled_dot_product_attention, Lower, Lower)                \
  X(softplus, Fp32, None) X(layer_norm, Fp32, None) X(rms_norm, Fp32, None)                      \
  X(group_norm, Fp32, None) X(cosine_similarity, Fp32, None) X(logsumexp, Fp32, None)            \
  X(vector_norm, Fp32, None) X(matrix_norm, Fp32, None)                      \
  X(dist, Fp32, None) X(cdist, Fp32, Fp32) X(pdist, Fp32, None) X(renorm, Fp32, None)            \
  /* losses; torch 2's CUDA cross_entropy is log_softmax (fp32_set_opt_dtype) + nll_loss (fp32) */ \
  X(cross_entropy, Fp32, Fp32) X(nll_loss, Fp32, Fp32) X(mse_loss, Fp32, Fp32)                   \
  X(l1_loss, Fp32, Fp32) X(smooth_l1_loss, Fp32, Fp32) X(huber_loss, Fp32, Fp32)                 \
  X(kl_div, Fp32, Fp32) X(binary_cross_entropy_with_logits, Fp32, Fp32)                          \
  X(binary_cross_entropy, Banned, Fp32) X(poisson_nll_loss, Fp32, Fp32)                          \
  X(cosine_embedding_loss, Fp32, Fp32) X(hinge_embedding_loss, Fp32, Fp32)                       \
  X(margin_ranking_loss, Fp32, Fp32) X(soft_margin_loss, Fp32, Fp32)                             \
  X(triplet_margin_loss, Fp32, Fp32) X(multi_margin_loss, Fp32, Fp32)                            \
  X(multilabel_margin_loss, Fp32, Fp32)                                                          \
  X(quantile, None, Fp32) X(nanquantile, None, Fp32) X(trace, None, Fp32) X(polar, None, Fp32)   \
  X(grid_sample, Promote, Fp32)                                                                  \
  X(addcmul, Promote, None) X(addcdiv, Promote, None) X(cross, Promote, None)                    \
  X(bilinear, Promote, Keep) X(tensordot, Promote, None) X(scatter_add, Promote, None)           \
  X(index_put, Promote, None) X(stack, None, Promote) X(index_copy, None, Promote)

enum class AutocastOp : uint16_t {
#define EMBER_AUTOCAST_ENUM(op, cuda, cpu) op,
  EMBER_AUTOCAST_DISPATCHED_OPS(EMBER_AUTOCAST_ENUM) EMBER_AUTOCAST_COMPOSITE_OPS(EMBER_AUTOCAST_ENUM)
#undef EMBER_AUTOCAST_ENUM
  NumOps
};

struct AutocastPolicyRow {
  const char* name;
  CastPolicy cuda, cpu;
};
// Indexed by AutocastOp.
inline constexpr AutocastPolicyRow kAutocastPolicy[] = {
#define EMBER_AUTOCAST_ROW(op, cuda, cpu) {#op, CastPolicy::cuda, CastPolicy::cpu},
    EMBER_AUTOCAST_DISPATCHED_OPS(EMBER_AUTOCAST_ROW) EMBER_AUTOCAST_COMPOSITE_OPS(EMBER_AUTOCAST_ROW)
#undef EMBER_AUTOCAST_ROW
};
static_assert(sizeof(kAutocastPolicy) / sizeof(kAutocastPolicy[0]) == size_t(AutocastOp::NumOps));

}  // namespace ember::amp
