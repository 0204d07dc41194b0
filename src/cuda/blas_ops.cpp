// CUDA kernels of mm, bmm, addmm and dot through cuBLAS (and cuBLASLt for addmm's bias), the
// twins of src/cpu/blas_kernels.cpp. Arguments arrive checked by src/ops/linalg.cpp (shapes,
// equal dtypes, one device); matmul, linear, baddbmm, mv, addmv, inner and einsum reach these
// four ops from there.
//
// Layout: cuBLAS is column-major, and a row-major contiguous C (M x N) is, read column-major,
// C^T (N x M). So every product is computed as C^T = B^T A^T: cuBLAS's "A" is our b, its "B"
// our a, m = N, n = M, and C needs no transpose. An operand whose last stride is 1 (row-major,
// leading dimension = row stride) or whose second-to-last stride is 1 (column-major, e.g. t())
// is passed as it is, with the transpose flag and leading dimension set; anything else (an
// expanded row, a doubly strided slice) is made contiguous first. Batches go to the strided
// batched call with each operand's own batch stride (0 for an expanded batch). The 64-bit
// cuBLAS API (*_64) takes every size, stride and batch count as they are.
//
// Dtypes: float32 (FP32, or TF32 tensor cores when torch.backends.cuda.matmul.allow_tf32 /
// set_float32_matmul_precision("high"|"medium") allows: ember/matmul_precision.h), float64,
// float16 and bfloat16 (float32 accumulation, CUBLAS_COMPUTE_32F), complex64 and complex128.
// Integer and bool products raise torch's CUDA errors ("addmm_cuda" for mm and addmm,
// "baddbmm_cuda" for bmm, "dot"), after the empty-result and K == 0 cases that torch answers
// without a kernel, in torch's order.
//
// addmm with beta == 1 and a contiguous 1-D (N) or (1, N) bias (nn.Linear's case) runs as one
// cuBLASLt matmul with the bias epilogue (the bias added in the GEMM's epilogue, no copy of it
// into the output first), for float32/float16/bfloat16 with M, N, K > 1 (torch's conditions);
// otherwise, and whenever cuBLASLt offers no algorithm, the bias is copied (broadcast) into the
// output and the GEMM accumulates onto it with beta.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <complex>
#include <memory>

#include "core/dtype_dispatch.h"
#include "cuda/cublas_handle.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_state.h"
#include "ember/matmul_precision.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

bool gemm_dtype(DType t) {
  switch (t) {
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64:
    case DType::Complex64: case DType::Complex128: return true;
    default: return false;
  }
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::Float16: return CUDA_R_16F;
    case DType::BFloat16: return CUDA_R_16BF;
    case DType::Float32: return CUDA_R_32F;
    case DType::Float64: return CUDA_R_64F;
    case DType::Complex64: return CUDA_C_32F;
    default: return CUDA_C_64F;
  }
}

bool tf32_allowed(DType t) { return (t == DType::Float32 || t == DType::Complex64) && allow_tf32_matmul(); }

// The compute type: float32 accumulation for every single-precision and 16-bit type (TF32
// products when allowed), float64 for the double types.
cublasComputeType_t compute_type(DType t) {
  if (t == DType::Float64 || t == DType::Complex128) return CUBLAS_COMPUTE_64F;
  return tf32_allowed(t) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// alpha / beta in the compute type's scale type (float, double, cuComplex, cuDoubleComplex),
// read by cuBLAS from host memory.
struct ScaleValue {
  union {
    float f;
    double d;
    float cf[2];
    double cd[2];
  };
  ScaleValue(DType t, const Scalar& s) : cd{0, 0} {
    const std::complex<double> v = s.to_complex();
    switch (t) {
      case DType::Float64: d = v.real(); break;
      case DType::Complex64: cf[0] = float(v.real()); cf[1] = float(v.imag()); break;
      case DType::Complex128: cd[0] = v.real(); cd[1] = v.imag(); break;
      default: f = float(v.real()); break;
    }
  }
  const void* ptr() const { return this; }
};

bool is_zero(const Scalar& s) { return s.to_complex() == std::complex<double>(0, 0); }
bool is_one(const Scalar& s) { return s.to_complex() == std::complex<double>(1, 0); }

// How cuBLAS can read a rows x cols matrix with element strides (rs, cs), as
// cpu/blas_kernels.cpp's blas_layout: row-major (ld = rs) or column-major (transposed, ld = cs);
// the strides of size-1 dims do not matter.
struct Layout {
  bool ok = false;
  bool col_major = false;
  int64_t ld = 0;
};
Layout layout_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(1, cols)))
    return {true, false, rows <= 1 ? std::max<int64_t>(1, cols) : rs};
  if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(1, rows)))
    return {true, true, cols <= 1 ? std::max<int64_t>(1, rows) : cs};
  return {};
}

