// Every dispatched op, declared once: EMBER_OP(name, signature). Included twice, by
// op_handles.h (declarations of ember::ops::name()) and op_handles.cpp (definitions).
// Composite ops (built from these, e.g. matmul, flatten, softmax's callers) are plain functions
// in src/ops/*.cpp and need no entry. No include guard on purpose.
//
// Families of one-tensor and two-tensor elementwise ops share a signature; they are listed
// through X-macros so a CPU (or CUDA) backend can register a whole family in a loop.
#define EMBER_UNARY_FLOAT_OPS(X) \
  X(exp) X(exp2) X(log) X(log1p) X(expm1) X(log2) X(log10) X(sqrt) X(rsqrt) X(sin) X(cos) \
  X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(sigmoid) X(silu) X(erf) X(reciprocal)
#define EMBER_UNARY_KEEP_OPS(X) \
  X(neg) X(abs) X(sign) X(square) X(relu) X(floor) X(ceil) X(round) X(trunc) X(frac)
#define EMBER_BINARY_ARITH_OPS(X) \
  X(mul) X(remainder) X(fmod) X(pow) X(maximum) X(minimum) X(atan2) X(floor_divide) \
  X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(bitwise_left_shift) X(bitwise_right_shift)
#define EMBER_COMPARE_OPS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or) X(logical_xor)

