#pragma once
// Every tensor operation as a free function: ember::add(a, b), ember::zeros({2, 3}), ...
// Tensor's methods (tensor.h) forward here. Names, arguments and defaults follow PyTorch.
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/generator.h"
#include "ember/tensor.h"
#include "ember/tensor_init.h"

namespace ember {

// ---------------------------------------------------------------- creation (src/ops/creation.cpp)
Tensor empty(IntArrayRef size, TensorOptions opts = {});
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions opts = {});
Tensor zeros(IntArrayRef size, TensorOptions opts = {});
Tensor ones(IntArrayRef size, TensorOptions opts = {});
// dtype unset: inferred from the fill value (bool, int64 or the default float), as torch.full.
Tensor full(IntArrayRef size, const Scalar& fill_value, TensorOptions opts = {});
// A tensor from nested braces of values: tensor({{1., 2.}, {3., 4.}}). Python floats become the
// default dtype, ints int64, bools bool, unless opts.dtype says otherwise.
Tensor tensor(const TensorInit& values, TensorOptions opts = {});
template <class T> Tensor tensor(const std::vector<T>& values, TensorOptions opts = {});
// A 0-dim tensor holding a Python-style number, flagged as a wrapped number for promotion.
Tensor scalar_tensor(const Scalar& s, TensorOptions opts = {});
// Always on the host, whatever the other operands' device, as torch's wrapped numbers: a device
// kernel takes it by value (no allocation, fill launch or broadcast operand on the GPU).
Tensor wrapped_scalar(const Scalar& s);
Tensor arange(const Scalar& end, TensorOptions opts = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions opts = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts = {});
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base = 10.0,
                TensorOptions opts = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions opts = {});
