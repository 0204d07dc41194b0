// CPU kernels for mm, bmm, addmm and dot. Arguments arrive checked by src/ops/linalg.cpp.
//
// float32/float64 GEMM goes to cpu::gemm (src/cpu/gemm.h: oneDNN or OpenBLAS). A matrix whose
// strides BLAS can describe (row-major or column-major with a leading dimension) is passed as
// it is, with the transpose flag and leading dimension set, so t() and sliced views cost no
// copy; anything else (an expanded row, a doubly strided slice) is copied to a contiguous
// buffer first. Integer types use a plain i-k-j loop accumulating in 64 bits (wrapping as
// PyTorch does). bfloat16 goes to oneDNN's bfloat16 matmul (src/cpu/dnnl_matmul.h: AMX
// kernels, float32 accumulation, one rounding); float16, and bfloat16 where that declines,
// run through the float32 path and are rounded back once.
//
// Threads: OpenBLAS and oneDNN here are OpenMP builds and share ember's pool. A batch of small
// matrices is split across threads with one single-threaded GEMM per matrix (both libraries
// run single-threaded inside a parallel region); large matrices are done one after another and
// the library threads each of them. The two are never nested.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <type_traits>
#include <vector>

#include "cpu/blas_layout.h"
#include "cpu/dnnl_matmul.h"
#include "cpu/gemm.h"
#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {

// (blas_layout.h)
Mat mat_of(const Tensor& t) {
  int64_t d = t.dim();
  Mat m;
  m.hold = t;
  m.data = static_cast<const char*>(t.data_ptr());
  m.bs = d == 3 ? t.strides()[0] : 0;
  m.rs = t.strides()[d - 2];
  m.cs = t.strides()[d - 1];
  return m;
}

BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  auto fits = [](int64_t v) { return v < INT_MAX; };
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(1, cols))) {
    int64_t ld = rows <= 1 ? std::max<int64_t>(1, cols) : rs;
    if (fits(ld)) return {true, false, ld};
  }
  if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(1, rows))) {
    int64_t ld = cols <= 1 ? std::max<int64_t>(1, rows) : cs;
    if (fits(ld)) return {true, true, ld};
  }
  return {};
}

Mat blas_ready(const Tensor& t, int64_t rows, int64_t cols, BlasLayout& layout) {
  Mat m = mat_of(t);
  layout = blas_layout(rows, cols, m.rs, m.cs);
  if (layout.ok) return m;
  m = mat_of(t.contiguous());
  layout = blas_layout(rows, cols, m.rs, m.cs);
  EMBER_CHECK(layout.ok, "matmul: matrix too large for BLAS (", rows, "x", cols, ")");
  return m;
}