#define EMBER_UNARY_ENTRY(n) EMBER_OP(n, Tensor(const Tensor&)) EMBER_OP(n##_, Tensor&(Tensor&))
EMBER_UNARY_FLOAT_OPS(EMBER_UNARY_ENTRY)
EMBER_UNARY_KEEP_OPS(EMBER_UNARY_ENTRY)
#undef EMBER_UNARY_ENTRY
#define EMBER_BINARY_ENTRY(n) \
  EMBER_OP(n, Tensor(const Tensor&, const Tensor&)) EMBER_OP(n##_, Tensor&(Tensor&, const Tensor&))
EMBER_BINARY_ARITH_OPS(EMBER_BINARY_ENTRY)
#undef EMBER_BINARY_ENTRY
#define EMBER_COMPARE_ENTRY(n) EMBER_OP(n, Tensor(const Tensor&, const Tensor&))
EMBER_COMPARE_OPS(EMBER_COMPARE_ENTRY)
#undef EMBER_COMPARE_ENTRY

// ---- factories, fills, copies, random (creation.cpp, cpu/fill_kernels.cpp, cpu/random_kernels.cpp)
EMBER_OP(empty, Tensor(IntArrayRef, TensorOptions))
EMBER_OP(empty_strided, Tensor(IntArrayRef, IntArrayRef, TensorOptions))
EMBER_OP(fill_, Tensor&(Tensor&, const Scalar&))
// copy_(self, src, non_blocking): non_blocking lets a copy between pinned host memory and a
// device return before it finishes (ordered on the device's current stream), as torch's.
EMBER_OP(copy_, Tensor&(Tensor&, const Tensor&, bool))
EMBER_OP(arange, Tensor(const Scalar&, const Scalar&, const Scalar&, TensorOptions))
EMBER_OP(linspace, Tensor(const Scalar&, const Scalar&, int64_t, TensorOptions))
EMBER_OP(uniform_, Tensor&(Tensor&, double, double, Generator*))
EMBER_OP(normal_, Tensor&(Tensor&, double, double, Generator*))
// random_(from, to): to = nullopt is torch's `to=None` (the dtype's own upper end; from the
// lowest int64, the full 64-bit range).
EMBER_OP(random_, Tensor&(Tensor&, int64_t, std::optional<int64_t>, Generator*))
EMBER_OP(bernoulli_, Tensor&(Tensor&, double, Generator*))
EMBER_OP(exponential_, Tensor&(Tensor&, double, Generator*))
EMBER_OP(log_normal_, Tensor&(Tensor&, double, double, Generator*))
EMBER_OP(randperm, Tensor(int64_t, TensorOptions, Generator*))
EMBER_OP(multinomial, Tensor(const Tensor&, int64_t, bool, Generator*))

// ---- views (shape.cpp; device-agnostic kernels registered for CompositeBackend)
EMBER_OP(as_strided, Tensor(const Tensor&, IntArrayRef, IntArrayRef, OptInt))
EMBER_OP(view, Tensor(const Tensor&, IntArrayRef))
EMBER_OP(permute, Tensor(const Tensor&, IntArrayRef))
EMBER_OP(transpose, Tensor(const Tensor&, int64_t, int64_t))
EMBER_OP(expand, Tensor(const Tensor&, IntArrayRef))
EMBER_OP(squeeze, Tensor(const Tensor&))
EMBER_OP(squeeze_dim, Tensor(const Tensor&, int64_t))
EMBER_OP(unsqueeze, Tensor(const Tensor&, int64_t))
EMBER_OP(select, Tensor(const Tensor&, int64_t, int64_t))
EMBER_OP(slice, Tensor(const Tensor&, int64_t, OptInt, OptInt, int64_t))
EMBER_OP(diagonal, Tensor(const Tensor&, int64_t, int64_t, int64_t))

// ---- shape ops that copy (shape.cpp, cpu/shape_kernels.cpp)
EMBER_OP(clone, Tensor(const Tensor&))
EMBER_OP(cat, Tensor(TensorList, int64_t))
EMBER_OP(repeat, Tensor(const Tensor&, IntArrayRef))
EMBER_OP(flip, Tensor(const Tensor&, IntArrayRef))
EMBER_OP(roll, Tensor(const Tensor&, IntArrayRef, IntArrayRef))
EMBER_OP(tril, Tensor(const Tensor&, int64_t))
EMBER_OP(triu, Tensor(const Tensor&, int64_t))
EMBER_OP(to_dtype, Tensor(const Tensor&, DType))

// ---- elementwise with extra arguments (binary.cpp, unary.cpp, cpu/*_kernels.cpp)
EMBER_OP(add, Tensor(const Tensor&, const Tensor&, const Scalar&))
EMBER_OP(add_, Tensor&(Tensor&, const Tensor&, const Scalar&))
EMBER_OP(sub, Tensor(const Tensor&, const Tensor&, const Scalar&))
EMBER_OP(sub_, Tensor&(Tensor&, const Tensor&, const Scalar&))
EMBER_OP(div, Tensor(const Tensor&, const Tensor&, const std::optional<std::string>&))
EMBER_OP(div_, Tensor&(Tensor&, const Tensor&, const std::optional<std::string>&))
EMBER_OP(where, Tensor(const Tensor&, const Tensor&, const Tensor&))
EMBER_OP(clamp, Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&))
EMBER_OP(clamp_, Tensor&(Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&))
EMBER_OP(clamp_tensor, Tensor(const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&))
EMBER_OP(lerp, Tensor(const Tensor&, const Tensor&, const Tensor&))
EMBER_OP(nan_to_num, Tensor(const Tensor&, std::optional<double>, std::optional<double>, std::optional<double>))
EMBER_OP(gelu, Tensor(const Tensor&, const std::string&))
// (grad_out, input, approximate) -> grad_in, one pass: gelu's backward when no graph of the
// backward is built (create_graph composes it from differentiable ops, src/ops/unary.cpp).
EMBER_OP(gelu_backward, Tensor(const Tensor&, const Tensor&, const std::string&))
// tanh's and sigmoid's gradients from their results in one pass (torch's names): g * (1 - y * y)
// and g * (1 - y) * y, the formulas their autograd kernels otherwise compose from three ops.
EMBER_OP(tanh_backward, Tensor(const Tensor&, const Tensor&))
EMBER_OP(sigmoid_backward, Tensor(const Tensor&, const Tensor&))
// (grad, self) -> silu's gradient in one pass: g * s * (1 + x * (1 - s)), s = sigmoid(x) (torch's
// silu_backward; the formula SiluBackward0 otherwise composes from six ops)
EMBER_OP(silu_backward, Tensor(const Tensor&, const Tensor&))
// relu's gradient from its input or result: grad where self > threshold, else 0 (torch's
// threshold_backward; a NaN in self passes the gradient, as `where(self <= threshold, 0, grad)`)
EMBER_OP(threshold_backward, Tensor(const Tensor&, const Tensor&, const Scalar&))
EMBER_OP(leaky_relu, Tensor(const Tensor&, const Scalar&))
EMBER_OP(logical_not, Tensor(const Tensor&))
EMBER_OP(bitwise_not, Tensor(const Tensor&))
EMBER_OP(isnan, Tensor(const Tensor&))
EMBER_OP(isinf, Tensor(const Tensor&))
EMBER_OP(isfinite, Tensor(const Tensor&))
EMBER_OP(masked_fill_, Tensor&(Tensor&, const Tensor&, const Scalar&))