Tensor rand(IntArrayRef size, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randn(IntArrayRef size, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions opts = {},
               Generator* gen = nullptr);
Tensor randint(int64_t high, IntArrayRef size, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randperm(int64_t n, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor normal(double mean, double std, IntArrayRef size, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
// torch.multinomial: num_samples category indices (int64) drawn from each row of probs, a 1-D
// (n categories -> shape {num_samples}) or 2-D (rows of distributions -> {rows, num_samples})
// floating-point tensor of non-negative, finite weights that need not sum to 1. With
// replacement, draws are independent (inverse CDF on a float64 cumulative sum); without, a
// row's draws are distinct and come in the order of successive draws that each remove the
// chosen category (exponential keys, Efraimidis-Spirakis). Zero-weight categories are never
// drawn. Rows are independent; the randomness comes from gen (or default_generator()), so
// the same seed gives the same draws. Errors as torch: "prob_dist must be 1 or 2 dim",
// "multinomial only supports floating-point dtypes for input, got: Long", "cannot sample
// n_sample <= 0 samples", "cannot sample n_sample > prob_dist.size(-1) samples without
// replacement", "probability tensor contains either `inf`, `nan` or element < 0", "invalid
// multinomial distribution (sum of probabilities <= 0)" (a row sums to 0) and, without
// replacement, "invalid multinomial distribution (with replacement=False, not enough
// non-negative category to sample)" (fewer non-zero weights than num_samples).
// Not differentiable.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Generator* gen = nullptr);
// In-place random fills (the Tensor methods uniform_, normal_, ... forward here).
Tensor& uniform_(Tensor& self, double from = 0.0, double to = 1.0, Generator* gen = nullptr);
Tensor& normal_(Tensor& self, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor& random_(Tensor& self, int64_t from, int64_t to, Generator* gen = nullptr);  // [from, to)
Tensor& bernoulli_(Tensor& self, double p = 0.5, Generator* gen = nullptr);
// random_() without bounds: [0, 2^mantissa digits] for floating dtypes (every integer the
// dtype holds exactly), the dtype's non-negative range for integers, {0, 1} for bool.
Tensor& random_(Tensor& self, Generator* gen = nullptr);
Tensor& random_(Tensor& self, int64_t to, Generator* gen = nullptr);  // [0, to)
// torch's random_(from, to=None): [from, the dtype's upper end]; from the lowest int64, every
// int64 (int64, float64, float32, bfloat16 only).
Tensor& random_from_(Tensor& self, int64_t from, Generator* gen = nullptr);
// Per-element probabilities p, broadcast to self's shape.
Tensor& bernoulli_(Tensor& self, const Tensor& p, Generator* gen = nullptr);
// Draws of self's shape and dtype, each 1 with probability p.
Tensor bernoulli(const Tensor& self, double p, Generator* gen = nullptr);
// -log1p(-U) / lambd for U uniform on [0, 1): exponentially distributed with rate lambd > 0.
Tensor& exponential_(Tensor& self, double lambd = 1.0, Generator* gen = nullptr);
// exp(N(mean, std)).
Tensor& log_normal_(Tensor& self, double mean = 1.0, double std = 2.0, Generator* gen = nullptr);
// torch.normal with tensor arguments: one draw per element of the broadcast shape of mean and std.
Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen = nullptr);
Tensor normal(const Tensor& mean, double std = 1.0, Generator* gen = nullptr);
Tensor normal(double mean, const Tensor& std, Generator* gen = nullptr);
// The *_like forms take dtype/device from `like` unless opts overrides them.
Tensor empty_like(const Tensor& like, TensorOptions opts = {});
// torch's empty_like with preserve_format: like's strides when they are non-overlapping and
// dense (a transposed or channels-last tensor keeps its layout), else contiguous.
Tensor empty_like_layout(const Tensor& like, TensorOptions opts = {});
Tensor zeros_like(const Tensor& like, TensorOptions opts = {});
Tensor ones_like(const Tensor& like, TensorOptions opts = {});
Tensor full_like(const Tensor& like, const Scalar& fill_value, TensorOptions opts = {});
Tensor rand_like(const Tensor& like, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randn_like(const Tensor& like, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randint_like(const Tensor& like, int64_t low, int64_t high, TensorOptions opts = {},
                    Generator* gen = nullptr);
// Wraps memory the caller owns (no copy). deleter, if given, runs when the last view dies.
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions opts = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions opts = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 TensorOptions opts = {});

// ---------------------------------------------------------------- shape and views (src/ops/shape.cpp)
Tensor view(const Tensor& self, IntArrayRef shape);
// self's bytes read as dtype (torch's view.dtype): not differentiable; with another element size
// the last dim (stride 1) scales by the ratio.
Tensor view(const Tensor& self, DType dtype);
Tensor reshape(const Tensor& self, IntArrayRef shape);
Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, OptInt offset = std::nullopt);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor transpose(const Tensor& self, int64_t d0, int64_t d1);
Tensor t(const Tensor& self);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
Tensor squeeze(const Tensor& self, IntArrayRef dims);  // the size-1 dims among dims
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes);
Tensor expand(const Tensor& self, IntArrayRef sizes);
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& self, int64_t dim, int64_t index);
Tensor slice(const Tensor& self, int64_t dim, OptInt start = std::nullopt, OptInt end = std::nullopt,
             int64_t step = 1);
Tensor contiguous(const Tensor& self);
Tensor clone(const Tensor& self);
Tensor movedim(const Tensor& self, int64_t src, int64_t dst);
// Moves each source dim to its destination; the others keep their order in the free slots.
Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination);
Tensor ravel(const Tensor& self);  // flatten to 1-D (a view when possible)
// Windows of `size` every `step` along dim, as a new last dim (a view).
Tensor unfold(const Tensor& self, int64_t dim, int64_t size, int64_t step);
// repeat with missing leading repeats taken as 1 (numpy.tile).
Tensor tile(const Tensor& self, IntArrayRef dims);
Tensor fliplr(const Tensor& self);
Tensor flipud(const Tensor& self);
// Rotation by 90 degrees k times in the plane of dims, from the first towards the second.
Tensor rot90(const Tensor& self, int64_t k = 1, IntArrayRef dims = {0, 1});
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
Tensor cat(TensorList tensors, int64_t dim = 0);
Tensor stack(TensorList tensors, int64_t dim = 0);
Tensor hstack(TensorList tensors);        // along dim 1 (dim 0 for 1-D inputs)
Tensor vstack(TensorList tensors);        // along dim 0, 1-D inputs as rows
Tensor dstack(TensorList tensors);        // along dim 2, inputs made at least 3-D
Tensor column_stack(TensorList tensors);  // 0-D and 1-D inputs as columns, along dim 1
// 0-dim -> (1), (n) -> (1, n), (a, b) -> (a, b, 1): inputs with fewer dims, else unchanged.
Tensor atleast_1d(const Tensor& self);
Tensor atleast_2d(const Tensor& self);
Tensor atleast_3d(const Tensor& self);
std::vector<Tensor> atleast_1d(TensorList tensors);
std::vector<Tensor> atleast_2d(TensorList tensors);
std::vector<Tensor> atleast_3d(TensorList tensors);
// Coordinate grids from 0-D/1-D tensors; indexing "ij" (matrix) or "xy" (Cartesian: the
// first two dims swapped).
std::vector<Tensor> meshgrid(TensorList tensors, const std::string& indexing = "ij");
Tensor repeat(const Tensor& self, IntArrayRef repeats);
Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt);
Tensor flip(const Tensor& self, IntArrayRef dims);
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor triu(const Tensor& self, int64_t diagonal = 0);
Tensor diag(const Tensor& self, int64_t diagonal = 0);
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);  // a view
// Shape every operand broadcasts to, or an error naming both shapes.
Shape broadcast_shapes(IntArrayRef a, IntArrayRef b);
Shape broadcast_shapes(const std::vector<Shape>& shapes);
std::vector<Tensor> broadcast_tensors(TensorList tensors);
// The dtype an op over these operands computes in (torch.result_type).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
// torch.can_cast: floating values don't cast to integers, non-bools don't cast to bool.
bool can_cast(DType from, DType to);