namespace {

// Below this many multiply-adds per matrix a batch is split across threads by matrix.
constexpr int64_t kSmallGemm = 64 * 64 * 64;
constexpr int64_t kMediumGemm = 256 * 256 * 256;

// C[i] = alpha * A[i] @ B[i] + beta * C[i] for i < batch; C contiguous (batch, M, N); K > 0.
template <class T>
void gemm_blas(int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const Tensor& a, const Tensor& b,
               T beta, T* C) {
  EMBER_CHECK(M < INT_MAX && N < INT_MAX && K < INT_MAX, "matmul: matrix dimension too large for BLAS");
  BlasLayout la, lb;
  Mat ma = blas_ready(a, M, K, la), mb = blas_ready(b, K, N, lb);
  const T* A = reinterpret_cast<const T*>(ma.data);
  const T* B = reinterpret_cast<const T*>(mb.data);
  auto one = [&](int64_t i) {
    gemm(la.trans, lb.trans, M, N, K, alpha, A + i * ma.bs, la.ld, B + i * mb.bs, lb.ld, beta, C + i * M * N, N);
  };
  int64_t work = M * N * K;
  // A batch at least two matrices per thread deep splits by matrix up to kMediumGemm too: a
  // BLAS call that threads itself pays a fork and barriers per matrix (attention's 32 heads of
  // 128x128x32 spend a tenth of their time there), the split pays one.
  const bool deep = batch >= 2 * int64_t(ember::detail::max_parallel_threads()) && work < kMediumGemm;
  if (batch > 1 && (work < kSmallGemm || deep)) {
    parallel_for(0, batch, std::max<int64_t>(1, kSmallGemm / work / 4), [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

// The same for integer types: an i-k-j loop (unit-stride inner loop over a row of B and C when
// B is row-major), accumulating in uint64 so overflow wraps like PyTorch's integer arithmetic.
template <class T>
void gemm_loop(int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const Tensor& a, const Tensor& b, T beta,
               T* C) {
  using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
  Mat ma = mat_of(a), mb = mat_of(b);
  const T* A = reinterpret_cast<const T*>(ma.data);
  const T* B = reinterpret_cast<const T*>(mb.data);
  const Acc al = Acc(int64_t(alpha)), be = Acc(int64_t(beta));
  const bool keep_c = beta != T(0);
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, N * K));
  parallel_for(0, batch * M, grain, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(static_cast<size_t>(N));
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bi = r / M, i = r % M;
      std::fill(acc.begin(), acc.end(), Acc(0));
      const T* arow = A + bi * ma.bs + i * ma.rs;
      const T* bmat = B + bi * mb.bs;
      for (int64_t k = 0; k < K; ++k) {
        Acc av = Acc(int64_t(arow[k * ma.cs]));
        if (av == 0) continue;
        const T* brow = bmat + k * mb.rs;
        if (mb.cs == 1) {
          for (int64_t j = 0; j < N; ++j) acc[j] += av * Acc(int64_t(brow[j]));
        } else {
          for (int64_t j = 0; j < N; ++j) acc[j] += av * Acc(int64_t(brow[j * mb.cs]));
        }
      }
      T* crow = C + r * N;
      for (int64_t j = 0; j < N; ++j) {
        Acc v = al * acc[j];
        if (keep_c) v += be * Acc(int64_t(crow[j]));
        crow[j] = T(int64_t(v));
      }
    }
  });
}

// out (contiguous; (M, N) or (batch, M, N)) = alpha * a @ b + beta * out. When beta is 0 the
// old contents of out are ignored (NaN included), as in PyTorch.
void gemm_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  DType dt = out.dtype();
  if (is_reduced_float(dt)) {
    if (dnnl_matmul::gemm_into(out, a, b, alpha, beta)) return;
    Tensor out32 = beta.to_double() != 0.0 ? out.to(kFloat32) : empty(out.sizes(), {.dtype = kFloat32, .device = out.device()});
    gemm_into(out32, a.to(kFloat32), b.to(kFloat32), alpha, beta);
    out.copy_(out32);
    return;
  }
  const bool batched = a.dim() == 3;
  const int64_t batch = batched ? a.sizes()[0] : 1;
  const int64_t M = a.sizes()[a.dim() - 2], K = a.sizes()[a.dim() - 1], N = b.sizes()[b.dim() - 1];
  if (batch == 0 || M == 0 || N == 0) return;
  visit_dtype<kNumericTypes | kComplexTypes>(dt, "addmm_impl_cpu_", [&]<class T>() {
    T* C = static_cast<T*>(out.data_ptr());
    T al = alpha.to<T>(), be = beta.to<T>();
    if (K == 0) {  // an empty sum: out = beta * out
      int64_t n = out.numel();
      if (be == T(0)) std::fill(C, C + n, T(0));
      else if (be != T(1)) for (int64_t i = 0; i < n; ++i) C[i] = T(be * C[i]);
      return;
    }
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
      gemm_blas<T>(batch, M, N, K, al, a, b, be, C);
    else gemm_loop<T>(batch, M, N, K, al, a, b, be, C);
  });
}

Tensor mm_cpu(const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.sizes()[0], b.sizes()[1]}, {.dtype = a.dtype(), .device = a.device()});
  gemm_into(out, a, b, 1, 0);
  return out;
}

Tensor bmm_cpu(const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, {.dtype = a.dtype(), .device = a.device()});
  gemm_into(out, a, b, 1, 0);
  return out;
}

}  // namespace

// (blas_layout.h) The copy of self happens per block on the block's thread: the separate copy_
// this replaces in addmm cost ~10 us even for a 64x512 block, a sixth of the product.
template <class T>
void addmm_then_typed(Tensor& out, const Tensor& self, const Tensor& m1, const Tensor& m2, const GemmBlockFn& then) {
  const int64_t M = out.sizes()[0], N = out.sizes()[1], K = m1.sizes()[1];
  EMBER_CHECK(M < INT_MAX && N < INT_MAX && K < INT_MAX, "matmul: matrix dimension too large for BLAS");
  T* C = out.data_ptr<T>();
  BlasLayout la, lb;
  const Mat ma = blas_ready(m1, M, K, la), mb = blas_ready(m2, K, N, lb);
  GemmBlockFn copy_self;
  Tensor s;
  if (self.defined()) {
    s = self.expand({M, N});
    copy_self = [&, S = s.data_ptr<T>(), rs = s.strides()[0], cs = s.strides()[1]](int64_t r0, int64_t r1, int64_t c0,
                                                                                   int64_t c1) {
      for (int64_t r = r0; r < r1; ++r) {
        T* dst = C + r * N;
        const T* src = S + r * rs;
        if (cs == 1) std::copy(src + c0, src + c1, dst + c0);
        else for (int64_t j = c0; j < c1; ++j) dst[j] = src[j * cs];
      }
    };
  }
  gemm_then(la.trans, lb.trans, M, N, K, reinterpret_cast<const T*>(ma.data), la.ld,
            reinterpret_cast<const T*>(mb.data), lb.ld, C, N, copy_self, then);
}

