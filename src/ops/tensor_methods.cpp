// Tensor's methods and operators: each forwards to the free function of the same name.
#include "ember/ops.h"
#include "ops/shape_utils.h"

namespace ember {

using OptStr = std::optional<std::string>;

int64_t Tensor::size(int64_t d) const {
  d = wrap_dim(d, dim());
  return dim() == 0 ? 1 : sizes()[d];
}
int64_t Tensor::stride(int64_t d) const {
  d = wrap_dim(d, dim());
  return dim() == 0 ? 1 : strides()[d];
}

Tensor Tensor::clone() const { return ember::clone(*this); }
Tensor Tensor::contiguous() const { return ember::contiguous(*this); }
Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) { return ember::copy_(*this, src, non_blocking); }
Tensor& Tensor::fill_(const Scalar& v) { return ember::fill_(*this, v); }
Tensor& Tensor::fill_(const Tensor& v) {
  EMBER_CHECK(v.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", v.dim(), " dimensions.");
  return ember::fill_(*this, v.item());
}
Tensor& Tensor::zero_() { return ember::zero_(*this); }

Tensor Tensor::view(IntArrayRef s) const { return ember::view(*this, s); }
Tensor Tensor::view(DType t) const { return ember::view(*this, t); }
Tensor Tensor::view_as(const Tensor& o) const { return ember::view(*this, o.sizes()); }
Tensor Tensor::reshape(IntArrayRef s) const { return ember::reshape(*this, s); }
Tensor Tensor::reshape_as(const Tensor& o) const { return ember::reshape(*this, o.sizes()); }
Tensor Tensor::as_strided(IntArrayRef sz, IntArrayRef st, OptInt off) const { return ember::as_strided(*this, sz, st, off); }
Tensor Tensor::permute(IntArrayRef d) const { return ember::permute(*this, d); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return ember::transpose(*this, a, b); }
Tensor Tensor::t() const { return ember::t(*this); }
Tensor Tensor::T() const {
  Shape dims(dim());
  for (int64_t i = 0; i < dim(); ++i) dims[i] = dim() - 1 - i;
  return permute(dims);
}
Tensor Tensor::mT() const {
  EMBER_CHECK(dim() >= 2, "tensor.mT is only supported on matrices or batches of matrices. Got ", dim(), "-D tensor.");
  return transpose(-2, -1);
}
Tensor Tensor::squeeze() const { return ember::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return ember::squeeze(*this, d); }
Tensor Tensor::unsqueeze(int64_t d) const { return ember::unsqueeze(*this, d); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return ember::flatten(*this, s, e); }
Tensor Tensor::unflatten(int64_t d, IntArrayRef s) const { return ember::unflatten(*this, d, s); }
Tensor Tensor::expand(IntArrayRef s) const { return ember::expand(*this, s); }
Tensor Tensor::expand_as(const Tensor& o) const { return ember::expand(*this, o.sizes()); }
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const { return ember::narrow(*this, d, s, l); }
Tensor Tensor::select(int64_t d, int64_t i) const { return ember::select(*this, d, i); }
Tensor Tensor::slice(int64_t d, OptInt s, OptInt e, int64_t st) const { return ember::slice(*this, d, s, e, st); }
std::vector<Tensor> Tensor::split(int64_t s, int64_t d) const { return ember::split(*this, s, d); }
std::vector<Tensor> Tensor::split(IntArrayRef s, int64_t d) const { return ember::split(*this, s, d); }
std::vector<Tensor> Tensor::chunk(int64_t c, int64_t d) const { return ember::chunk(*this, c, d); }
std::vector<Tensor> Tensor::unbind(int64_t d) const { return ember::unbind(*this, d); }
Tensor Tensor::repeat(IntArrayRef r) const { return ember::repeat(*this, r); }
Tensor Tensor::repeat_interleave(int64_t r, std::optional<int64_t> d) const { return ember::repeat_interleave(*this, r, d); }
Tensor Tensor::repeat_interleave(const Tensor& r, std::optional<int64_t> d) const { return ember::repeat_interleave(*this, r, d); }
Tensor Tensor::flip(IntArrayRef d) const { return ember::flip(*this, d); }
Tensor Tensor::roll(IntArrayRef s, IntArrayRef d) const { return ember::roll(*this, s, d); }
Tensor Tensor::tril(int64_t k) const { return ember::tril(*this, k); }
Tensor Tensor::triu(int64_t k) const { return ember::triu(*this, k); }
Tensor Tensor::diag(int64_t k) const { return ember::diag(*this, k); }
Tensor Tensor::movedim(int64_t s, int64_t d) const { return ember::movedim(*this, s, d); }

Tensor Tensor::add(const Tensor& o, const Scalar& a) const { return ember::add(*this, o, a); }
Tensor Tensor::add(const Scalar& o, const Scalar& a) const { return ember::add(*this, o, a); }
Tensor Tensor::sub(const Tensor& o, const Scalar& a) const { return ember::sub(*this, o, a); }
Tensor Tensor::sub(const Scalar& o, const Scalar& a) const { return ember::sub(*this, o, a); }
Tensor Tensor::mul(const Tensor& o) const { return ember::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return ember::mul(*this, o); }
Tensor Tensor::div(const Tensor& o, OptStr m) const { return ember::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, OptStr m) const { return ember::div(*this, o, m); }
Tensor Tensor::floor_divide(const Tensor& o) const { return ember::floor_divide(*this, o); }
Tensor Tensor::floor_divide(const Scalar& o) const { return ember::floor_divide(*this, o); }
Tensor Tensor::remainder(const Tensor& o) const { return ember::remainder(*this, o); }
Tensor Tensor::remainder(const Scalar& o) const { return ember::remainder(*this, o); }
Tensor Tensor::fmod(const Tensor& o) const { return ember::fmod(*this, o); }
Tensor Tensor::fmod(const Scalar& o) const { return ember::fmod(*this, o); }
Tensor Tensor::pow(const Tensor& e) const { return ember::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return ember::pow(*this, e); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& a) { return ember::add_(*this, o, a); }
Tensor& Tensor::add_(const Scalar& o, const Scalar& a) { return ember::add_(*this, wrapped_scalar(o), a); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& a) { return ember::sub_(*this, o, a); }
Tensor& Tensor::sub_(const Scalar& o, const Scalar& a) { return ember::sub_(*this, wrapped_scalar(o), a); }
Tensor& Tensor::mul_(const Tensor& o) { return ember::mul_(*this, o); }
Tensor& Tensor::mul_(const Scalar& o) { return ember::mul_(*this, wrapped_scalar(o)); }
Tensor& Tensor::div_(const Tensor& o, OptStr m) { return ember::div_(*this, o, m); }
Tensor& Tensor::div_(const Scalar& o, OptStr m) { return ember::div_(*this, wrapped_scalar(o), m); }
Tensor& Tensor::pow_(const Scalar& e) { return ember::pow_(*this, wrapped_scalar(e)); }
Tensor& Tensor::pow_(const Tensor& e) { return ember::pow_(*this, e); }

#define EMBER_CMP_METHODS(n) \
  Tensor Tensor::n(const Tensor& o) const { return ember::n(*this, o); } \
  Tensor Tensor::n(const Scalar& o) const { return ember::n(*this, o); }
EMBER_CMP_METHODS(eq) EMBER_CMP_METHODS(ne) EMBER_CMP_METHODS(lt) EMBER_CMP_METHODS(le)
EMBER_CMP_METHODS(gt) EMBER_CMP_METHODS(ge) EMBER_CMP_METHODS(bitwise_and)
EMBER_CMP_METHODS(bitwise_or) EMBER_CMP_METHODS(bitwise_xor)
#undef EMBER_CMP_METHODS
bool Tensor::equal(const Tensor& o) const { return ember::equal(*this, o); }
bool Tensor::allclose(const Tensor& o, double r, double a, bool n) const { return ember::allclose(*this, o, r, a, n); }
Tensor Tensor::isclose(const Tensor& o, double r, double a, bool n) const { return ember::isclose(*this, o, r, a, n); }
Tensor Tensor::logical_and(const Tensor& o) const { return ember::logical_and(*this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return ember::logical_or(*this, o); }
Tensor Tensor::logical_xor(const Tensor& o) const { return ember::logical_xor(*this, o); }
Tensor Tensor::logical_not() const { return ember::logical_not(*this); }
Tensor Tensor::bitwise_not() const { return ember::bitwise_not(*this); }
Tensor Tensor::bitwise_left_shift(const Tensor& o) const { return ember::bitwise_left_shift(*this, o); }
Tensor Tensor::bitwise_right_shift(const Tensor& o) const { return ember::bitwise_right_shift(*this, o); }

Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return ember::clamp(*this, lo, hi); }
Tensor Tensor::clamp(const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) const { return ember::clamp(*this, lo, hi); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) { return ember::clamp_(*this, lo, hi); }
Tensor Tensor::clamp_min(const Scalar& lo) const { return ember::clamp(*this, lo, std::nullopt); }
Tensor Tensor::clamp_max(const Scalar& hi) const { return ember::clamp(*this, std::nullopt, hi); }
Tensor Tensor::maximum(const Tensor& o) const { return ember::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return ember::minimum(*this, o); }
Tensor Tensor::lerp(const Tensor& e, const Scalar& w) const { return ember::lerp(*this, e, w); }
Tensor Tensor::lerp(const Tensor& e, const Tensor& w) const { return ember::lerp(*this, e, w); }
Tensor Tensor::nan_to_num(std::optional<double> n, std::optional<double> p, std::optional<double> m) const {
  return ember::nan_to_num(*this, n, p, m);
}
Tensor Tensor::where(const Tensor& c, const Tensor& o) const { return ember::where(c, *this, o); }

Tensor Tensor::real() const { return ember::real(*this); }
Tensor Tensor::imag() const { return ember::imag(*this); }
Tensor Tensor::conj() const { return ember::conj(*this); }
Tensor Tensor::angle() const { return ember::angle(*this); }

#define EMBER_UNARY_METHOD_DEF(n) \
  Tensor Tensor::n() const { return ember::n(*this); } \
  Tensor& Tensor::n##_() { return ember::n##_(*this); }
EMBER_UNARY_METHOD_DEF(neg) EMBER_UNARY_METHOD_DEF(abs) EMBER_UNARY_METHOD_DEF(sign)
EMBER_UNARY_METHOD_DEF(reciprocal) EMBER_UNARY_METHOD_DEF(exp) EMBER_UNARY_METHOD_DEF(exp2)
EMBER_UNARY_METHOD_DEF(log) EMBER_UNARY_METHOD_DEF(log1p) EMBER_UNARY_METHOD_DEF(expm1)
EMBER_UNARY_METHOD_DEF(log2) EMBER_UNARY_METHOD_DEF(log10) EMBER_UNARY_METHOD_DEF(sqrt)
EMBER_UNARY_METHOD_DEF(rsqrt) EMBER_UNARY_METHOD_DEF(square) EMBER_UNARY_METHOD_DEF(sin)
EMBER_UNARY_METHOD_DEF(cos) EMBER_UNARY_METHOD_DEF(tan) EMBER_UNARY_METHOD_DEF(asin)
EMBER_UNARY_METHOD_DEF(acos) EMBER_UNARY_METHOD_DEF(atan) EMBER_UNARY_METHOD_DEF(sinh)
EMBER_UNARY_METHOD_DEF(cosh) EMBER_UNARY_METHOD_DEF(tanh) EMBER_UNARY_METHOD_DEF(sigmoid)
EMBER_UNARY_METHOD_DEF(relu) EMBER_UNARY_METHOD_DEF(silu) EMBER_UNARY_METHOD_DEF(erf)
EMBER_UNARY_METHOD_DEF(floor) EMBER_UNARY_METHOD_DEF(ceil) EMBER_UNARY_METHOD_DEF(round)
EMBER_UNARY_METHOD_DEF(trunc) EMBER_UNARY_METHOD_DEF(frac)
#undef EMBER_UNARY_METHOD_DEF
Tensor Tensor::round(int64_t decimals) const { return ember::round(*this, decimals); }
Tensor& Tensor::round_(int64_t decimals) { return ember::round_(*this, decimals); }
Tensor Tensor::gelu(const std::string& a) const { return ember::gelu(*this, a); }
Tensor Tensor::isnan() const { return ember::isnan(*this); }
Tensor Tensor::isinf() const { return ember::isinf(*this); }
Tensor Tensor::isfinite() const { return ember::isfinite(*this); }

Tensor Tensor::sum(std::optional<DType> dt) const { return ember::sum(*this, dt); }
Tensor Tensor::sum(IntArrayRef d, bool k, std::optional<DType> dt) const { return ember::sum(*this, d, k, dt); }
Tensor Tensor::mean(std::optional<DType> dt) const { return ember::mean(*this, dt); }
Tensor Tensor::mean(IntArrayRef d, bool k, std::optional<DType> dt) const { return ember::mean(*this, d, k, dt); }
Tensor Tensor::prod(std::optional<DType> dt) const { return ember::prod(*this, dt); }
Tensor Tensor::prod(int64_t d, bool k, std::optional<DType> dt) const { return ember::prod(*this, d, k, dt); }
Tensor Tensor::max() const { return ember::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t d, bool k) const { return ember::max(*this, d, k); }
Tensor Tensor::min() const { return ember::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t d, bool k) const { return ember::min(*this, d, k); }
Tensor Tensor::amax(IntArrayRef d, bool k) const { return ember::amax(*this, d, k); }
Tensor Tensor::amin(IntArrayRef d, bool k) const { return ember::amin(*this, d, k); }
Tensor Tensor::argmax(std::optional<int64_t> d, bool k) const { return ember::argmax(*this, d, k); }
Tensor Tensor::argmin(std::optional<int64_t> d, bool k) const { return ember::argmin(*this, d, k); }
Tensor Tensor::var(bool u) const { return ember::var(*this, u); }
Tensor Tensor::var(IntArrayRef d, bool u, bool k) const { return ember::var(*this, d, u, k); }
Tensor Tensor::std(bool u) const { return ember::std(*this, u); }
Tensor Tensor::std(IntArrayRef d, bool u, bool k) const { return ember::std(*this, d, u, k); }
Tensor Tensor::norm(const Scalar& p) const { return ember::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef d, bool k) const { return ember::norm(*this, p, d, k); }
Tensor Tensor::logsumexp(IntArrayRef d, bool k) const { return ember::logsumexp(*this, d, k); }
Tensor Tensor::any() const { return ember::any(*this); }
Tensor Tensor::any(int64_t d, bool k) const { return ember::any(*this, d, k); }
Tensor Tensor::all() const { return ember::all(*this); }
Tensor Tensor::all(int64_t d, bool k) const { return ember::all(*this, d, k); }
Tensor Tensor::count_nonzero(IntArrayRef d) const { return ember::count_nonzero(*this, d); }
Tensor Tensor::cumsum(int64_t d, std::optional<DType> dt) const { return ember::cumsum(*this, d, dt); }
Tensor Tensor::cumprod(int64_t d, std::optional<DType> dt) const { return ember::cumprod(*this, d, dt); }
Tensor Tensor::softmax(int64_t d, std::optional<DType> dt) const { return ember::softmax(*this, d, dt); }
Tensor Tensor::log_softmax(int64_t d, std::optional<DType> dt) const { return ember::log_softmax(*this, d, dt); }
Tensor Tensor::diff(int64_t n, int64_t d, const std::optional<Tensor>& prepend, const std::optional<Tensor>& append) const {
  return ember::diff(*this, n, d, prepend, append);
}
Tensor Tensor::median() const { return ember::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t d, bool k) const { return ember::median(*this, d, k); }
Tensor Tensor::nanmedian() const { return ember::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t d, bool k) const { return ember::nanmedian(*this, d, k); }
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t d, bool keep) const {
  return ember::kthvalue(*this, k, d, keep);
}

