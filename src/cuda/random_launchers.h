#pragma once
// The CUDA random-number launchers (random_kernels.cu) as plain data, for the host side
// (random_ops.cpp), which checks arguments, reserves Philox counters from the generator and
// picks where to write. No tensor headers: nvcc compiles random_kernels.cu against this only.
//
// Every result depends only on (seed, offset, element index), never on the launch
// configuration: element e of a fill that draws W 32-bit words per element (W = 1 or 2) uses
// the words W*e .. W*e + W - 1 of the stream, i.e. the 128-bit Philox4x32-10 output for counter
// offset + (W*e) / 4 (key = the seed), words (W*e) % 4 on. A fill of n elements therefore
// reserves philox_counters(n, W) counters, and consecutive fills continue the stream.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ember::cuda {

// Counters a fill of n elements drawing `words` 32-bit words per element uses.
inline constexpr uint64_t philox_counters(int64_t n, int words) { return (uint64_t(n) * uint64_t(words) + 3) / 4; }

// Words per element of each fill (see random_kernels.cu for the transforms):
//   uniform_, exponential_: 1 for float32/float16/bfloat16 (24 bits), 2 for float64 (53 bits)
//   normal_, log_normal_: 1 for float32/float16/bfloat16 and 2 for float64; Box-Muller takes the
//     pair (2j, 2j + 1) of uniforms for elements 2j (cosine) and 2j + 1 (sine)
//   bernoulli_: 2 (a 53-bit uniform compared with p), every dtype
//   random_: 1 when the range is below 2^28, else 2 (as the CPU's choice of 32 or 64 bits)
//   randperm: 2 (a 64-bit sort key per index)
//   multinomial: 2 per sample with replacement; exponential_'s words per entry for the race
inline constexpr int float_words(bool is_double) { return is_double ? 2 : 1; }

// A fill of n elements of `dtype` (a DTypeCode) stored densely at data, in memory order.
struct RandomArgs {
  char* data = nullptr;
  int64_t n = 0;
  int8_t dtype = 0;
  uint64_t seed = 0;
  uint64_t offset = 0;  // the first Philox counter
  cudaStream_t stream = nullptr;
};

// [from, to): from + u * (to - from) rounded to the dtype; a value that rounds up to `to` is
// replaced by from (the CPU's rule). float16/bfloat16/float32 compute in float.
void launch_uniform(const RandomArgs& a, double from, double to);
// mean + std * z (z standard normal); with `log`, exp of it (log_normal_).
void launch_normal(const RandomArgs& a, double mean, double std, bool log);
// -log(u) / lambd with u in (0, 1] and the log kept away from 0 (torch's CUDA transform: never 0).
void launch_exponential(const RandomArgs& a, double lambd);
// 1 where a 53-bit uniform is below p, else 0, in any real dtype (bool included).
void launch_bernoulli(const RandomArgs& a, double p);
// from + draw % range as int64, cast to the dtype (the CPU's cast_from_int); range == 0 means
// the full 64-bit range (the draw itself). wide: 64-bit draws (2 words), else 32-bit (1 word).
void launch_random(const RandomArgs& a, int64_t from, uint64_t range, bool wide);

// The scratch bytes of one cub::DeviceRadixSort::SortPairs of n (64-bit key, int64 value)
// pairs over key bits [0, end_bit) (randperm's and multinomial's sorts).
size_t sort_pairs_temp_bytes(int64_t n, int end_bit);

// randperm(n): 64-bit Philox keys (2 words per index) sorted with their indices. The caller
// passes n-element buffers: keys_in, keys_out (8 bytes each) and values_in (int64), values_out
// (int64, the permutation), and sort_pairs_temp_bytes(n, 64) bytes of temp.
void launch_randperm(int64_t n, void* keys_in, void* keys_out, int64_t* values_in, int64_t* values_out, void* temp,
                     size_t temp_bytes, uint64_t seed, uint64_t offset, cudaStream_t stream);

// multinomial over the rows of a contiguous (rows, cats) probability matrix of a floating dtype.
// Every path also validates the rows into *flag (a zeroed device int): bit 1 when a value is
// NaN, infinite or negative, bit 2 when a row sums to <= 0; the caller raises after reading it.
struct MultinomialArgs {
  const void* probs = nullptr;
  int8_t dtype = 0;
  int64_t rows = 0, cats = 0, samples = 0;
  int64_t* out = nullptr;  // (rows, samples) category indices
  int* flag = nullptr;
  uint64_t seed = 0, offset = 0;
  cudaStream_t stream = nullptr;
};
// With replacement (samples > 1): each row's cumulative sums (in float, or double for float64
// input) divided by the total, the last set to 1, into cum (rows * cats of that type); sample j
// of row r takes the 53-bit uniform of element r * samples + j (2 words each) and the first
// bucket not below it (the CPU's inverse-CDF rule).
void launch_multinomial_with_replacement(const MultinomialArgs& a, void* cum);
// The exponential race (without replacement, or one sample): q ~ Exp(1) per entry, entry
// r * cats + k drawing as exponential_ in the input's dtype (float_words words each), ratio
// p / q in that dtype; one sample: the first largest ratio per row.
void launch_multinomial_argmax(const MultinomialArgs& a);
// More samples: the `samples` largest ratios per row, largest first (ties: lower index first),
// by a stable sort of all rows * cats ratios, then of their rows. Buffers of rows * cats entries:
// keys_in, keys_out (8 bytes each), values_in, values_out (int64); temp: the larger of
// sort_pairs_temp_bytes(rows * cats, 64) and sort_pairs_temp_bytes(rows * cats, row_bits(rows)).
inline int row_bits(int64_t rows) {
  int b = 1;
  while (b < 63 && (int64_t(1) << b) < rows) ++b;
  return b;
}
void launch_multinomial_topk(const MultinomialArgs& a, void* keys_in, void* keys_out, int64_t* values_in,
                             int64_t* values_out, void* temp, size_t temp_bytes);

}  // namespace ember::cuda
