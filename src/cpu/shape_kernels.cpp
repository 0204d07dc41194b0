// CPU kernels for the shape ops that copy: cat, repeat, flip, roll, tril, triu.
// Arguments arrive checked and with dims wrapped (src/ops/shape.cpp). Data moves by memcpy of
// contiguous runs where the layout allows, else through copy_ (the TensorIter copy path);
// nothing here walks elements one index computation at a time.
#include <cstring>

#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

// Splits `n` items of `bytes_each` across threads with roughly kGrainSize bytes per task.
template <class F> void parallel_bytes(int64_t n, int64_t bytes_each, const F& fn) {
  int64_t grain = std::max<int64_t>(1, kGrainSize * 4 / std::max<int64_t>(bytes_each, 1));
  parallel_for(0, n, grain, fn);
}

// ---------------------------------------------------------------- cat

// The device-agnostic form: copy_ each input into its slice of the result.
Tensor cat_generic(TensorList tensors, int64_t dim) {
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  DType dt = tensors[0].dtype();
  for (size_t i = 1; i < tensors.size(); ++i) dt = promote_types(dt, tensors[i].dtype());
  const Tensor* ref = nullptr;
  int64_t total = 0;
  for (const auto& t : tensors)
    if (!skipped(t)) {
      if (!ref) ref = &t;
      total += t.size(dim);
    }
  Shape shape = ref ? ref->sizes() : Shape{0};
  if (ref) shape[dim] = total;
  Tensor out = empty(shape, {.dtype = dt, .device = tensors[0].device()});
  if (!ref || out.numel() == 0) return out;
  int64_t off = 0;
  for (const auto& t : tensors) {
    if (skipped(t)) continue;
    int64_t n = t.size(dim);
    if (n == 0) continue;
    Tensor dst = narrow(out, dim, off, n);
    copy_(dst, t);
    off += n;
  }
  return out;
}

Tensor cat_cpu(TensorList tensors, int64_t dim) {
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  DType dt = tensors[0].dtype();
  bool all_fast = true;
  for (size_t i = 1; i < tensors.size(); ++i) dt = promote_types(dt, tensors[i].dtype());
  for (const auto& t : tensors)
    if (!skipped(t) && (t.dtype() != dt || !t.is_contiguous())) all_fast = false;
  if (!all_fast) return cat_generic(tensors, dim);

  // Every input is contiguous in the result's dtype: the result is, for each index of the dims
  // before `dim`, the inputs' rows one after another. One memcpy per (outer index, input).
  const Tensor* ref = nullptr;
  int64_t total = 0;
  for (const auto& t : tensors)
    if (!skipped(t)) {
      if (!ref) ref = &t;
      total += t.size(dim);
    }
  Shape shape = ref ? ref->sizes() : Shape{0};
  if (ref) shape[dim] = total;
  Tensor out = empty(shape, {.dtype = dt, .device = tensors[0].device()});
  if (!ref || out.numel() == 0) return out;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (int64_t d = dim + 1; d < int64_t(shape.size()); ++d) inner *= shape[d];
  const int64_t es = element_size(dt);
  std::vector<const char*> src;
  std::vector<int64_t> row_bytes;
  for (const auto& t : tensors) {
    if (skipped(t) || t.numel() == 0) continue;
    src.push_back(static_cast<const char*>(t.data_ptr()));
    row_bytes.push_back(t.size(dim) * inner * es);
  }
  const int64_t out_row = total * inner * es;
  char* dst = static_cast<char*>(out.data_ptr());
  parallel_bytes(outer, out_row, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* p = dst + o * out_row;
      for (size_t k = 0; k < src.size(); ++k) {
        std::memcpy(p, src[k] + o * row_bytes[k], size_t(row_bytes[k]));
        p += row_bytes[k];
      }
    }
  });
  return out;
}

// ---------------------------------------------------------------- repeat

// repeat's geometry: self's sizes left-padded with 1s to len(repeats), and the output tensor.
struct RepeatPlan {
  Shape padded;
  Tensor out;
};
RepeatPlan plan_repeat(const Tensor& self, IntArrayRef repeats) {
  int64_t nd = int64_t(repeats.size()), pad = nd - self.dim();
  Shape padded(nd), out_shape(nd);
  for (int64_t i = 0; i < nd; ++i) {
    padded[i] = i < pad ? 1 : self.size(i - pad);
    out_shape[i] = padded[i] * repeats[i];
  }
  return {padded, empty(out_shape, {.dtype = self.dtype(), .device = self.device()})};
}