Tensor Tensor::matmul(const Tensor& o) const { return ember::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return ember::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return ember::bmm(*this, o); }
Tensor Tensor::mv(const Tensor& v) const { return ember::mv(*this, v); }
Tensor Tensor::dot(const Tensor& o) const { return ember::dot(*this, o); }
Tensor Tensor::outer(const Tensor& o) const { return ember::outer(*this, o); }
Tensor Tensor::addmm(const Tensor& a, const Tensor& b, const Scalar& be, const Scalar& al) const {
  return ember::addmm(*this, a, b, be, al);
}

Tensor Tensor::index_select(int64_t d, const Tensor& i) const { return ember::index_select(*this, d, i); }
Tensor Tensor::gather(int64_t d, const Tensor& i) const { return ember::gather(*this, d, i); }
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Tensor& s) const { return ember::scatter(*this, d, i, s); }
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Scalar& v) const { return ember::scatter(*this, d, i, v); }
Tensor Tensor::scatter_add(int64_t d, const Tensor& i, const Tensor& s) const { return ember::scatter_add(*this, d, i, s); }
Tensor Tensor::index_add(int64_t d, const Tensor& i, const Tensor& s, const Scalar& a) const {
  return ember::index_add(*this, d, i, s, a);
}
Tensor Tensor::index_fill(int64_t d, const Tensor& i, const Scalar& v) const { return ember::index_fill(*this, d, i, v); }
Tensor Tensor::index(ArrayRef<std::optional<Tensor>> idx) const { return ember::index(*this, idx); }
Tensor Tensor::masked_fill(const Tensor& m, const Scalar& v) const { return ember::masked_fill(*this, m, v); }
Tensor Tensor::masked_fill(const Tensor& m, const Tensor& v) const { return ember::masked_fill(*this, m, v); }
Tensor& Tensor::masked_fill_(const Tensor& m, const Scalar& v) { return ember::masked_fill_(*this, m, v); }
Tensor Tensor::masked_select(const Tensor& m) const { return ember::masked_select(*this, m); }
Tensor Tensor::nonzero() const { return ember::nonzero(*this); }
std::tuple<Tensor, Tensor> Tensor::sort(int64_t d, bool desc, bool st) const { return ember::sort(*this, d, desc, st); }
Tensor Tensor::argsort(int64_t d, bool desc, bool st) const { return ember::argsort(*this, d, desc, st); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t d, bool l, bool s) const { return ember::topk(*this, k, d, l, s); }