void addmm_then(Tensor& out, const Tensor& self, const Tensor& m1, const Tensor& m2, const GemmBlockFn& then) {
  if (out.dtype() == kFloat32) addmm_then_typed<float>(out, self, m1, m2, then);
  else addmm_then_typed<double>(out, self, m1, m2, then);
}

namespace {

// addmm with beta = alpha = 1 (every Linear; an LSTM step's precomputed input gates) for
// float32/float64: addmm_then, the same blocks and library calls as copy_ + gemm, so the same bits.
bool add_onto_self(Tensor& out, const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta,
                   const Scalar& alpha) {
  const DType dt = out.dtype();
  if ((dt != kFloat32 && dt != kFloat64) || self.dtype() != dt || beta.to_double() != 1.0 || alpha.to_double() != 1.0 ||
      m1.sizes()[1] == 0 || out.numel() == 0)
    return false;
  addmm_then(out, self, m1, m2, GemmBlockFn());
  return true;
}

Tensor addmm_cpu(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  Tensor out = empty({m1.sizes()[0], m2.sizes()[1]}, {.dtype = m1.dtype(), .device = m1.device()});
  bool use_self = beta.to_double() != 0.0;
  // linear's bias row is added inside oneDNN's bfloat16 matmul, not copied into out first
  if (use_self && beta.to_double() == 1.0 && alpha.to_double() == 1.0 && self.dim() == 1 &&
      dnnl_matmul::linear_into(out, m1, m2, self))
    return out;
  if (use_self && add_onto_self(out, self, m1, m2, beta, alpha)) return out;
  if (use_self) out.copy_(self);  // broadcasts self to (M, N)
  gemm_into(out, m1, m2, alpha, use_self ? beta : Scalar(0));
  return out;
}

Tensor dot_cpu(const Tensor& a, const Tensor& b) {
  DType dt = a.dtype();
  if (is_reduced_float(dt)) return dot_cpu(a.to(kFloat32), b.to(kFloat32)).to(dt);
  // complex: unconjugated, as torch.dot (vdot conjugates first); one multiply and one sum.
  if (is_complex(dt)) return sum(mul(a, b));
  Tensor out = empty({}, {.dtype = dt, .device = a.device()});
  const int64_t n = a.numel();
  visit_dtype<kNumericTypes>(dt, "dot", [&]<class T>() {
    T* r = static_cast<T*>(out.data_ptr());
    if (n == 0) { *r = T(0); return; }
    if constexpr (std::is_floating_point_v<T>) {
      // BLAS wants positive increments within int range; anything else (an expanded vector)
      // is made contiguous.
      auto ok = [n](const Tensor& t) { return n == 1 || (t.strides()[0] > 0 && t.strides()[0] < INT_MAX); };
      Tensor x = ok(a) ? a : a.contiguous(), y = ok(b) ? b : b.contiguous();
      EMBER_CHECK(n < INT_MAX, "dot: vector too long for BLAS (", n, " elements)");
      blasint incx = blasint(n == 1 ? 1 : x.strides()[0]), incy = blasint(n == 1 ? 1 : y.strides()[0]);
      const T* xp = static_cast<const T*>(x.data_ptr());
      const T* yp = static_cast<const T*>(y.data_ptr());
      if constexpr (std::is_same_v<T, float>) *r = cblas_sdot(blasint(n), xp, incx, yp, incy);
      else *r = cblas_ddot(blasint(n), xp, incx, yp, incy);
    } else {
      const T* xp = static_cast<const T*>(a.data_ptr());
      const T* yp = static_cast<const T*>(b.data_ptr());
      int64_t sx = a.strides()[0], sy = b.strides()[0];
      uint64_t acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += uint64_t(int64_t(xp[i * sx])) * uint64_t(int64_t(yp[i * sy]));
      *r = T(int64_t(acc));
    }
  });
  return out;
}

EMBER_REGISTER_KERNEL(mm, CPU, mm_cpu);
EMBER_REGISTER_KERNEL(bmm, CPU, bmm_cpu);
EMBER_REGISTER_KERNEL(addmm, CPU, addmm_cpu);
EMBER_REGISTER_KERNEL(dot, CPU, dot_cpu);

}  // namespace
}  // namespace ember::cpu
