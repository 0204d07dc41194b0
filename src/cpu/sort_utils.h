#pragma once
// The ordering every CPU sorting and selection kernel uses (sort, topk, unique, median,
// kthvalue), and the walk over the rows along one dim they share.
//
// Ordering follows PyTorch: NaN is the largest value; equal keys are ordered by position, so
// ties resolve the same way in every kernel. float16/bfloat16 compare as float.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/tensor_iter.h"

namespace ember::cpu {

// A 0-dim tensor walks as one row of one element.
inline Shape sizes1(const Tensor& t) { return t.dim() ? t.sizes() : Shape{1}; }
inline Shape strides1(const Tensor& t) { return t.dim() ? t.strides() : Shape{1}; }

template <class T> struct KeyOf { using type = T; };
template <> struct KeyOf<Half> { using type = float; };
template <> struct KeyOf<BFloat16> { using type = float; };
template <class T> using key_t = typename KeyOf<T>::type;

template <class K> inline bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(v);
  else return false;
}
// a < b with NaN the largest value.
template <class K> inline bool lt_nan(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) return std::isnan(b) ? !std::isnan(a) : a < b;
  else return a < b;
}

template <class K> struct Item {
  K key;
  int64_t pos;
};
template <class K> inline bool before(const Item<K>& a, const Item<K>& b, bool descending) {
  if (descending) {
    if (lt_nan(b.key, a.key)) return true;
    if (lt_nan(a.key, b.key)) return false;
  } else {
    if (lt_nan(a.key, b.key)) return true;
    if (lt_nan(b.key, a.key)) return false;
  }
  return a.pos < b.pos;
}

// Calls fn(in_off, out_off) (element offsets) for every row along `dim`; rows run in parallel.
// in_strides: the input's; out_strides: the outputs' (over sizes with `dim` kept, any size there).
template <class F>
void for_each_row(const Shape& sizes, const Shape& in_strides, const Shape& out_strides, int64_t dim,
                  int64_t work_per_row, const F& fn) {
  Shape rs = sizes;
  rs[dim] = 1;
  const int64_t rows = shape_numel(rs);
  if (rows == 0) return;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, work_per_row)),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t lin = r, io = 0, oo = 0;
      for (size_t d = rs.size(); d-- > 0;) {
        int64_t c = lin % rs[d];
        lin /= rs[d];
        io += c * in_strides[d];
        oo += c * out_strides[d];
      }
      fn(io, oo);
    }
  });
}

}  // namespace ember::cpu
