#pragma once
// A stable LSD radix sort of one row's keys with their positions: sort's kernel for rows long
// enough that n log n compares, each a likely branch miss on real data, cost more than a few
// linear passes over the row (6x faster for rows of 1024 floats, from 32 on the faster).
//
// Each key becomes an unsigned integer whose order is the one PyTorch sorts by (cpu/sort_utils.h):
// floats by their bits with the sign folded in, -0.0 as +0.0 (they compare equal), every NaN as
// the largest value; signed integers with the sign bit flipped; a descending sort complements the
// key. Every pass is stable and positions start in order, so equal keys keep their positions'
// order in both directions: the result is exactly std::sort's with `before`.
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember::cpu {

template <class K> struct RadixKeyOf {
  using type = std::make_unsigned_t<std::conditional_t<std::is_same_v<K, bool>, uint8_t, K>>;
};
template <> struct RadixKeyOf<float> { using type = uint32_t; };
template <> struct RadixKeyOf<double> { using type = uint64_t; };
template <class K> using radix_key_t = typename RadixKeyOf<K>::type;

template <class K> inline radix_key_t<K> radix_key(K v, bool descending) {
  using U = radix_key_t<K>;
  U u;
  if constexpr (std::is_floating_point_v<K>) {
    constexpr U sign = U(1) << (8 * sizeof(U) - 1);
    if (v != v) {
      u = ~U(0);  // NaN: above +inf (whose key has the exponent's bits, not all ones)
    } else {
      if (v == K(0)) v = K(0);  // -0.0 sorts as +0.0
      std::memcpy(&u, &v, sizeof u);
      u = (u & sign) ? U(~u) : U(u | sign);
    }
  } else if constexpr (std::is_signed_v<K>) {
    u = U(v) ^ (U(1) << (8 * sizeof(U) - 1));
  } else {
    u = U(v);
  }
  return descending ? U(~u) : u;
}

// Sorts keys[0, n) by value, carrying pos alongside; k2/p2 are scratch of the same length.
// Returns the positions in sorted order (pointing into pos or p2). A pass whose byte is the same
// in every key moves nothing and is skipped (the high bytes of small integers).
template <class U>
const int64_t* radix_sort(U* keys, int64_t* pos, U* k2, int64_t* p2, int64_t n) {
  constexpr int kBytes = sizeof(U);
  uint32_t counts[kBytes][256] = {};
  for (int64_t i = 0; i < n; ++i) {
    const U k = keys[i];
    for (int b = 0; b < kBytes; ++b) ++counts[b][(k >> (8 * b)) & 0xFF];
  }
  U* src_k = keys;
  int64_t* src_p = pos;
  U* dst_k = k2;
  int64_t* dst_p = p2;
  for (int b = 0; b < kBytes; ++b) {
    const uint32_t* c = counts[b];
    if (c[(src_k[0] >> (8 * b)) & 0xFF] == uint32_t(n)) continue;
    uint32_t offset[256];
    uint32_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      offset[d] = sum;
      sum += c[d];
    }
    for (int64_t i = 0; i < n; ++i) {
      const U k = src_k[i];
      const uint32_t o = offset[(k >> (8 * b)) & 0xFF]++;
      dst_k[o] = k;
      dst_p[o] = src_p[i];
    }
    std::swap(src_k, dst_k);
    std::swap(src_p, dst_p);
  }
  return src_p;
}

}  // namespace ember::cpu