Tensor& Tensor::uniform_(double a, double b, Generator* g) { return ember::uniform_(*this, a, b, g); }
Tensor& Tensor::normal_(double m, double s, Generator* g) { return ember::normal_(*this, m, s, g); }
Tensor& Tensor::random_(int64_t a, int64_t b, Generator* g) { return ember::random_(*this, a, b, g); }
Tensor& Tensor::bernoulli_(double p, Generator* g) { return ember::bernoulli_(*this, p, g); }
Tensor Tensor::multinomial(int64_t n, bool r, Generator* g) const { return ember::multinomial(*this, n, r, g); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- methods of the ops moved out of the Python bindings (issue 14)
Tensor Tensor::squeeze(IntArrayRef d) const { return ember::squeeze(*this, d); }
Tensor Tensor::movedim(IntArrayRef s, IntArrayRef d) const { return ember::movedim(*this, s, d); }
Tensor Tensor::ravel() const { return ember::ravel(*this); }
Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const { return ember::unfold(*this, d, size, step); }
Tensor Tensor::tile(IntArrayRef d) const { return ember::tile(*this, d); }
Tensor Tensor::fliplr() const { return ember::fliplr(*this); }
Tensor Tensor::flipud() const { return ember::flipud(*this); }
Tensor Tensor::rot90(int64_t k, IntArrayRef d) const { return ember::rot90(*this, k, d); }
Tensor& Tensor::tril_(int64_t k) { return ember::tril_(*this, k); }
Tensor& Tensor::triu_(int64_t k) { return ember::triu_(*this, k); }

Tensor Tensor::float_power(const Tensor& e) const { return ember::float_power(*this, e); }
Tensor Tensor::float_power(const Scalar& e) const { return ember::float_power(*this, e); }
Tensor Tensor::fmax(const Tensor& o) const { return ember::fmax(*this, o); }
Tensor Tensor::fmin(const Tensor& o) const { return ember::fmin(*this, o); }
Tensor Tensor::hypot(const Tensor& o) const { return ember::hypot(*this, o); }
Tensor Tensor::addcmul(const Tensor& a, const Tensor& b, const Scalar& v) const { return ember::addcmul(*this, a, b, v); }
Tensor Tensor::addcdiv(const Tensor& a, const Tensor& b, const Scalar& v) const { return ember::addcdiv(*this, a, b, v); }
Tensor& Tensor::floor_divide_(const Tensor& o) { return ember::floor_divide_(*this, o); }
Tensor& Tensor::remainder_(const Tensor& o) { return ember::remainder_(*this, o); }
Tensor& Tensor::fmod_(const Tensor& o) { return ember::fmod_(*this, o); }
Tensor& Tensor::atan2_(const Tensor& o) { return ember::atan2_(*this, o); }
Tensor& Tensor::hypot_(const Tensor& o) { return ember::hypot_(*this, o); }
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, const Scalar& v) { return ember::addcmul_(*this, a, b, v); }
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, const Scalar& v) { return ember::addcdiv_(*this, a, b, v); }
Tensor Tensor::bitwise_left_shift(const Scalar& o) const { return ember::bitwise_left_shift(*this, o); }
Tensor Tensor::bitwise_right_shift(const Scalar& o) const { return ember::bitwise_right_shift(*this, o); }
Tensor& Tensor::bitwise_and_(const Tensor& o) { return ember::bitwise_and_(*this, o); }
Tensor& Tensor::bitwise_or_(const Tensor& o) { return ember::bitwise_or_(*this, o); }
Tensor& Tensor::bitwise_xor_(const Tensor& o) { return ember::bitwise_xor_(*this, o); }
Tensor& Tensor::bitwise_left_shift_(const Tensor& o) { return ember::bitwise_left_shift_(*this, o); }
Tensor& Tensor::bitwise_right_shift_(const Tensor& o) { return ember::bitwise_right_shift_(*this, o); }
Tensor& Tensor::bitwise_not_() { return ember::bitwise_not_(*this); }
Tensor& Tensor::logical_and_(const Tensor& o) { return ember::logical_and_(*this, o); }
Tensor& Tensor::logical_or_(const Tensor& o) { return ember::logical_or_(*this, o); }
Tensor& Tensor::logical_xor_(const Tensor& o) { return ember::logical_xor_(*this, o); }
Tensor& Tensor::logical_not_() { return ember::logical_not_(*this); }
Tensor& Tensor::clamp_(const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  return ember::clamp_(*this, lo, hi);
}
Tensor& Tensor::lerp_(const Tensor& e, const Scalar& w) { return ember::lerp_(*this, e, w); }
Tensor& Tensor::lerp_(const Tensor& e, const Tensor& w) { return ember::lerp_(*this, e, w); }
Tensor& Tensor::nan_to_num_(std::optional<double> n, std::optional<double> p, std::optional<double> m) {
  return ember::nan_to_num_(*this, n, p, m);
}
Tensor Tensor::isposinf() const { return ember::isposinf(*this); }
Tensor Tensor::isneginf() const { return ember::isneginf(*this); }
Tensor Tensor::isreal() const { return ember::isreal(*this); }
Tensor Tensor::signbit() const { return ember::signbit(*this); }
Tensor Tensor::positive() const { return ember::positive(*this); }

