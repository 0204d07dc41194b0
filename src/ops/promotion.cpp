// Broadcasting and type promotion, shared by every backend.
#include "ops/promotion.h"

#include <optional>

#include "ember/ops.h"

namespace ember {

bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && !is_floating_or_complex(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

namespace {
// PyTorch's three promotion tiers: dimensioned tensors > 0-dim tensors > wrapped numbers.
// A lower tier only raises the result when it is of a higher category
// (bool < int < float < complex).
int category(DType t) { return t == DType::Bool ? 0 : is_complex(t) ? 3 : is_floating(t) ? 2 : 1; }
DType combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return *lower;
  if (!lower) return *higher;
  if (category(*lower) <= category(*higher)) return *higher;
  // A float tensor meeting a lower-tier complex keeps its precision: float64 * 1j is complex128.
  if (is_complex(*lower) && is_floating(*higher)) return real_to_complex(*higher);
  return promote_types(*higher, *lower);
}
void update(std::optional<DType>& state, DType t) { state = state ? promote_types(*state, t) : t; }
}  // namespace

DType compute_result_type(const std::vector<Tensor>& operands) {
  std::optional<DType> dim_result, zero_result, wrapped_result;
  for (const auto& t : operands) {
    if (!t.defined()) continue;
    DType dt = t.dtype();
    if (t.impl()->is_wrapped_number()) {
      // A Python float joins as the default dtype, not float64.
      if (is_floating(dt)) dt = default_dtype();
      if (is_complex(dt)) dt = real_to_complex(default_dtype());
      update(wrapped_result, dt);
    } else if (t.dim() == 0) {
      update(zero_result, dt);
    } else {
      update(dim_result, dt);
    }
  }
  EMBER_CHECK(dim_result || zero_result || wrapped_result, "result_type: no tensor operands");
  if (!zero_result && !wrapped_result) return *dim_result;
  std::optional<DType> low =
      (zero_result || wrapped_result) ? std::optional<DType>(combine_categories(zero_result, wrapped_result))
                                      : std::nullopt;
  return combine_categories(dim_result, low);
}


Shape broadcast_shapes(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                ") must match the size of tensor b (", db, ") at non-singleton dimension ", i,
                " (shapes ", a, " and ", b, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

DType result_type(const Tensor& a, const Tensor& b) { return compute_result_type({a, b}); }
DType result_type(const Tensor& a, const Scalar& b) {
  return compute_result_type({a, wrapped_scalar(b)});
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) out = broadcast_shapes(out, s);
  return out;
}

std::vector<Tensor> broadcast_tensors(TensorList tensors) {
  Shape shape;
  for (size_t i = 0; i < tensors.size(); ++i)
    shape = i == 0 ? tensors[i].sizes() : broadcast_shapes(shape, tensors[i].sizes());
  std::vector<Tensor> out;
  for (const auto& t : tensors) out.push_back(t.expand(shape));
  return out;
}

Tensor wrapped_scalar(const Scalar& s) {
  DType dt = s.is_floating() ? DType::Float64 : s.is_complex() ? DType::Complex128 : s.dtype();
  Tensor t = scalar_tensor(s, {.dtype = dt, .device = Device(DeviceType::CPU)});
  t.impl()->set_wrapped_number(true);
  return t;
}

Tensor scalar_tensor(const Scalar& s, TensorOptions opts) {
  Tensor t = empty({}, {.dtype = opts.dtype_or(s.dtype()), .device = opts.device_or()});
  if (t.is_cpu()) s.store(t.data_ptr(), t.dtype());  // no kernel launch for one number
  else fill_(t, s);
  return t;
}

}  // namespace ember