// One operand as cuBLAS reads it in the C^T = B^T A^T form: its memory read column-major is the
// operand's transpose when it is row-major (so no transpose flag), the operand itself when it is
// column-major (transpose flag set).
struct Operand {
  Tensor hold;  // the tensor the pointer points into (a contiguous copy when one was needed)
  const void* data = nullptr;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
  int64_t batch_stride = 0;  // elements
};
Operand operand_of(const Tensor& t, int64_t rows, int64_t cols) {
  Operand o;
  o.hold = t;
  const int64_t d = t.dim();
  Layout l = layout_of(rows, cols, t.strides()[size_t(d - 2)], t.strides()[size_t(d - 1)]);
  if (!l.ok) {
    o.hold = t.contiguous();
    l = layout_of(rows, cols, o.hold.strides()[size_t(d - 2)], o.hold.strides()[size_t(d - 1)]);
    EMBER_CHECK(l.ok, "matmul: cannot describe a ", rows, "x", cols, " matrix to cuBLAS");
  }
  o.data = o.hold.data_ptr();
  o.op = l.col_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  o.ld = l.ld;
  o.batch_stride = d == 3 ? o.hold.strides()[0] : 0;
  return o;
}

void zero_fill(Tensor& out) {
  if (out.numel() == 0) return;
  EMBER_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, size_t(out.numel()) * element_size(out.dtype()),
                                   current_cuda_stream(out.device().index)));
}

// ---------------------------------------------------------------- padded products
// cuBLAS picks its Hopper kernels (TMA, wgmma) only for products whose sizes are multiples of 8
// and whose leading dimensions and pointers are 16-byte aligned; otherwise it falls back to
// kernels of older GPUs that run 3-5 times slower. A GPT-2's vocabulary of 50257 makes all three
// lm_head GEMMs of a train step such products: 15.5 of torch's 39 ms on an H200 went to sm75
// kernels (measured in both frameworks). Large products of that kind therefore run on padded
// copies (nanoGPT pads the vocabulary to 50304 by hand for the same reason): a size that is not a
// multiple of 8 is rounded up to a multiple of 64, the padding of the reduced dimension K is
// zeros (so the sum is unchanged) and the padded rows and columns of the result are dropped.
// The copies are 2-D memcpys on the stream, one pass over each matrix.
constexpr double kPadMinFlops = 2e9;

int64_t padded_size(int64_t d) { return d % 8 == 0 ? d : (d + 63) / 64 * 64; }
bool well_shaped(const Operand& o, int64_t rows, int64_t cols, int64_t esize) {
  return rows % 8 == 0 && cols % 8 == 0 && (o.ld * esize) % 16 == 0 && reinterpret_cast<uintptr_t>(o.data) % 16 == 0;
}

// The rows x cols operand o copied into a zeroed (rows_p x cols_p) buffer in its own memory
// order (a transposed view stays transposed, so the copy reads and writes in order).
Operand padded_operand(const Operand& o, int64_t rows, int64_t cols, int64_t rows_p, int64_t cols_p, DType dt,
                       Device device, cudaStream_t stream) {
  const int64_t e = element_size(dt);
  // In memory: `outer` lines of `inner` values, o.ld apart.
  const bool col_major = o.op == CUBLAS_OP_T;
  const int64_t outer = col_major ? cols : rows, inner = col_major ? rows : cols;
  const int64_t outer_p = col_major ? cols_p : rows_p, inner_p = col_major ? rows_p : cols_p;
  Operand p;
  p.hold = empty({outer_p, inner_p}, {.dtype = dt, .device = device});
  char* dst = static_cast<char*>(p.hold.data_ptr());
  EMBER_CUDA_CHECK(cudaMemcpy2DAsync(dst, size_t(inner_p * e), o.data, size_t(o.ld * e), size_t(inner * e),
                                     size_t(outer), cudaMemcpyDeviceToDevice, stream));
  if (inner_p > inner)
    EMBER_CUDA_CHECK(cudaMemset2DAsync(dst + inner * e, size_t(inner_p * e), 0, size_t((inner_p - inner) * e),
                                       size_t(outer), stream));
  if (outer_p > outer)
    EMBER_CUDA_CHECK(cudaMemsetAsync(dst + outer * inner_p * e, 0, size_t((outer_p - outer) * inner_p * e), stream));
  p.data = dst;
  p.op = o.op;
  p.ld = inner_p;
  return p;
}