// The result viewed as [r0, s0, r1, s1, ...] receives the input viewed as [1, s0, 1, s1, ...]
// expanded along the r dims: one broadcast copy_ (PyTorch's approach).
Tensor repeat_generic(const Tensor& self, IntArrayRef repeats) {
  int64_t nd = int64_t(repeats.size());
  RepeatPlan plan = plan_repeat(self, repeats);  // not a structured binding: lambdas capture these (clang 14)
  const Shape& padded = plan.padded;
  Tensor& out = plan.out;
  if (out.numel() == 0) return out;
  Shape ostr = out.strides();
  Shape v_sizes, v_strides, x_sizes;
  for (int64_t i = 0; i < nd; ++i) {
    v_sizes.push_back(repeats[i]);
    v_strides.push_back(ostr[i] * padded[i]);
    v_sizes.push_back(padded[i]);
    v_strides.push_back(ostr[i]);
    x_sizes.push_back(1);
    x_sizes.push_back(padded[i]);
  }
  Tensor dst = as_strided(out, v_sizes, v_strides, 0);
  Tensor src = reshape(self, x_sizes);
  copy_(dst, src);
  return out;
}

// CPU: copy the input once into the first block, then replicate blocks by memcpy, innermost
// dim first (each step copies already-finished contiguous blocks).
Tensor repeat_cpu(const Tensor& self, IntArrayRef repeats) {
  int64_t nd = int64_t(repeats.size());
  RepeatPlan plan = plan_repeat(self, repeats);  // not a structured binding: lambdas capture these (clang 14)
  const Shape& padded = plan.padded;
  Tensor& out = plan.out;
  if (out.numel() == 0) return out;
  if (nd == 0) { copy_(out, self); return out; }
  const int64_t es = self.element_size();
  // Write the input into the "corner" of the result: out[:s0, :s1, ...] (a strided view).
  Shape corner_strides = out.strides();
  Tensor corner = as_strided(out, padded, corner_strides, 0);
  copy_(corner, reshape(self, padded));
  // Now expand dims from the innermost out. Invariant before step d (going inward->outward):
  // for every index of dims < d in the corner, the block of dims >= d+1 is complete, so along
  // dim d the first padded[d] rows of each block are filled; replicate them repeats[d] times.
  char* base = static_cast<char*>(out.data_ptr());
  for (int64_t d = nd - 1; d >= 0; --d) {
    // Bytes in one complete slab along dim d (one index of d): size of dims > d in out.
    int64_t slab = es;
    for (int64_t k = d + 1; k < nd; ++k) slab *= out.sizes()[k];
    const int64_t filled = padded[d] * slab;  // the filled run along d
    if (repeats[d] == 1 || filled == 0) continue;
    // Outer indices: dims < d range over the corner (padded sizes) only.
    int64_t outer = 1;
    for (int64_t k = 0; k < d; ++k) outer *= padded[k];
    const int64_t r = repeats[d];
    const Shape& ostr = out.strides();
    parallel_bytes(outer, filled * r, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        // Offset of outer index o (row-major over padded[0..d)) in out.
        int64_t off = 0, rem = o;
        for (int64_t k = d - 1; k >= 0; --k) {
          off += (rem % padded[k]) * ostr[k];
          rem /= padded[k];
        }
        char* p = base + off * es;
        for (int64_t j = 1; j < r; ++j) std::memcpy(p + j * filled, p, size_t(filled));
      }
    });
  }
  return out;
}

// ---------------------------------------------------------------- flip

template <class U> void reverse_run(U* __restrict dst, const U* __restrict src, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dst[k] = src[n - 1 - k];
}