// ---------------------------------------------------------------- elementwise (src/ops/binary.cpp, unary.cpp)
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);  // b - alpha * a
Tensor rsub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
// rounding_mode: nullopt (true division; integers give floats), "trunc" or "floor".
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string> rounding_mode = std::nullopt);
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string> rounding_mode = std::nullopt);
Tensor div(const Scalar& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Tensor& b);  // Python's %: sign of the divisor
Tensor remainder(const Tensor& a, const Scalar& b);
Tensor fmod(const Tensor& a, const Tensor& b);       // C's fmod: sign of the dividend
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
// pow computed in float64.
Tensor float_power(const Tensor& a, const Tensor& b);
Tensor float_power(const Tensor& a, const Scalar& b);
Tensor float_power(const Scalar& a, const Tensor& b);
// maximum/minimum that ignore NaN: the other operand where one is NaN.
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);  // sqrt(a^2 + b^2), floating dtypes

// Complex numbers (ops/complex.cpp). view_as_real: (..., 2) float view of a complex tensor;
// view_as_complex: the reverse (last dim 2, stride 1). real/imag are views. conj of a real
// tensor is the tensor itself; of a complex one, a conjugated copy (torch's is a lazy view).
Tensor view_as_real(const Tensor& self);
Tensor view_as_complex(const Tensor& self);
Tensor real(const Tensor& self);
Tensor imag(const Tensor& self);
Tensor conj(const Tensor& self);
Tensor conj_physical(const Tensor& self);
Tensor complex(const Tensor& real_part, const Tensor& imag_part);
Tensor polar(const Tensor& abs_value, const Tensor& angle_value);
Tensor angle(const Tensor& self);   // atan2(imag, real); 0 or pi for real inputs
Tensor sgn(const Tensor& self);     // z / |z| (0 at 0); sign for real inputs
Tensor complex_abs(const Tensor& z);  // |z| as a real tensor (abs() calls it for complex input)
// self + value * t1 * t2 and self + value * t1 / t2 (integer t1 and t2 are refused by addcdiv).
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor eq(const Tensor& a, const Tensor& b);  Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);  Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);  Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);  Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);  Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);  Tensor ge(const Tensor& a, const Scalar& b);
bool equal(const Tensor& a, const Tensor& b);
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
Tensor bitwise_and(const Tensor& a, const Tensor& b);  Tensor bitwise_and(const Tensor& a, const Scalar& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);   Tensor bitwise_or(const Tensor& a, const Scalar& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);  Tensor bitwise_xor(const Tensor& a, const Scalar& b);
Tensor bitwise_not(const Tensor& a);
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Scalar& b);
Tensor clamp(const Tensor& a, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& a, const std::optional<Tensor>& min, const std::optional<Tensor>& max);
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor nan_to_num(const Tensor& a, std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Tensor gelu(const Tensor& a, const std::string& approximate = "none");  // "none" (erf) or "tanh"
Tensor leaky_relu(const Tensor& a, const Scalar& negative_slope = 0.01);
#define EMBER_UNARY_DECL(name) Tensor name(const Tensor& a); Tensor& name##_(Tensor& a);
EMBER_UNARY_DECL(neg) EMBER_UNARY_DECL(abs) EMBER_UNARY_DECL(sign) EMBER_UNARY_DECL(reciprocal)
EMBER_UNARY_DECL(exp) EMBER_UNARY_DECL(exp2) EMBER_UNARY_DECL(log) EMBER_UNARY_DECL(log1p)
EMBER_UNARY_DECL(expm1) EMBER_UNARY_DECL(log2) EMBER_UNARY_DECL(log10) EMBER_UNARY_DECL(sqrt)
EMBER_UNARY_DECL(rsqrt) EMBER_UNARY_DECL(square) EMBER_UNARY_DECL(sin) EMBER_UNARY_DECL(cos)
EMBER_UNARY_DECL(tan) EMBER_UNARY_DECL(asin) EMBER_UNARY_DECL(acos) EMBER_UNARY_DECL(atan)
EMBER_UNARY_DECL(sinh) EMBER_UNARY_DECL(cosh) EMBER_UNARY_DECL(tanh) EMBER_UNARY_DECL(sigmoid)
EMBER_UNARY_DECL(relu) EMBER_UNARY_DECL(silu) EMBER_UNARY_DECL(erf) EMBER_UNARY_DECL(floor)
EMBER_UNARY_DECL(ceil) EMBER_UNARY_DECL(round) EMBER_UNARY_DECL(trunc) EMBER_UNARY_DECL(frac)
#undef EMBER_UNARY_DECL
// round to `decimals` decimal places (negative: to tens, hundreds, ...), half to even as
// round(); floating dtypes only unless decimals is 0.
Tensor round(const Tensor& a, int64_t decimals);
Tensor& round_(Tensor& a, int64_t decimals);
Tensor isnan(const Tensor& a);
Tensor isinf(const Tensor& a);
Tensor isfinite(const Tensor& a);
Tensor isposinf(const Tensor& a);
Tensor isneginf(const Tensor& a);
Tensor isreal(const Tensor& a);  // all true: ember has no complex dtypes
Tensor signbit(const Tensor& a);  // negative, including -0.0
// +a: a itself; refused for bool, as Python's unary + on a bool tensor.
Tensor positive(const Tensor& a);
// In-place forms write into `self` (which keeps its dtype; the result must be castable to it).
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt);
Tensor& pow_(Tensor& self, const Tensor& exponent);
Tensor& clamp_(Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Tensor& value);  // 0-dim value
Tensor& fill_(Tensor& self, const Scalar& value);
Tensor& zero_(Tensor& self);
// Copies src into self, converting dtype and broadcasting src to self's shape.
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking = false);
// In-place forms of the ops above. Each writes the op's result into self, which keeps its
// dtype and shape: the result type must cast to self's dtype (can_cast) and broadcast to self's
// shape, as PyTorch's in-place ops require.
Tensor& floor_divide_(Tensor& self, const Tensor& other);
Tensor& remainder_(Tensor& self, const Tensor& other);
Tensor& fmod_(Tensor& self, const Tensor& other);
Tensor& atan2_(Tensor& self, const Tensor& other);
Tensor& hypot_(Tensor& self, const Tensor& other);
Tensor& bitwise_and_(Tensor& self, const Tensor& other);
Tensor& bitwise_or_(Tensor& self, const Tensor& other);
Tensor& bitwise_xor_(Tensor& self, const Tensor& other);
Tensor& bitwise_left_shift_(Tensor& self, const Tensor& other);
Tensor& bitwise_right_shift_(Tensor& self, const Tensor& other);
Tensor& logical_and_(Tensor& self, const Tensor& other);
Tensor& logical_or_(Tensor& self, const Tensor& other);
Tensor& logical_xor_(Tensor& self, const Tensor& other);
Tensor& logical_not_(Tensor& self);
Tensor& bitwise_not_(Tensor& self);
Tensor& clamp_(Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max);
Tensor& lerp_(Tensor& self, const Tensor& end, const Scalar& weight);
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& weight);
Tensor& nan_to_num_(Tensor& self, std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt);
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& tril_(Tensor& self, int64_t diagonal = 0);
Tensor& triu_(Tensor& self, int64_t diagonal = 0);
Tensor& addmm_(Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1);