// ---- reductions (reduce.cpp, cpu/reduce_kernels.cpp). dims empty = all dims.
EMBER_OP(sum, Tensor(const Tensor&, IntArrayRef, bool, std::optional<DType>))
EMBER_OP(mean, Tensor(const Tensor&, IntArrayRef, bool, std::optional<DType>))
EMBER_OP(prod, Tensor(const Tensor&, IntArrayRef, bool, std::optional<DType>))
EMBER_OP(amax, Tensor(const Tensor&, IntArrayRef, bool))
EMBER_OP(amin, Tensor(const Tensor&, IntArrayRef, bool))
EMBER_OP(max_dim, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool))
EMBER_OP(min_dim, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool))
EMBER_OP(argmax, Tensor(const Tensor&, std::optional<int64_t>, bool))
EMBER_OP(argmin, Tensor(const Tensor&, std::optional<int64_t>, bool))
EMBER_OP(var, Tensor(const Tensor&, IntArrayRef, int64_t, bool))  // int64_t: correction (1 = unbiased)
EMBER_OP(norm, Tensor(const Tensor&, const Scalar&, IntArrayRef, bool))
EMBER_OP(any, Tensor(const Tensor&, IntArrayRef, bool))
EMBER_OP(all, Tensor(const Tensor&, IntArrayRef, bool))
EMBER_OP(cumsum, Tensor(const Tensor&, int64_t, std::optional<DType>))
EMBER_OP(cumprod, Tensor(const Tensor&, int64_t, std::optional<DType>))
EMBER_OP(softmax, Tensor(const Tensor&, int64_t, std::optional<DType>))
EMBER_OP(log_softmax, Tensor(const Tensor&, int64_t, std::optional<DType>))

// ---- reductions by selection (median, kthvalue) (order_stats.cpp, cpu/order_stats_kernels.cpp)
// Along one (wrapped) dim, (values, indices): the k-th smallest (1-based) / the lower median /
// the lower median of the non-NaN values, NaN ordered as the largest value, ties by position.
EMBER_OP(kthvalue, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool))
EMBER_OP(median_dim, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool))
EMBER_OP(nanmedian_dim, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool))
// Over every element, 0-dim; NaN for an empty input. CompositeBackend kernels (through the
// dim forms on the flattened input), so a new device needs only the three above.
EMBER_OP(median, Tensor(const Tensor&))
EMBER_OP(nanmedian, Tensor(const Tensor&))
// round(decimals != 0) (unary.cpp, cpu/unary_kernels.cpp): x * 10^d rounded half to even and
// divided back (d < 0: divided first). Elementwise, listed here with this change's other ops.
EMBER_OP(round_decimals, Tensor(const Tensor&, int64_t))
EMBER_OP(round_decimals_, Tensor&(Tensor&, int64_t))

// ---- linear algebra (linalg.cpp, cpu/blas_kernels.cpp)
EMBER_OP(mm, Tensor(const Tensor&, const Tensor&))
EMBER_OP(bmm, Tensor(const Tensor&, const Tensor&))
EMBER_OP(addmm, Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&))
EMBER_OP(dot, Tensor(const Tensor&, const Tensor&))
// A Linear and what reads it alone, as one op (ember.compile's matmul epilogues: src/compile/
// matmul_epilogue.cpp; ops/addmm_epilogue.cpp; cpu/addmm_epilogue_kernels.cpp):
// (bias (N) or none, mat1 (M, K), mat2 (K, N), residual (M, N) or none, activation, save_pre)
// -> (out, pre) with pre = mat1 @ mat2 + bias and out = act(pre) + residual, act 0 none, 1 relu,
// 2 gelu, 3 gelu (tanh); pre is returned when save_pre, else undefined. The CPU applies bias,
// activation and residual to each block of the product while it is in cache.
EMBER_OP(_addmm_epilogue, std::tuple<Tensor, Tensor>(const std::optional<Tensor>&, const Tensor&, const Tensor&,
                                                     const std::optional<Tensor>&, int64_t, bool))

