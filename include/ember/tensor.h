#pragma once
// ember::Tensor: a cheap, refcounted handle to a TensorImpl. Copying a Tensor shares data
// (as in PyTorch); clone() copies it. Every method here forwards to the free function of the
// same name in ops.h, which goes through the dispatcher.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/array_ref.h"
#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/errors.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor_impl.h"
#include "ember/options.h"

namespace ember {

struct Stream;  // ember/core/backend.h

class Tensor;
using TensorList = ArrayRef<Tensor>;
namespace autograd {
class Node;
class RemovableHandle;
}  // namespace autograd

// A slice bound for Tensor::slice and indexing: std::nullopt means "from the start / to the end".
using OptInt = std::optional<int64_t>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- metadata ---
  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  const Shape& sizes() const { return impl_->sizes(); }
  const Shape& shape() const { return impl_->sizes(); }
  const Shape& strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t ndimension() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  DType dtype() const { return impl_->dtype(); }
  DType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_meta() const { return device().is_meta(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_floating_point() const { return is_floating(dtype()); }
  bool is_complex() const { return ember::is_complex(dtype()); }
  int64_t element_size() const { return ember::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  uint32_t _version() const { return impl_->version(); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  // True when both tensors view the same Storage.
  bool is_alias_of(const Tensor& o) const { return impl_->storage() == o.impl_->storage(); }
  TensorOptions options() const { return {.dtype = dtype(), .device = device(), .requires_grad = false}; }

  void* data_ptr() const { return impl_->data(); }
  template <class T> T* data_ptr() const {
    EMBER_CHECK(dtype_of<T> == dtype(), "data_ptr: expected dtype ", dtype_name(dtype_of<T>),
                " but the tensor is ", dtype_name(dtype()));
    return static_cast<T*>(impl_->data());
  }
  // The value of a one-element tensor.
  Scalar item() const;
  template <class T> T item() const { return item().to<T>(); }
  // Copies the elements (in logical order) into a vector of T, converting.
  template <class T> std::vector<T> tolist() const;

  // --- conversion / copying ---
  Tensor to(DType dtype, bool copy = false) const;
  // non_blocking: a copy between pinned host memory and a device may return before it finishes
  // (ordered on the device's current stream), as torch's.
  Tensor to(Device device, bool copy = false, bool non_blocking = false) const;
  Tensor to(Device device, DType dtype, bool copy = false, bool non_blocking = false) const;
  Tensor to(const Tensor& other) const;  // dtype and device of other
  Tensor cpu() const { return to(Device(DeviceType::CPU)); }
  Tensor float_() const { return to(kFloat32); }
  Tensor double_() const { return to(kFloat64); }
  Tensor long_() const { return to(kInt64); }
  Tensor int_() const { return to(kInt32); }
  Tensor bool_() const { return to(kBool); }
  Tensor half() const { return to(kFloat16); }
  Tensor bfloat16() const { return to(kBFloat16); }
  Tensor clone() const;
  Tensor contiguous() const;
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  // A copy in page-locked host memory, which GPU copies read and write asynchronously
  // (non_blocking); needs a GPU. is_pinned: whether this host tensor's memory is page-locked.
  Tensor pin_memory() const;
  bool is_pinned() const;
  // This tensor's memory is also used by work queued on `stream` (torch's record_stream): the
  // caching allocator does not reuse it until that work is done.
  void record_stream(Stream stream) const;
  Tensor& fill_(const Scalar& value);
  Tensor& fill_(const Tensor& value);  // 0-dim value
  Tensor& zero_();

  // --- views and shape ---
  Tensor view(IntArrayRef shape) const;
  Tensor view(DType dtype) const;  // the same bytes as another dtype (not differentiable)
  Tensor view_as(const Tensor& other) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor reshape_as(const Tensor& other) const;
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, OptInt offset = std::nullopt) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor T() const;   // reverses all dims
  Tensor mT() const;  // transposes the last two dims
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze(IntArrayRef dims) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim, OptInt start = std::nullopt, OptInt end = std::nullopt,
               int64_t step = 1) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0);
  Tensor& triu_(int64_t diagonal = 0);
  Tensor diag(int64_t diagonal = 0) const;
  Tensor movedim(int64_t src, int64_t dst) const;
  Tensor movedim(IntArrayRef source, IntArrayRef destination) const;
  Tensor ravel() const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  Tensor tile(IntArrayRef dims) const;
  Tensor fliplr() const;
  Tensor flipud() const;
  Tensor rot90(int64_t k = 1, IntArrayRef dims = {0, 1}) const;

  // --- elementwise ---
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt) const;
  Tensor div(const Scalar& other, std::optional<std::string> rounding_mode = std::nullopt) const;
  Tensor floor_divide(const Tensor& other) const;
  Tensor floor_divide(const Scalar& other) const;
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1);
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& other);
  Tensor& div_(const Tensor& other, std::optional<std::string> rounding_mode = std::nullopt);
  Tensor& div_(const Scalar& other, std::optional<std::string> rounding_mode = std::nullopt);
  Tensor& pow_(const Scalar& exponent);
  Tensor& pow_(const Tensor& exponent);
  Tensor float_power(const Tensor& exponent) const;
  Tensor float_power(const Scalar& exponent) const;
  Tensor fmax(const Tensor& other) const;
  Tensor fmin(const Tensor& other) const;
  Tensor hypot(const Tensor& other) const;
  Tensor addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor& floor_divide_(const Tensor& other);
  Tensor& remainder_(const Tensor& other);
  Tensor& fmod_(const Tensor& other);
  Tensor& atan2_(const Tensor& other);
  Tensor& hypot_(const Tensor& other);
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1);

  Tensor eq(const Tensor& o) const;  Tensor eq(const Scalar& o) const;
  Tensor ne(const Tensor& o) const;  Tensor ne(const Scalar& o) const;
  Tensor lt(const Tensor& o) const;  Tensor lt(const Scalar& o) const;
  Tensor le(const Tensor& o) const;  Tensor le(const Scalar& o) const;
  Tensor gt(const Tensor& o) const;  Tensor gt(const Scalar& o) const;
  Tensor ge(const Tensor& o) const;  Tensor ge(const Scalar& o) const;
  bool equal(const Tensor& o) const;  // same shape and values
  bool allclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor isclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;

  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor logical_xor(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor bitwise_and(const Tensor& o) const;  Tensor bitwise_and(const Scalar& o) const;
  Tensor bitwise_or(const Tensor& o) const;   Tensor bitwise_or(const Scalar& o) const;
  Tensor bitwise_xor(const Tensor& o) const;  Tensor bitwise_xor(const Scalar& o) const;
  Tensor bitwise_not() const;
  Tensor bitwise_left_shift(const Tensor& o) const;
  Tensor bitwise_right_shift(const Tensor& o) const;
  Tensor bitwise_left_shift(const Scalar& o) const;
  Tensor bitwise_right_shift(const Scalar& o) const;
  Tensor& bitwise_and_(const Tensor& o);
  Tensor& bitwise_or_(const Tensor& o);
  Tensor& bitwise_xor_(const Tensor& o);
  Tensor& bitwise_left_shift_(const Tensor& o);
  Tensor& bitwise_right_shift_(const Tensor& o);
  Tensor& bitwise_not_();
  Tensor& logical_and_(const Tensor& o);
  Tensor& logical_or_(const Tensor& o);
  Tensor& logical_xor_(const Tensor& o);
  Tensor& logical_not_();

  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor& clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max);
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight);
  Tensor& lerp_(const Tensor& end, const Tensor& weight);
  Tensor nan_to_num(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor& nan_to_num_(std::optional<double> nan = 0.0, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt);
  Tensor where(const Tensor& condition, const Tensor& other) const;  // condition ? self : other
  // Complex parts (views for complex tensors; real() of a real tensor is itself), conjugate, phase.
  Tensor real() const;
  Tensor imag() const;
  Tensor conj() const;
  Tensor angle() const;

#define EMBER_UNARY_METHOD(name) Tensor name() const; Tensor& name##_();
  EMBER_UNARY_METHOD(neg) EMBER_UNARY_METHOD(abs) EMBER_UNARY_METHOD(sign)
  EMBER_UNARY_METHOD(reciprocal) EMBER_UNARY_METHOD(exp) EMBER_UNARY_METHOD(exp2)
  EMBER_UNARY_METHOD(log) EMBER_UNARY_METHOD(log1p) EMBER_UNARY_METHOD(expm1)
  EMBER_UNARY_METHOD(log2) EMBER_UNARY_METHOD(log10) EMBER_UNARY_METHOD(sqrt)
  EMBER_UNARY_METHOD(rsqrt) EMBER_UNARY_METHOD(square) EMBER_UNARY_METHOD(sin)
  EMBER_UNARY_METHOD(cos) EMBER_UNARY_METHOD(tan) EMBER_UNARY_METHOD(asin)
  EMBER_UNARY_METHOD(acos) EMBER_UNARY_METHOD(atan) EMBER_UNARY_METHOD(sinh)
  EMBER_UNARY_METHOD(cosh) EMBER_UNARY_METHOD(tanh) EMBER_UNARY_METHOD(sigmoid)
  EMBER_UNARY_METHOD(relu) EMBER_UNARY_METHOD(silu) EMBER_UNARY_METHOD(erf)
  EMBER_UNARY_METHOD(floor) EMBER_UNARY_METHOD(ceil) EMBER_UNARY_METHOD(round)
  EMBER_UNARY_METHOD(trunc) EMBER_UNARY_METHOD(frac)
#undef EMBER_UNARY_METHOD
  Tensor round(int64_t decimals) const;
  Tensor& round_(int64_t decimals);
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor isposinf() const;
  Tensor isneginf() const;
  Tensor isreal() const;
  Tensor signbit() const;
  Tensor positive() const;

  // --- random fill, in place ---
  Tensor& uniform_(double from = 0.0, double to = 1.0, Generator* gen = nullptr);
  Tensor& normal_(double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
  Tensor& random_(int64_t from, int64_t to, Generator* gen = nullptr);
  Tensor& bernoulli_(double p = 0.5, Generator* gen = nullptr);
  Tensor& random_(Generator* gen = nullptr);
  Tensor& random_(int64_t to, Generator* gen = nullptr);
  Tensor& bernoulli_(const Tensor& p, Generator* gen = nullptr);
  Tensor bernoulli(double p, Generator* gen = nullptr) const;
  Tensor& exponential_(double lambd = 1.0, Generator* gen = nullptr);
  Tensor& log_normal_(double mean = 1.0, double std = 2.0, Generator* gen = nullptr);
  // int64 indices drawn from the rows of self (weights); see ember::multinomial in ops.h.
  Tensor multinomial(int64_t num_samples, bool replacement = false, Generator* gen = nullptr) const;

  // --- reductions ---
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor nansum(std::optional<DType> dtype = std::nullopt) const;
  Tensor nansum(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> aminmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(bool unbiased = true) const;
  Tensor var(IntArrayRef dims, bool unbiased = true, bool keepdim = false) const;
  Tensor std(bool unbiased = true) const;
  Tensor std(IntArrayRef dims, bool unbiased = true, bool keepdim = false) const;
  Tensor var(IntArrayRef dims, const std::optional<Scalar>& correction, bool keepdim = false) const;
  Tensor std(IntArrayRef dims, const std::optional<Scalar>& correction, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dims, bool keepdim = false) const;
  Tensor norm(const Scalar& p, IntArrayRef dims, bool keepdim, DType dtype) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor any(IntArrayRef dims, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor all(IntArrayRef dims, bool keepdim = false) const;
  Tensor count_nonzero(IntArrayRef dims = {}) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor diff(int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = std::nullopt,
              const std::optional<Tensor>& append = std::nullopt) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  Tensor nanmedian() const;
  std::tuple<Tensor, Tensor> nanmedian(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;

  // --- linear algebra ---
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;
  Tensor inner(const Tensor& other) const;
  Tensor addmv(const Tensor& mat, const Tensor& vec, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor trace() const;
  Tensor addmm(const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor& addmm_(const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1);

  // --- indexing ---
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value);
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce);
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce);
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src);
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value);
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Tensor& value);
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const;
  Tensor take(const Tensor& index) const;
  Tensor take_along_dim(const Tensor& index, std::optional<int64_t> dim = std::nullopt) const;
  // Advanced indexing with one (optional) index tensor per leading dim: x[i, :, j].
  Tensor index(ArrayRef<std::optional<Tensor>> indices) const;
  Tensor& index_put_(ArrayRef<std::optional<Tensor>> indices, const Tensor& values,
                     bool accumulate = false);
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value);
  Tensor masked_select(const Tensor& mask) const;
  Tensor nonzero() const;
  Tensor argwhere() const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, bool stable = false) const;
  Tensor msort() const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;

  // --- autograd (src/autograd/tensor_autograd.cpp) ---
  bool requires_grad() const {
    auto* m = impl_ ? impl_->autograd_meta() : nullptr;
    return m && m->requires_grad();
  }
  // Only floating tensors can require grad (an error otherwise). Only on leaves.
  Tensor& requires_grad_(bool requires_grad = true);
  void set_requires_grad(bool requires_grad) { requires_grad_(requires_grad); }
  // The accumulated gradient; undefined until a backward reaches this leaf.
  const Tensor& grad() const;
  Tensor& mutable_grad();
  void set_grad(const Tensor& g);
  bool is_leaf() const;
  // The node that made this tensor (MulBackward0, ...), or null for leaves.
  std::shared_ptr<autograd::Node> grad_fn() const;
  int64_t output_nr() const;
  // Keep .grad for a non-leaf after backward.
  void retain_grad();
  bool retains_grad() const;
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // A tensor sharing data with this one but cut from the graph.
  Tensor detach() const;
  Tensor& detach_();
  // Makes this tensor use new_data's data in place (torch's set_data, `p.data = t`): every
  // handle to this tensor sees it; its grad, history and hooks stay.
  void set_data(const Tensor& new_data);
  // hook(grad) runs when this tensor's gradient is computed; a defined return value replaces it.
  autograd::RemovableHandle register_hook(std::function<Tensor(const Tensor&)> hook) const;

  // Prints as PyTorch prints: tensor([[1., 2.], [3., 4.]]).
  std::string str() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Python-style operators. Scalars on either side are wrapped numbers.
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Scalar& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Scalar& b);

}  // namespace ember