Tensor& Tensor::random_(Generator* g) { return ember::random_(*this, g); }
Tensor& Tensor::random_(int64_t to, Generator* g) { return ember::random_(*this, to, g); }
Tensor& Tensor::bernoulli_(const Tensor& p, Generator* g) { return ember::bernoulli_(*this, p, g); }
Tensor Tensor::bernoulli(double p, Generator* g) const { return ember::bernoulli(*this, p, g); }
Tensor& Tensor::exponential_(double l, Generator* g) { return ember::exponential_(*this, l, g); }
Tensor& Tensor::log_normal_(double m, double s, Generator* g) { return ember::log_normal_(*this, m, s, g); }

Tensor Tensor::nansum(std::optional<DType> dt) const { return ember::nansum(*this, dt); }
Tensor Tensor::nansum(IntArrayRef d, bool k, std::optional<DType> dt) const { return ember::nansum(*this, d, k, dt); }
std::tuple<Tensor, Tensor> Tensor::aminmax(std::optional<int64_t> d, bool k) const { return ember::aminmax(*this, d, k); }
Tensor Tensor::var(IntArrayRef d, const std::optional<Scalar>& c, bool k) const { return ember::var(*this, d, c, k); }
Tensor Tensor::std(IntArrayRef d, const std::optional<Scalar>& c, bool k) const { return ember::std(*this, d, c, k); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef d, bool k, DType dt) const { return ember::norm(*this, p, d, k, dt); }
Tensor Tensor::any(IntArrayRef d, bool k) const { return ember::any(*this, d, k); }
Tensor Tensor::all(IntArrayRef d, bool k) const { return ember::all(*this, d, k); }

