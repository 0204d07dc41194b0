#pragma once
// Helpers for checking ops against float64 references computed naively in the test.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "device_test.h"
#include "ember/ember.h"

namespace ember::testing {

// Seeded inputs: drawn on the host from a CPU generator (the same values on every device, as
// torch's tests make them), then moved to the running test's device. A device's random ops take
// only that device's generators (Generator(device(), seed)), as torch's do.
inline Tensor host_uniform(IntArrayRef shape, double lo, double hi, Generator& g, DType dt = DType::Float64) {
  Tensor t = empty(shape, {.dtype = DType::Float64, .device = Device(DeviceType::CPU)});
  t.uniform_(lo, hi, &g);
  return t.to(dt).to(default_device());
}
inline Tensor host_randn(IntArrayRef shape, Generator& g, DType dt = DType::Float64) {
  return randn(shape, {.dtype = DType::Float64, .device = Device(DeviceType::CPU)}, &g).to(dt).to(default_device());
}
// host_randn from a fresh generator seeded with `seed`: the same values for the same seed.
inline Tensor seeded_randn(IntArrayRef shape, uint64_t seed, DType dt = DType::Float64) {
  Generator g(seed);
  return host_randn(shape, g, dt);
}
inline Tensor host_rand(IntArrayRef shape, Generator& g, DType dt = DType::Float64) {
  return host_uniform(shape, 0.0, 1.0, g, dt);
}

// A tensor's values in logical (row-major) order, as doubles, with its shape.
struct Ref {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return int64_t(v.size()); }
};

inline Ref ref_of(const Tensor& t) { return Ref{t.sizes(), t.tolist<double>()}; }

// Tolerances as torch.testing.assert_close.
inline std::pair<double, double> tolerances(DType t) {
  switch (t) {
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {1.6e-2, 1e-5};
    case DType::Float32: return {1.3e-6, 1e-5};
    case DType::Float64: return {1e-7, 1e-7};
    default: return {0.0, 0.0};
  }
}

inline ::testing::AssertionResult close_to(const Tensor& actual, const Ref& expected, DType tol_dtype,
                                           bool equal_nan = true) {
  if (!(IntArrayRef(actual.sizes()) == IntArrayRef(expected.shape))) {
    std::ostringstream os;
    os << "shape " << actual.sizes() << " != expected " << expected.shape;
    return ::testing::AssertionFailure() << os.str();
  }
  auto got = actual.tolist<double>();
  auto [rtol, atol] = tolerances(tol_dtype);
  for (size_t i = 0; i < got.size(); ++i) {
    double a = got[i], e = expected.v[i];
    if (std::isnan(a) && std::isnan(e) && equal_nan) continue;
    if (a == e) continue;
    if (std::isinf(a) || std::isinf(e) || std::isnan(a) || std::isnan(e) ||
        std::abs(a - e) > atol + rtol * std::abs(e))
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", expected " << e
                                           << " (dtype " << dtype_name(actual.dtype()) << ")";
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult close_to(const Tensor& actual, const Ref& expected) {
  return close_to(actual, expected, actual.dtype());
}

// Index helpers for references: row-major unravel and broadcast lookup.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}
inline double broadcast_at(const Ref& r, const std::vector<int64_t>& out_idx) {
  int64_t flat = 0, off = int64_t(out_idx.size()) - int64_t(r.shape.size());
  for (size_t d = 0; d < r.shape.size(); ++d) {
    int64_t i = r.shape[d] == 1 ? 0 : out_idx[d + off];
    flat = flat * r.shape[d] + i;
  }
  return r.v[flat];
}

// Elementwise reference: out[i] = f(a[i], b[i]) with broadcasting.
inline Ref ref_binary(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Ref out{broadcast_shapes(a.shape, b.shape), {}};
  int64_t n = shape_numel(out.shape);
  out.v.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    auto idx = unravel(i, out.shape);
    out.v[i] = f(broadcast_at(a, idx), broadcast_at(b, idx));
  }
  return out;
}
inline Ref ref_unary(const Ref& a, const std::function<double(double)>& f) {
  Ref out{a.shape, a.v};
  for (auto& x : out.v) x = f(x);
  return out;
}

// The same values laid out five ways, so ops see every stride pattern.
enum class Layout { Contiguous, Transposed, Strided, ZeroDim, Empty };
inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Strided: return "strided";
    case Layout::ZeroDim: return "0-dim";
    case Layout::Empty: return "empty";
  }
  return "?";
}
inline std::vector<Layout> all_layouts() {
  return {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::ZeroDim, Layout::Empty};
}

// Random values in [lo, hi) of the given dtype and layout (logical shape 3x4 unless 0-dim/empty).
// For integer dtypes the values are rounded. Non-contiguous layouts are real views.
inline Tensor make_input(DType dt, Layout layout, double lo = -2.0, double hi = 2.0, uint64_t seed = 0) {
  Generator g(seed + 1234);
  auto fill = [&](IntArrayRef shape) {
    Tensor t = empty(shape, {.dtype = DType::Float64, .device = Device(DeviceType::CPU)});
    t.uniform_(lo, hi, &g);
    if (!is_floating(dt)) t = t.round();
    if (dt == DType::Bool) t = t.gt(0.0);
    return t.to(dt).to(default_device());
  };
  switch (layout) {
    case Layout::Contiguous: return fill({3, 4});
    case Layout::Transposed: return fill({4, 3}).t();
    case Layout::Strided: return fill({3, 8}).slice(1, 0, std::nullopt, 2);
    case Layout::ZeroDim: return fill({});
    case Layout::Empty: return fill({0, 4});
  }
  return {};
}

inline std::vector<DType> all_dtypes() {
  return {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::Int32,
          DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}
inline std::vector<DType> float_dtypes() {
  return {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}

// Runs the statement and checks it throws E with a message containing `needle`.
// An out-of-range index: an IndexError raised on the host on the CPU (and the test device);
// on CUDA the kernel catches it with a device-side assert that ends the process's CUDA context,
// as torch's do, so there the check cannot run inside the test process.
#define EXPECT_INDEX_ERROR(stmt, E, needle) \
  do {                                      \
    if (!device().is_cuda()) EXPECT_THROW_MSG(stmt, E, needle); \
  } while (0)

#define EXPECT_THROW_MSG(stmt, E, needle)                                              \
  do {                                                                                 \
    try {                                                                              \
      stmt;                                                                            \
      ADD_FAILURE() << "expected " #E " from: " #stmt;                                 \
    } catch (const E& ex) {                                                            \
      EXPECT_NE(std::string(ex.what()).find(needle), std::string::npos)                \
          << "message was: " << ex.what() << "\nexpected to contain: " << (needle);   \
    }                                                                                  \
  } while (0)

}  // namespace ember::testing