// ---------------------------------------------------------------- reductions (src/ops/reduce.cpp)
Tensor sum(const Tensor& a, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& a, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
// sum with NaN counted as 0.
Tensor nansum(const Tensor& a, std::optional<DType> dtype = std::nullopt);
Tensor nansum(const Tensor& a, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& a, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& a, IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& a, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& a, int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor max(const Tensor& a);
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& a);
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& a, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, IntArrayRef dims = {}, bool keepdim = false);
// (amin, amax) over every element or along one dim; refused where the reduced dim is empty.
std::tuple<Tensor, Tensor> aminmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor var(const Tensor& a, bool unbiased = true);
Tensor var(const Tensor& a, IntArrayRef dims, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& a, bool unbiased = true);
Tensor std(const Tensor& a, IntArrayRef dims, bool unbiased = true, bool keepdim = false);
// With a correction: the divisor is N - correction (nullopt: 1, Bessel's), any real number.
// Pass it as a Scalar: a plain number converts to `bool unbiased` above.
Tensor var(const Tensor& a, IntArrayRef dims, const std::optional<Scalar>& correction, bool keepdim = false);
Tensor std(const Tensor& a, IntArrayRef dims, const std::optional<Scalar>& correction, bool keepdim = false);
// (var, mean) and (std, mean) over dims (empty: every dim).
std::tuple<Tensor, Tensor> var_mean(const Tensor& a, IntArrayRef dims = {}, const std::optional<Scalar>& correction = std::nullopt,
                                    bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& a, IntArrayRef dims = {}, const std::optional<Scalar>& correction = std::nullopt,
                                    bool keepdim = false);