// The product on cuBLAS: c (ldc) = alpha * a @ b + beta * c, one matrix.
void gemm_2d(void* c, int64_t ldc, const Operand& oa, const Operand& ob, int64_t M, int64_t N, int64_t K, DType dt,
             const Scalar& alpha, const Scalar& beta, int device) {
  const ScaleValue al(dt, alpha), be(dt, beta);
  const cudaDataType_t type = cuda_type(dt);
  BlasSession s(device);
  EMBER_CUBLAS_CHECK(cublasGemmEx_64(s.handle(), ob.op, oa.op, N, M, K, al.ptr(), ob.data, type, ob.ld, oa.data, type,
                                     oa.ld, be.ptr(), c, type, ldc, compute_type(dt), CUBLAS_GEMM_DEFAULT));
}

// out (contiguous (M, N) or (B, M, N), on the current device) = alpha * a @ b + beta * out, with
// M, N, K > 0 and B > 0; beta == 0 ignores out's contents (NaN included), as cuBLAS's.
void gemm(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta, const char* name) {
  const DType dt = out.dtype();
  if (!gemm_dtype(dt)) throw_dtype_not_implemented(name, dt);
  const bool batched = a.dim() == 3;
  const int64_t batch = batched ? a.sizes()[0] : 1;
  const int64_t M = a.sizes()[size_t(a.dim() - 2)], K = a.sizes()[size_t(a.dim() - 1)], N = b.sizes()[size_t(b.dim() - 1)];
  Operand oa = operand_of(a, M, K), ob = operand_of(b, K, N);
  const int device = out.device().index;
  if (!batched) {
    const int64_t e = element_size(dt);
    const bool big = 2.0 * double(M) * double(N) * double(K) >= kPadMinFlops;
    const bool real = dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16;
    if (big && real && (!well_shaped(oa, M, K, e) || !well_shaped(ob, K, N, e) || N % 8 != 0)) {
      const int64_t Mp = padded_size(M), Np = padded_size(N), Kp = padded_size(K);
      cudaStream_t stream = current_cuda_stream(device);
      GpuGuard guard(device);
      // (a padded K needs zeros in both operands; an operand already in shape is used in place)
      if (!well_shaped(oa, M, K, e) || Mp != M || Kp != K) oa = padded_operand(oa, M, K, Mp, Kp, dt, out.device(), stream);
      if (!well_shaped(ob, K, N, e) || Kp != K || Np != N) ob = padded_operand(ob, K, N, Kp, Np, dt, out.device(), stream);
      if (Mp == M && Np == N) {
        gemm_2d(out.data_ptr(), N, oa, ob, M, N, Kp, dt, alpha, beta, device);
      } else {
        Tensor buf = empty({Mp, Np}, {.dtype = dt, .device = out.device()});
        if (!is_zero(beta))
          EMBER_CUDA_CHECK(cudaMemcpy2DAsync(buf.data_ptr(), size_t(Np * e), out.data_ptr(), size_t(N * e),
                                             size_t(N * e), size_t(M), cudaMemcpyDeviceToDevice, stream));
        gemm_2d(buf.data_ptr(), Np, oa, ob, Mp, Np, Kp, dt, alpha, beta, device);
        EMBER_CUDA_CHECK(cudaMemcpy2DAsync(out.data_ptr(), size_t(N * e), buf.data_ptr(), size_t(Np * e),
                                           size_t(N * e), size_t(M), cudaMemcpyDeviceToDevice, stream));
      }
      return;
    }
    gemm_2d(out.data_ptr(), N, oa, ob, M, N, K, dt, alpha, beta, device);
  } else {
    const ScaleValue al(dt, alpha), be(dt, beta);
    const cudaDataType_t type = cuda_type(dt);
    BlasSession s(device);
    EMBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(s.handle(), ob.op, oa.op, N, M, K, al.ptr(), ob.data, type, ob.ld,
                                                     ob.batch_stride, oa.data, type, oa.ld, oa.batch_stride, be.ptr(),
                                                     out.data_ptr(), type, N, M * N, batch, compute_type(dt),
                                                     CUBLAS_GEMM_DEFAULT));
  }
}