Tensor Tensor::inner(const Tensor& o) const { return ember::inner(*this, o); }
Tensor Tensor::addmv(const Tensor& m, const Tensor& v, const Scalar& b, const Scalar& a) const {
  return ember::addmv(*this, m, v, b, a);
}
Tensor Tensor::trace() const { return ember::trace(*this); }
Tensor& Tensor::addmm_(const Tensor& m1, const Tensor& m2, const Scalar& b, const Scalar& a) {
  return ember::addmm_(*this, m1, m2, b, a);
}

Tensor Tensor::index_fill(int64_t d, const Tensor& i, const Tensor& v) const { return ember::index_fill(*this, d, i, v); }
Tensor& Tensor::index_fill_(int64_t d, const Tensor& i, const Scalar& v) { return ember::index_fill_(*this, d, i, v); }
Tensor& Tensor::index_fill_(int64_t d, const Tensor& i, const Tensor& v) { return ember::index_fill_(*this, d, i, v); }
Tensor Tensor::scatter(int64_t d, const Tensor& i, const Tensor& s, const std::string& r) const {
  return ember::scatter(*this, d, i, s, r);
}
Tensor Tensor::take(const Tensor& i) const { return ember::take(*this, i); }
Tensor Tensor::take_along_dim(const Tensor& i, std::optional<int64_t> d) const { return ember::take_along_dim(*this, i, d); }
Tensor& Tensor::masked_fill_(const Tensor& m, const Tensor& v) { return ember::masked_fill_(*this, m, v); }
Tensor Tensor::argwhere() const { return ember::argwhere(*this); }
Tensor Tensor::msort() const { return ember::msort(*this); }

Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(a, b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }

}  // namespace ember