// ---- linalg (LAPACK) (ops/linalg_factor.cpp, linalg_decomp.cpp; cpu/lapack_*.cpp)
// Inputs arrive checked: float32/float64 batches of matrices (..., m, n), square where the
// factorisation needs it, batch dims already broadcast between operands. Results are contiguous.
// info: int32 of the batch shape, LAPACK's info per matrix (0 = success); the ops turn it into
// torch's errors, so a backend reports failure the same way and *_ex callers get it unraised.
EMBER_OP(linalg_inv_ex, std::tuple<Tensor, Tensor>(const Tensor&))  // (inverse, info)
// (A (..., m, n)) -> (LU, pivots int32 (..., min(m, n)) 1-based as LAPACK's, info): partial pivoting
EMBER_OP(linalg_lu_factor_ex, std::tuple<Tensor, Tensor, Tensor>(const Tensor&))
// (A (..., n, n), B (..., n, k)) -> (X, info) with A X = B
EMBER_OP(linalg_solve_ex, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&))
EMBER_OP(linalg_det, Tensor(const Tensor&))
EMBER_OP(linalg_slogdet, std::tuple<Tensor, Tensor>(const Tensor&))  // (sign, logabsdet)
EMBER_OP(linalg_cholesky_ex, std::tuple<Tensor, Tensor>(const Tensor&, bool))  // (L or U, info), bool: upper
// mode: 0 reduced, 1 complete, 2 r (Q is an empty tensor) -> (Q, R)
EMBER_OP(linalg_qr, std::tuple<Tensor, Tensor>(const Tensor&, int64_t))
// (A, full_matrices, compute_uv) -> (U, S, Vh); U and Vh are empty tensors without compute_uv
EMBER_OP(linalg_svd, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, bool, bool))
// (A, upper: read the upper triangle, compute_v) -> (eigenvalues ascending, eigenvectors or empty)
EMBER_OP(linalg_eigh, std::tuple<Tensor, Tensor>(const Tensor&, bool, bool))
// (A, compute_v) -> (eigenvalues, eigenvectors or empty), complex for a real A too (geev)
EMBER_OP(linalg_eig, std::tuple<Tensor, Tensor>(const Tensor&, bool))
// LAPACK's gelsy: (A (..., m, n), B (..., m, k), rcond) -> (solution (..., n, k), rank int64)
EMBER_OP(linalg_lstsq_gelsy, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, double))

// ---- indexing and sorting (index.cpp, sort.cpp, cpu/index_kernels.cpp, cpu/sort_kernels.cpp)
EMBER_OP(index_select, Tensor(const Tensor&, int64_t, const Tensor&))
EMBER_OP(gather, Tensor(const Tensor&, int64_t, const Tensor&))
EMBER_OP(scatter_, Tensor&(Tensor&, int64_t, const Tensor&, const Tensor&))
EMBER_OP(scatter_value_, Tensor&(Tensor&, int64_t, const Tensor&, const Scalar&))
EMBER_OP(scatter_add_, Tensor&(Tensor&, int64_t, const Tensor&, const Tensor&))
EMBER_OP(index_add_, Tensor&(Tensor&, int64_t, const Tensor&, const Tensor&, const Scalar&))
EMBER_OP(index, Tensor(const Tensor&, ArrayRef<std::optional<Tensor>>))
EMBER_OP(index_put_, Tensor&(Tensor&, ArrayRef<std::optional<Tensor>>, const Tensor&, bool))
EMBER_OP(nonzero, Tensor(const Tensor&))
EMBER_OP(sort, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool, bool))
EMBER_OP(topk, std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool, bool))
EMBER_OP(unique, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, bool, bool, bool, std::optional<int64_t>))
EMBER_OP(bincount, Tensor(const Tensor&, const std::optional<Tensor>&, int64_t))