Tensor norm(const Tensor& a, const Scalar& p = 2);
Tensor norm(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim = false);
// The norm of a converted to dtype first (dims empty: every dim).
Tensor norm(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim, DType dtype);
Tensor logsumexp(const Tensor& a, IntArrayRef dims, bool keepdim = false);
Tensor any(const Tensor& a);
Tensor any(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& a, IntArrayRef dims, bool keepdim = false);
Tensor all(const Tensor& a);
Tensor all(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor all(const Tensor& a, IntArrayRef dims, bool keepdim = false);
Tensor count_nonzero(const Tensor& a, IntArrayRef dims = {});
Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
// Numerically stable for large inputs (subtracts the row max).
Tensor softmax(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);
// n-th forward difference along dim (logical_xor for bool), with prepend/append joined on
// along dim first; n larger than the length leaves that dim empty.
Tensor diff(const Tensor& a, int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = std::nullopt,
            const std::optional<Tensor>& append = std::nullopt);

// ---------------------------------------------------------------- reductions by selection (src/ops/order_stats.cpp)
// Results are input values; NaN orders as the largest value. median() of an even count is the
// lower middle value; median propagates NaN (the dim form returns the first NaN and its index),
// nanmedian ignores NaN (all-NaN slices give NaN). The index of a value occurring several times
// is deterministic (the tie in position order). median() of an empty tensor is NaN.
Tensor median(const Tensor& a);
std::tuple<Tensor, Tensor> median(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor nanmedian(const Tensor& a);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& a, int64_t dim, bool keepdim = false);
// The k-th smallest (1-based) along dim, with its index.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& a, int64_t k, int64_t dim = -1, bool keepdim = false);

// ---------------------------------------------------------------- linear algebra (src/ops/linalg.cpp)
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& a, const Tensor& v);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
// Sum over the last dims of a and b: shape a.shape[:-1] + b.shape[:-1] (a product for 0-dim).
Tensor inner(const Tensor& a, const Tensor& b);
// beta * self + alpha * (mat @ vec); beta = 0 ignores self's values (NaN included).
Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta = 1, const Scalar& alpha = 1);
Tensor trace(const Tensor& a);  // sum of a matrix's diagonal
Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta = 1,
               const Scalar& alpha = 1);