// ---------------------------------------------------------------- cuBLASLt: addmm with a bias
template <class T, cublasStatus_t (*Destroy)(T)> struct LtDeleter {
  void operator()(T p) const { (void)Destroy(p); }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                                   LtDeleter<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using LayoutDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                                   LtDeleter<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using PrefDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                                 LtDeleter<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

// The largest power of two up to 256 dividing the address (torch's _getAlignment): cuBLASLt's
// heuristic assumes 256-byte aligned operands unless told.
uint32_t alignment_of(const void* p) {
  uint32_t a = 256;
  while (reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

// A bias cuBLASLt's epilogue can add to every row of the (M, N) result: N contiguous values.
bool lt_bias(const Tensor& self, int64_t N) {
  if (self.dim() == 1) return self.sizes()[0] == N && (N == 1 || self.strides()[0] == 1);
  if (self.dim() == 2) return self.sizes()[0] == 1 && self.sizes()[1] == N && (N == 1 || self.strides()[1] == 1);
  return false;
}

// out = bias + alpha * m1 @ m2 as one cuBLASLt matmul with the bias epilogue; false (nothing
// done) when cuBLASLt offers no algorithm for it.
bool addmm_bias_lt(Tensor& out, const Tensor& bias, const Tensor& m1, const Tensor& m2, const Scalar& alpha) {
  const DType dt = out.dtype();
  const int64_t M = m1.sizes()[0], K = m1.sizes()[1], N = m2.sizes()[1];
  const Operand oa = operand_of(m1, M, K), ob = operand_of(m2, K, N);
  const cudaDataType_t type = cuda_type(dt);
  const cudaDataType_t scale_type = CUDA_R_32F;  // float32 / float16 / bfloat16 only
  const float al = float(alpha.to_double()), be = 0.0f;
  const void* bias_ptr = bias.data_ptr();
  // The epilogue reads the bias with vector loads: keep to 16-byte aligned ones.
  if (alignment_of(bias_ptr) < 16) return false;

  cublasLtMatmulDesc_t raw_desc = nullptr;
  EMBER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&raw_desc, compute_type(dt), scale_type));
  MatmulDesc desc(raw_desc);
  const cublasOperation_t transa = ob.op, transb = oa.op;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
  EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb)));
  EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)));

  // Column-major descriptions of what is stored: cuBLAS's A is b (N x K, or K x N transposed),
  // its B is a (K x M, or M x K transposed), C = D is the result read column-major (N x M).
  auto layout = [&](int64_t rows, int64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t l = nullptr;
    EMBER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld));
    return LayoutDesc(l);
  };
  LayoutDesc la = transa == CUBLAS_OP_N ? layout(N, K, ob.ld) : layout(K, N, ob.ld);
  LayoutDesc lb = transb == CUBLAS_OP_N ? layout(K, M, oa.ld) : layout(M, K, oa.ld);
  LayoutDesc lc = layout(N, M, N);

  BlasSession s(out.device().index);
  cublasLtMatmulPreference_t raw_pref = nullptr;
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
  PrefDesc pref(raw_pref);
  const uint64_t ws = s.workspace_bytes();
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const uint32_t align_a = alignment_of(ob.data), align_b = alignment_of(oa.data), align_c = alignment_of(out.data_ptr());
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)));
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c)));

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(s.lt(), raw_desc, la.get(), lb.get(), lc.get(), lc.get(), raw_pref,
                                                           1, &heuristic, &found);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && (found == 0 || heuristic.state != CUBLAS_STATUS_SUCCESS)))
    return false;
  EMBER_CUBLAS_CHECK(st);
  EMBER_CUBLAS_CHECK(cublasLtMatmul(s.lt(), raw_desc, &al, ob.data, la.get(), oa.data, lb.get(), &be, out.data_ptr(), lc.get(),
                                    out.data_ptr(), lc.get(), &heuristic.algo, s.workspace(), s.workspace_bytes(),
                                    s.stream()));
  return true;
}