// ---- nn: convolution and pooling (src/nn/functional/conv.cpp, pool.cpp; cpu/conv_kernels.cpp)
// (nn-conv section: add entries here)
// Fused 2-d convolution on batched (N, C, H, W) input with symmetric padding; the composites in
// conv.cpp handle unbatched input, conv1d and asymmetric "same" padding. The two backward ops
// are convolutions themselves and carry their own gradient formulas (double backward).
EMBER_OP(conv2d_forward, Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef, IntArrayRef, IntArrayRef, int64_t))
// (grad_output, weight, input_size, stride, padding, dilation, groups) -> grad_input
EMBER_OP(conv2d_backward_input, Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, int64_t))
// (grad_output, input, weight_size, stride, padding, dilation, groups) -> grad_weight
EMBER_OP(conv2d_backward_weight, Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, int64_t))
// Pooling on batched (N, C, H, W) input. (input, kernel, stride, padding, dilation, ceil_mode);
// indices are flat positions in each H*W plane, as PyTorch's.
EMBER_OP(max_pool2d_with_indices, std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool))
// (grad_output, input, indices) -> grad_input
EMBER_OP(max_pool2d_backward, Tensor(const Tensor&, const Tensor&, const Tensor&))
// (input, kernel, stride, padding, ceil_mode, count_include_pad)
EMBER_OP(avg_pool2d, Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool))
// (grad_output, input, kernel, stride, padding, ceil_mode, count_include_pad) -> grad_input
EMBER_OP(avg_pool2d_backward, Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool))
EMBER_OP(adaptive_avg_pool2d, Tensor(const Tensor&, IntArrayRef))
// (grad_output, input) -> grad_input
EMBER_OP(adaptive_avg_pool2d_backward, Tensor(const Tensor&, const Tensor&))
// 3-d convolution on batched (N, C, D, H, W) input, arguments as the 2-d ops above (the CPU
// kernels are the 2-d ones over a depth dim). conv_transpose1d/2d/3d compose the backward ops.
EMBER_OP(conv3d_forward, Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef, IntArrayRef, IntArrayRef, int64_t))
EMBER_OP(conv3d_backward_input, Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, int64_t))
EMBER_OP(conv3d_backward_weight, Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, int64_t))
// 3-d pooling on batched (N, C, D, H, W) input; indices are flat positions in each D*H*W volume.
EMBER_OP(max_pool3d_with_indices, std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool))
// (grad_output, input, indices) -> grad_input: scatters by the indices (max_pool3d, adaptive_max_pool3d)
EMBER_OP(max_pool3d_backward, Tensor(const Tensor&, const Tensor&, const Tensor&))
// (input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override; 0 = none)
EMBER_OP(avg_pool3d, Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool, int64_t))
EMBER_OP(avg_pool3d_backward, Tensor(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool, int64_t))
EMBER_OP(adaptive_avg_pool3d, Tensor(const Tensor&, IntArrayRef))
EMBER_OP(adaptive_avg_pool3d_backward, Tensor(const Tensor&, const Tensor&))
// (input, output_size) -> (out, indices); adaptive_max_pool1d/2d run it on unit depth
EMBER_OP(adaptive_max_pool3d, std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef))
// unfold: batched (N, C, H, W) -> (N, C*kH*kW, L). (input, kernel_size, dilation, padding, stride)
EMBER_OP(im2col, Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef))
// fold, im2col's adjoint: (N, C*kH*kW, L) -> (N, C, oH, oW). (input, output_size, kernel_size, dilation, padding, stride)
EMBER_OP(col2im, Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef))

// ---- nn: interpolation and padding (src/nn/functional/upsample.cpp, pad.cpp; cpu/upsample_kernels.cpp,
// pad_kernels.cpp) [issue 15 layers]
// (input (N, C, *spatial), 1-3 spatial dims; output_size: one per spatial dim; scales: one per
// spatial dim or empty, <= 0 = not given (torch's optional scale, used instead of in/out when
// present); mode: 0 nearest, 1 nearest-exact, 2 linear/bilinear/trilinear, 3 bicubic (2-d),
// 4 / 5 antialiased linear / cubic;
// align_corners) with PyTorch's coordinate formulas.
EMBER_OP(upsample, Tensor(const Tensor&, IntArrayRef, ArrayRef<double>, int64_t, bool))
// (grad_output, input_size (N, C, *spatial), scales, mode, align_corners) -> grad_input
EMBER_OP(upsample_backward, Tensor(const Tensor&, IntArrayRef, ArrayRef<double>, int64_t, bool))
// F.embedding_bag (src/nn/functional/embedding_bag.cpp checks; cpu/embedding_bag_kernels.cpp):
// (weight (num, D), indices (n) int64, bounds (B + 1) int64: bag b is indices[bounds[b], bounds[b+1]),
// mode 0 sum / 1 mean / 2 max, per_sample_weights (n) or none (sum only), padding_idx or -1)
// -> (output (B, D), aux: per-bag count of non-padding entries (sum, mean) or the argmax rows (max))
EMBER_OP(_embedding_bag, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, int64_t,
                                                    const std::optional<Tensor>&, int64_t))
// (grad, weight, indices, bounds, aux, mode, per_sample_weights, padding_idx) -> (grad_weight, grad_psw)
EMBER_OP(_embedding_bag_backward, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                             const Tensor&, int64_t, const std::optional<Tensor>&,
                                                             int64_t))
// F.ctc_loss (src/nn/functional/ctc_loss.cpp checks; cpu/ctc_kernels.cpp): (log_probs (T, N, C),
// targets (N, S) int64 padded, input_lengths (N) int64, target_lengths (N) int64, blank,
// zero_infinity: for the backward) -> (neg_log_likelihood (N), log_alpha (N, T, 2S + 1))
EMBER_OP(_ctc_loss, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                                               bool))
// (grad (N), log_probs, targets, input_lengths, target_lengths, neg_log_likelihood, log_alpha, blank,
// zero_infinity) -> grad_log_probs (T, N, C)
EMBER_OP(_ctc_loss_backward, Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                    const Tensor&, const Tensor&, int64_t, bool))
// F.grid_sample on 4-D input (src/nn/functional/grid_sample.cpp checks; cpu/grid_sample_kernels.cpp):
// (input (N, C, H, W), grid (N, Ho, Wo, 2) in [-1, 1], interpolation 0 bilinear / 1 nearest,
// padding 0 zeros / 1 border / 2 reflection, align_corners) -> (N, C, Ho, Wo)
EMBER_OP(grid_sampler_2d, Tensor(const Tensor&, const Tensor&, int64_t, int64_t, bool))
// (grad_output, input, grid, interpolation, padding, align_corners, input_requires_grad)
// -> (grad_input (undefined unless asked), grad_grid)
EMBER_OP(grid_sampler_2d_backward, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, int64_t,
                                                              int64_t, bool, bool))