Tensor flip_cpu(const Tensor& self, IntArrayRef dims) {
  Tensor src = self.contiguous();
  Tensor out = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  int64_t nd = self.dim();
  if (out.numel() == 0) return out;
  std::vector<bool> flipped(nd, false);
  for (auto d : dims) flipped[d] = true;
  // Merge the trailing dims that are not flipped into one contiguous block.
  int64_t last_flipped = -1;
  for (int64_t d = nd - 1; d >= 0; --d)
    if (flipped[d]) { last_flipped = d; break; }
  if (last_flipped < 0) { std::memcpy(out.data_ptr(), src.data_ptr(), size_t(out.nbytes())); return out; }
  const int64_t es = self.element_size();
  int64_t block = 1;  // elements in one unflipped trailing block
  for (int64_t d = last_flipped + 1; d < nd; ++d) block *= self.size(d);
  // Walk the output over dims [0, last_flipped]; the innermost of these (last_flipped) is
  // flipped: when block == 1 it becomes one reversed run, else a sequence of block copies.
  const Shape& sizes = self.sizes();
  const Shape& cs = src.strides();
  int64_t inner_n = sizes[last_flipped];
  int64_t outer = 1;
  for (int64_t d = 0; d < last_flipped; ++d) outer *= sizes[d];
  const char* sbase = static_cast<const char*>(src.data_ptr());
  char* dbase = static_cast<char*>(out.data_ptr());
  const int64_t row_elems = inner_n * block;
  auto source_row = [&](int64_t o) {  // where output row o (over dims [0, last_flipped)) reads
    int64_t soff = 0, rem = o;
    for (int64_t d = last_flipped - 1; d >= 0; --d) {
      int64_t i = rem % sizes[d];
      rem /= sizes[d];
      soff += (flipped[d] ? sizes[d] - 1 - i : i) * cs[d];
    }
    return sbase + soff * es;
  };
  if (block > 1 && outer < 2 * ember::detail::max_parallel_threads()) {
    // Few rows of blocks (x.flip(0) of a matrix is one): split the blocks across threads, not
    // the rows (1024 x 1024 float32: one thread took 105 us, torch 2.15 56).
    const int64_t bb = block * es;
    parallel_bytes(outer * inner_n, bb, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t o = u / inner_n, k = u % inner_n;
        std::memcpy(dbase + (o * row_elems + k * block) * es, source_row(o) + (inner_n - 1 - k) * bb, size_t(bb));
      }
    });
    return out;
  }
  parallel_bytes(outer, row_elems * es, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const char* s = source_row(o);
      char* dp = dbase + o * row_elems * es;
      if (block == 1) {
        switch (es) {
          case 1: reverse_run(reinterpret_cast<uint8_t*>(dp), reinterpret_cast<const uint8_t*>(s), inner_n); break;
          case 2: reverse_run(reinterpret_cast<uint16_t*>(dp), reinterpret_cast<const uint16_t*>(s), inner_n); break;
          case 4: reverse_run(reinterpret_cast<uint32_t*>(dp), reinterpret_cast<const uint32_t*>(s), inner_n); break;
          case 8: reverse_run(reinterpret_cast<uint64_t*>(dp), reinterpret_cast<const uint64_t*>(s), inner_n); break;
          default:  // 16 bytes (complex128): read as 8 it reversed halves and read past the row
            reverse_run(reinterpret_cast<complex128*>(dp), reinterpret_cast<const complex128*>(s), inner_n); break;
        }
      } else {
        const int64_t bb = block * es;
        for (int64_t k = 0; k < inner_n; ++k) std::memcpy(dp + k * bb, s + (inner_n - 1 - k) * bb, size_t(bb));
      }
    }
  });
  return out;
}

// ---------------------------------------------------------------- roll

// Along one dim: out[(i + shift) mod n] = in[i], i.e. two slice copies.
Tensor roll_generic(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  Tensor cur = self;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t d = dims[k];
    int64_t n = cur.size(d);
    Tensor out = empty(cur.sizes(), {.dtype = cur.dtype(), .device = cur.device()});
    if (out.numel() == 0) return out;
    int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) {
      copy_(out, cur);
    } else {
      Tensor a = narrow(out, d, s, n - s), b = narrow(out, d, 0, s);
      copy_(a, narrow(cur, d, 0, n - s));
      copy_(b, narrow(cur, d, n - s, s));
    }
    cur = out;
  }
  if (cur.is_same(self)) cur = clone(self);
  return cur;
}

// ---------------------------------------------------------------- tril / triu

// Clones the input contiguously, then zeroes the masked part of every row with memset (all
// zero bits are 0 in every dtype).
Tensor tri_cpu(const Tensor& self, int64_t k, bool lower) {
  Tensor out = clone(self);
  if (out.numel() == 0) return out;
  const int64_t rows = self.size(-2), cols = self.size(-1);
  const int64_t es = self.element_size();
  const int64_t nrows = out.numel() / cols;  // every row of every matrix
  char* base = static_cast<char*>(out.data_ptr());
  parallel_bytes(nrows, cols * es, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = r % rows;
      char* row = base + r * cols * es;
      if (lower) {  // keep j <= i + k
        int64_t from = std::clamp<int64_t>(i + k + 1, 0, cols);
        std::memset(row + from * es, 0, size_t((cols - from) * es));
      } else {  // keep j >= i + k
        int64_t to = std::clamp<int64_t>(i + k, 0, cols);
        std::memset(row, 0, size_t(to * es));
      }
    }
  });
  return out;
}
Tensor tril_cpu(const Tensor& self, int64_t k) { return tri_cpu(self, k, true); }
Tensor triu_cpu(const Tensor& self, int64_t k) { return tri_cpu(self, k, false); }

EMBER_REGISTER_KERNEL(cat, CPU, cat_cpu);
EMBER_REGISTER_KERNEL(cat, CompositeBackend, cat_generic);
EMBER_REGISTER_KERNEL(repeat, CPU, repeat_cpu);
EMBER_REGISTER_KERNEL(repeat, CompositeBackend, repeat_generic);
EMBER_REGISTER_KERNEL(flip, CPU, flip_cpu);
EMBER_REGISTER_KERNEL(roll, CPU, roll_generic);
EMBER_REGISTER_KERNEL(roll, CompositeBackend, roll_generic);
EMBER_REGISTER_KERNEL(tril, CPU, tril_cpu);
EMBER_REGISTER_KERNEL(triu, CPU, triu_cpu);

}  // namespace
}  // namespace ember::cpu