// einsum("bij,bjk->bik", {a, b}): sums over repeated labels; "..." broadcasts.
Tensor einsum(const std::string& equation, TensorList operands);

// ---------------------------------------------------------------- indexing (src/ops/index.cpp, sort.cpp)
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value);
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value);  // 0-dim value
Tensor& index_fill_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor& index_fill_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value);
// scatter with reduce: "add" (scatter_add); ember implements neither "multiply" nor a reduce
// with a scalar value, and says so.
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce);
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce);
// Elements at flat indices of a (read as 1-D), shaped as index.
Tensor take(const Tensor& a, const Tensor& index);
// gather along dim after broadcasting a and index in the other dims; no dim: take on the flat a.
Tensor take_along_dim(const Tensor& a, const Tensor& index, std::optional<int64_t> dim = std::nullopt);
Tensor index(const Tensor& a, ArrayRef<std::optional<Tensor>> indices);
Tensor index_put(const Tensor& a, ArrayRef<std::optional<Tensor>> indices, const Tensor& values,
                 bool accumulate = false);
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value);
Tensor masked_select(const Tensor& a, const Tensor& mask);
Tensor nonzero(const Tensor& a);
// The indices of nonzero elements as one int64 tensor per dim (torch.nonzero(as_tuple=True),
// torch.where(condition)); a 0-dim input counts as 1-D.
std::vector<Tensor> nonzero_numpy(const Tensor& a);
Tensor argwhere(const Tensor& a);  // nonzero(a)
std::tuple<Tensor, Tensor> sort(const Tensor& a, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor argsort(const Tensor& a, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor msort(const Tensor& a);  // sorted along dim 0
std::tuple<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
// Returns (values, inverse, counts); inverse/counts are undefined Tensors unless requested.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& a, bool sorted = true, bool return_inverse = false,
                                          bool return_counts = false, std::optional<int64_t> dim = std::nullopt);
Tensor bincount(const Tensor& a, const std::optional<Tensor>& weights = std::nullopt, int64_t minlength = 0);
Tensor one_hot(const Tensor& a, int64_t num_classes = -1);
Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx = std::nullopt);

// ---------------------------------------------------------------- threads (src/core/threads.cpp)
void set_num_threads(int n);
int get_num_threads();

}  // namespace ember

#include "ember/special.h"  // special functions and scans (issue 15)