// F.pad's reflect (0), replicate (1) and circular (2) modes on the last pad.size() / 2 (1-3)
// dims, negative pads cropping first (src/nn/functional/pad.cpp checks; cpu/pad_kernels.cpp).
EMBER_OP(pad_nd, Tensor(const Tensor&, IntArrayRef, int64_t))
// (grad_output, input_size, pad, mode) -> grad_input
EMBER_OP(pad_nd_backward, Tensor(const Tensor&, IntArrayRef, IntArrayRef, int64_t))

// ---- nn: normalisation, activations, dropout, attention (src/nn/functional/norm.cpp, activation.cpp)
// (nn-norm section: add entries here)
// Fused layer norm / RMS norm over the trailing dims given by normalized_shape. Returns
// (out, mean, rstd) / (out, rstd); the statistics have one entry per row, in float32 for
// float32/float16/bfloat16 input, float64 for float64 (the backward formula reuses them).
EMBER_OP(native_layer_norm, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, IntArrayRef, const std::optional<Tensor>&,
                                                               const std::optional<Tensor>&, double))
EMBER_OP(native_rms_norm, std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, const std::optional<Tensor>&, double))
// (grad_out, input, normalized_shape, mean, rstd, weight, output_mask: 1 dx | 2 dweight | 4 dbias)
// -> (dx, dweight, dbias), undefined where not asked. One fused pass; used by layer_norm's
// backward when no graph of the backward is built (create_graph uses differentiable ops).
EMBER_OP(native_layer_norm_backward, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, IntArrayRef, const Tensor&,
                                                                        const Tensor&, const std::optional<Tensor>&, int64_t))
// rms_norm's backward in one pass per row (grad_out, input, normalized_shape, rstd, weight,
// mask: bit 0 dx, bit 1 dweight) -> (dx, dweight); RmsNormBackward0 uses it without create_graph.
EMBER_OP(native_rms_norm_backward, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, IntArrayRef, const Tensor&,
                                                             const std::optional<Tensor>&, int64_t))
// One LSTM step's pointwise part (nn/functional/rnn.cpp; torch's _thnn_fused_lstm_cell):
// gates (N, 4H) = x W_ih^T + h W_hh^T + biases, c (N, H); i, f, g, o = sigmoid, sigmoid, tanh,
// sigmoid of gates' four column blocks, c' = f c + i g, h' = o tanh(c') -> (h', c'). One pass on
// the CPU (src/cpu/rnn_kernels.cpp); other backends run the composition (src/ops/rnn_cell.cpp).
EMBER_OP(_lstm_cell, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&))
// (grad_h', grad_c', gates, c, c') -> (grad_gates, grad_c): its gradient, also one pass
EMBER_OP(_lstm_cell_backward, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                         const Tensor&))
// One GRU step's pointwise part (torch's _thnn_fused_gru_cell): xg = x W_ih^T + b_ih and
// hg = h W_hh^T + b_hh, both (N, 3H), h (N, H); r = sigmoid(xg_r + hg_r), z = sigmoid(xg_z +
// hg_z), n = tanh(xg_n + r hg_n), h' = n + z (h - n).
EMBER_OP(_gru_cell, Tensor(const Tensor&, const Tensor&, const Tensor&))
// (grad_h', xg, hg, h) -> (grad_xg, grad_hg, grad_h)
EMBER_OP(_gru_cell_backward, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                                const Tensor&))
// Flash attention (F::scaled_dot_product_attention's fused path; nn/functional/flash_attention.cpp
// picks it, CUDA kernels in cuda/flash_attention_*): q (..., Tq, D), k and v (..., Tk, D) with the
// same leading dims; (attn_mask, is_causal, scale) -> (out, lse), lse float32 (..., Tq): the
// natural log of each query row's sum of exp(scaled scores), which the backward needs instead of
// the T x T probabilities. attn_mask (CPU only): bool (true keeps) or additive float,
// broadcastable to (..., Tq, Tk), never with is_causal; a row with every key masked gives 0.
EMBER_OP(_flash_attention_forward, std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                              const std::optional<Tensor>&, bool, double))
// (grad_out, q, k, v, attn_mask, out, lse, is_causal, scale) -> (dq, dk, dv)
EMBER_OP(_flash_attention_backward, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                                       const Tensor&, const std::optional<Tensor>&,
                                                                       const Tensor&, const Tensor&, bool, double))