// ---------------------------------------------------------------- the kernels
Tensor mm_cuda(const Tensor& a, const Tensor& b) {
  GpuGuard guard(a.device().index);
  Tensor out = empty({a.sizes()[0], b.sizes()[1]}, {.dtype = a.dtype(), .device = a.device()});
  if (out.numel() == 0) return out;
  if (a.sizes()[1] == 0) {  // an empty sum
    zero_fill(out);
    return out;
  }
  gemm(out, a, b, 1, 0, "addmm_cuda");
  return out;
}

Tensor bmm_cuda(const Tensor& a, const Tensor& b) {
  GpuGuard guard(a.device().index);
  Tensor out = empty({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, {.dtype = a.dtype(), .device = a.device()});
  if (out.numel() == 0) return out;
  if (a.sizes()[2] == 0) {
    zero_fill(out);
    return out;
  }
  gemm(out, a, b, 1, 0, "baddbmm_cuda");
  return out;
}

Tensor addmm_cuda(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  GpuGuard guard(m1.device().index);
  const int64_t M = m1.sizes()[0], K = m1.sizes()[1], N = m2.sizes()[1];
  Tensor out = empty({M, N}, {.dtype = m1.dtype(), .device = m1.device()});
  if (out.numel() == 0) return out;
  const DType dt = out.dtype();
  const bool lt_dtype = dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16;
  if (lt_dtype && is_one(beta) && M > 1 && N > 1 && K > 1 && lt_bias(self, N) && addmm_bias_lt(out, self, m1, m2, alpha))
    return out;
  const bool use_self = !is_zero(beta);  // beta == 0: self is not read (NaN in it does not propagate)
  if (use_self) out.copy_(self);          // broadcasts self to (M, N)
  if (K == 0) {                           // an empty sum: beta * self
    if (!use_self) zero_fill(out);
    else if (!is_one(beta)) out.mul_(beta);
    return out;
  }
  gemm(out, m1, m2, alpha, use_self ? beta : Scalar(0), "addmm_cuda");
  return out;
}

// torch.dot on CUDA: cublasDotEx (unconjugated for complex, as torch.dot), the result written
// on the device (device pointer mode), float32 accumulation for float16/bfloat16.
Tensor dot_cuda(const Tensor& a, const Tensor& b) {
  const DType dt = a.dtype();
  if (!gemm_dtype(dt)) throw_dtype_not_implemented("dot", dt);
  GpuGuard guard(a.device().index);
  Tensor out = empty({}, {.dtype = dt, .device = a.device()});
  const int64_t n = a.numel();
  if (n == 0) {
    zero_fill(out);
    return out;
  }
  // Positive increments; an expanded (stride 0) vector is made contiguous.
  auto ready = [n](const Tensor& t) { return n == 1 || t.strides()[0] > 0 ? t : t.contiguous(); };
  const Tensor x = ready(a), y = ready(b);
  const int64_t incx = n == 1 ? 1 : x.strides()[0], incy = n == 1 ? 1 : y.strides()[0];
  const cudaDataType_t type = cuda_type(dt);
  cudaDataType_t exec = type;
  if (dt == DType::Float16 || dt == DType::BFloat16) exec = CUDA_R_32F;
  BlasSession s(a.device().index, /*with_workspace=*/false);
  EMBER_CUBLAS_CHECK(cublasSetPointerMode(s.handle(), CUBLAS_POINTER_MODE_DEVICE));
  const cublasStatus_t st = cublasDotEx_64(s.handle(), n, x.data_ptr(), type, incx, y.data_ptr(), type, incy, out.data_ptr(),
                                           type, exec);
  EMBER_CUBLAS_CHECK(cublasSetPointerMode(s.handle(), CUBLAS_POINTER_MODE_HOST));  // every other call passes host scalars
  EMBER_CUBLAS_CHECK(st);
  return out;
}

EMBER_REGISTER_KERNEL(mm, CUDA, mm_cuda);
EMBER_REGISTER_KERNEL(bmm, CUDA, bmm_cuda);
EMBER_REGISTER_KERNEL(addmm, CUDA, addmm_cuda);
EMBER_REGISTER_KERNEL(dot, CUDA, dot_cuda);

}  // namespace
}  // namespace ember::cuda