// Batch norm with batch statistics (training, or no running stats) over every dim but 1 of
// (N, C, ...) input, weight and bias applied in the same pass. Returns (out, save_mean,
// save_invstd), one entry per channel, float32 for float32/float16/bfloat16 input (as PyTorch).
EMBER_OP(native_batch_norm, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const std::optional<Tensor>&,
                                                               const std::optional<Tensor>&, double))
// (grad_out, input, weight, save_mean, save_invstd, output_mask: 1 dx | 2 dweight | 4 dbias)
// -> (dx, dweight, dbias), undefined where not asked: two passes per channel.
EMBER_OP(native_batch_norm_backward, std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&,
                                                                        const std::optional<Tensor>&, const Tensor&,
                                                                        const Tensor&, int64_t))
// y = x * scale[c] + shift[c] over dim 1 (channels) of (N, C, ...) input, one pass: the affine
// step of batch_norm / group_norm. scale and shift are 1-D of size C.
EMBER_OP(channel_affine, Tensor(const Tensor&, const Tensor&, const Tensor&))

// ---- nn: losses (src/nn/functional/loss.cpp)
// (nn-loss section: add entries here)
// Fused cross entropy with class-index targets over rows: input (M, C) contiguous, target (M)
// int64; int64 args: ignore_index, reduction (0 none, 1 mean, 2 sum); double: label_smoothing.
// Kernels: src/cpu/loss_kernels.cpp. Backward takes (grad, input, target, weight, ...).
EMBER_OP(cross_entropy_index, Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t, double))
EMBER_OP(cross_entropy_index_backward, Tensor(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t, double))

// ---- optimizers (src/optim, ops/optim.cpp, cpu/optim_kernels.cpp)
// One update of a whole list of parameters, in place: torch's _fused_adam_ / _fused_adamw_ /
// _fused_sgd_ / _fused_adagrad_ family (and an RMSprop of the same shape, which torch lacks).
// Every list holds one tensor per parameter, of that parameter's shape, dtype and device; a
// list whose option is off (max_exp_avg_sqs without amsgrad) is empty. state_steps holds each
// parameter's step count, already incremented for this update, as a one-element float32 tensor
// on the parameter's device, so a device kernel reads it without a host round trip. Checks:
// ops/optim.cpp. The optimizers in src/optim keep the state and call these once per device.
// (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
//  lr, beta1, beta2, weight_decay, eps, amsgrad, maximize)
EMBER_OP(_fused_adam_, void(TensorList, TensorList, TensorList, TensorList, TensorList, TensorList,
                            double, double, double, double, double, bool, bool))
EMBER_OP(_fused_adamw_, void(TensorList, TensorList, TensorList, TensorList, TensorList, TensorList,
                             double, double, double, double, double, bool, bool))
// (params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
//  is_first_step: the buffers are created from this step's gradient)
EMBER_OP(_fused_sgd_, void(TensorList, TensorList, TensorList, double, double, double, double, bool, bool, bool))
// (params, grads, state_sums, state_steps, lr, lr_decay, weight_decay, eps, maximize)
EMBER_OP(_fused_adagrad_, void(TensorList, TensorList, TensorList, TensorList, double, double, double, double, bool))
// (params, grads, square_avgs, momentum_buffer_list, grad_avgs, lr, alpha, eps, weight_decay,
//  momentum, centered, maximize)
EMBER_OP(_fused_rmsprop_, void(TensorList, TensorList, TensorList, TensorList, TensorList,
                               double, double, double, double, double, bool, bool))

// ---- special functions and scans (issue 15 names section: ops/special.cpp, cpu/special_kernels.cpp)
// Floating one-operand ops (integers compute in the default float dtype), formulas in
// ops/special_formulas.h. i1 is listed because i0's gradient is i1.
#define EMBER_UNARY_SPECIAL_OPS(X) X(lgamma) X(digamma) X(erfinv) X(erfc) X(i0) X(i1) X(sinc)
#define EMBER_UNARY_ENTRY(n) EMBER_OP(n, Tensor(const Tensor&)) EMBER_OP(n##_, Tensor&(Tensor&))
EMBER_UNARY_SPECIAL_OPS(EMBER_UNARY_ENTRY)
#undef EMBER_UNARY_ENTRY
// (n, x): the n-th derivative of digamma; n >= 0 (checked in ops/special.cpp)
EMBER_OP(polygamma, Tensor(int64_t, const Tensor&))
// Running max / min along dim: (values, indices of the last maximum so far; NaN sticks).
EMBER_OP(cummax, std::tuple<Tensor, Tensor>(const Tensor&, int64_t))
EMBER_OP(cummin, std::tuple<Tensor, Tensor>(const Tensor&, int64_t))
// log(cumsum(exp(x))) along dim without overflow or underflow (a running logaddexp).
EMBER_OP(logcumsumexp, Tensor(const Tensor&, int64_t))
// Where each value falls in the last dim of a sorted sequence (ops/search.cpp, cpu/search_kernels.cpp):
// (sorted_sequence, values, out_int32, right); the sequence is 1-D or shares values' leading dims.
EMBER_OP(searchsorted, Tensor(const Tensor&, const Tensor&, bool, bool))
// (alpha, x): d x / d alpha for x ~ Gamma(alpha, 1) with the sample's quantile held fixed (the
// implicit reparameterisation gradient of Gamma/Beta/Dirichlet rsample). Formula: special_formulas.h.
EMBER_OP(_standard_gamma_grad, Tensor(const Tensor&, const Tensor&))
// Regularised incomplete gamma functions (a, x) -> P(a, x) / Q(a, x) = 1 - P (special_formulas.h).
EMBER_OP(igamma, Tensor(const Tensor&, const Tensor&))
EMBER_OP(igammac, Tensor(const Tensor&, const Tensor&))

// ---- complex numbers (ops/complex.cpp, cpu/complex_kernels.cpp). view_as_real/view_as_complex
// reinterpret the storage (CompositeBackend); conj_physical conjugates into a new tensor.
EMBER_OP(view_as_real, Tensor(const Tensor&))
EMBER_OP(view_as_complex, Tensor(const Tensor&))
// Tensor.view(dtype): self's storage read as another dtype (ops/view.cpp; CompositeBackend). Not
// differentiable (torch's view.dtype neither). Element sizes may differ: the last dim scales.
EMBER_OP(view_dtype, Tensor(const Tensor&, DType))
EMBER_OP(conj_physical, Tensor(const Tensor&))

// ---- FFT (ops/fft.cpp, cpu/fft_kernels.cpp): torch's three primitives under torch.fft.
// normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the signal size over dims (the output's
// for c2r). c2c: complex -> complex, forward = exp(-2 pi i jk/n). r2c: real -> complex, the
// last of dims halved to n/2+1 when onesided. c2r: Hermitian half spectrum -> real of
// last_dim_size along the last of dims (the input must hold last_dim_size/2+1 there).
EMBER_OP(fft_c2c, Tensor(const Tensor&, IntArrayRef, int64_t, bool))
EMBER_OP(fft_r2c, Tensor(const Tensor&, IntArrayRef, int64_t, bool))
EMBER_OP(fft_c2r, Tensor(const Tensor&, IntArrayRef, int64_t, int64_t))

// ---- multi-tensor ops (ops/foreach.cpp: checks and the loop every backend can run;
// cuda/foreach_kernels.cu: a launch per batch of tensors). clip_grad_norm_ is their user.
// _foreach_norm_stacked(tensors, ord): the ord-norms of the tensors (all of one floating dtype,
// on one device) as one 1-D tensor of that dtype: torch.stack(torch._foreach_norm(tensors, ord)).
EMBER_OP(_foreach_norm_stacked, Tensor(TensorList, double))
// _foreach_mul_(tensors, scale): every tensor *= scale, a one-element tensor on their device
// (read there: no host round trip).
EMBER_OP(_foreach_mul_, void(TensorList, const Tensor&))

// ---- mixed precision (amp/grad_scaler_ops.cpp checks; cpu/amp_kernels.cpp, cuda/amp_kernels.cu)
// torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale): each gradient
// *= inv_scale in place; found_inf (one-element float32) becomes 1 when a value is inf or NaN.
// Nothing is read back to the host, so a device runs it without a sync.
EMBER_OP(_amp_foreach_non_finite_check_and_unscale_, void(TensorList, const Tensor&, const Tensor&))
// torch._amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
// growth_interval): GradScaler's scale update, in place on the device (ember/amp.h).
EMBER_OP(_amp_update_scale_, Tensor(const Tensor&, const Tensor&, const Tensor&, double, double, int64_t))
