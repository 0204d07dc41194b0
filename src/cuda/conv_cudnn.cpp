// CUDA kernels of conv{2,3}d_forward, conv{2,3}d_backward_input and conv{2,3}d_backward_weight
// through cuDNN's convolution API (cudnnConvolutionForward / BackwardData / BackwardFilter), the
// twins of src/cpu/conv_kernels.cpp. Arguments arrive checked (and padding made symmetric) by
// src/nn/functional/conv.cpp; input is batched (N, C, [D,] H, W), weight (O, C / groups, [KD,] KH, KW).
//
// Descriptors: Nd tensor / filter / convolution descriptors, so 2-d (4-d tensors) and 3-d (5-d)
// share the code; every operand is made contiguous (NCHW) on the way in and outputs are made
// contiguous. Groups go to cudnnSetConvolutionGroupCount; the bias of the forward op is added
// after the convolution by ember's add_.
//
// Dtypes (as the CPU kernels, which take float32 and float64 and run float16 / bfloat16 in
// float32): float32 (FMA math, or TF32 tensor cores when torch.backends.cudnn.allow_tf32, the
// default, allows), float64 (double compute), float16 and bfloat16 (tensor-op math, float
// accumulation). Any other dtype raises the CPU kernel's error ("conv2d" not implemented for ...).
//
// Algorithms: cuDNN's heuristics (cudnnGet*Algorithm_v7), or with torch.backends.cudnn.benchmark
// the timed search (cudnnFind*AlgorithmEx); the candidates that succeed (only deterministic
// ones under torch.backends.cudnn.deterministic) are cached per (device, kind, shapes, dtype,
// params, math type, flags), so each shape is planned once. A call takes the first candidate
// whose workspace (an ember uint8 tensor from the caching allocator, on the current stream) can
// be had. Tensors with 2^31 elements or more run in batch chunks (cuDNN's legacy API indexes
// with int).
//
// Backward ops whose grad_output does not have the size the convolution formula gives (a
// transposed convolution's output_padding, or a double-backward convolution of such an output)
// run as the CPU kernels define them: a smaller grad_output is zero-padded at the end; a larger
// one needs a larger input, so the input (or the input gradient) is extended with zeros at the
// end and the gradient narrowed back.
#if EMBER_CUDNN
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/dtype_dispatch.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_state.h"
#include "cuda/cudnn_handle.h"
#include "ember/core/caching_allocator.h"
#include "ember/cudnn_flags.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

enum class Kind : int { Forward = 0, BackwardData = 1, BackwardFilter = 2 };

// Workspaces above this are not tried (heuristic mode); the timed search caps its buffer too.
constexpr size_t kMaxWorkspace = size_t(2) << 30;

// ---------------------------------------------------------------- types

void check_dtype(const char* op, DType t) {
  switch (t) {
    case DType::Float16: case DType::BFloat16: case DType::Float32: case DType::Float64: return;
    default: throw_dtype_not_implemented(op, t);
  }
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

// Accumulation: double for float64, float for everything else (float16 / bfloat16 included).
cudnnDataType_t compute_type(DType t) { return t == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT; }

cudnnMathType_t math_type(DType t) {
  switch (t) {
    case DType::Float16: case DType::BFloat16: return CUDNN_TENSOR_OP_MATH;
    case DType::Float32: return cudnn_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    default: return CUDNN_DEFAULT_MATH;
  }
}

// ---------------------------------------------------------------- descriptors

void to_int_dims(IntArrayRef sizes, int* dims) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] > 0 && sizes[i] <= INT_MAX, "cuDNN convolution: unsupported size ", sizes[i]);
    dims[i] = int(sizes[i]);
  }
}

// A cuDNN descriptor of type D owned by one call: created here, destroyed with the object.
template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)> class Desc {
 public:
  Desc() { EMBER_CUDNN_CHECK(Create(&d_)); }
  ~Desc() { Destroy(d_); }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  D get() const { return d_; }

 protected:
  D d_ = nullptr;
};

class TensorDesc : public Desc<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor> {
 public:
  // A contiguous (row-major) tensor of `sizes` (4 or 5 dims).
  void set(cudnnDataType_t dt, IntArrayRef sizes) {
    int dims[8], strides[8];
    const int n = int(sizes.size());
    to_int_dims(sizes, dims);
    int64_t s = 1;
    for (int i = n - 1; i >= 0; --i) {
      strides[i] = int(s);
      s *= sizes[size_t(i)];
    }
    EMBER_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d_, dt, n, dims, strides));
  }
};

class FilterDesc : public Desc<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor> {
 public:
  void set(cudnnDataType_t dt, IntArrayRef sizes) {
    int dims[8];
    to_int_dims(sizes, dims);
    EMBER_CUDNN_CHECK(cudnnSetFilterNdDescriptor(d_, dt, CUDNN_TENSOR_NCHW, int(sizes.size()), dims));
  }
};

class ConvDesc : public Desc<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                             cudnnDestroyConvolutionDescriptor> {
 public:
  void set(IntArrayRef padding, IntArrayRef stride, IntArrayRef dilation, int64_t groups, cudnnDataType_t compute,
           cudnnMathType_t math) {
    int pad[3], str[3], dil[3];
    const int k = int(padding.size());
    for (int i = 0; i < k; ++i) {
      EMBER_CHECK(padding[size_t(i)] <= INT_MAX && stride[size_t(i)] <= INT_MAX && dilation[size_t(i)] <= INT_MAX,
                  "cuDNN convolution: unsupported padding, stride or dilation");
      pad[i] = int(padding[size_t(i)]);
      str[i] = int(stride[size_t(i)]);
      dil[i] = int(dilation[size_t(i)]);
    }
    EMBER_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(d_, k, pad, str, dil, CUDNN_CROSS_CORRELATION, compute));
    EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d_, int(groups)));
    set_math(math);
  }
  void set_math(cudnnMathType_t math) { EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(d_, math)); }
};

// One convolution as cuDNN sees it: x (N, C, ...) the input (or the input gradient), w the
// weight (or its gradient), y (N, O, ...) the output (or grad_output).
struct Problem {
  int device = 0;
  DType dtype = DType::Float32;
  Shape x, w, y;
  Shape stride, padding, dilation;
  int64_t groups = 1;
};

struct Descs {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};

void set_descs(Descs& d, const Problem& p, cudnnMathType_t math) {
  const cudnnDataType_t dt = data_type(p.dtype);
  d.x.set(dt, p.x);
  d.y.set(dt, p.y);
  d.w.set(dt, p.w);
  d.conv.set(p.padding, p.stride, p.dilation, p.groups, compute_type(p.dtype), math);
}

// ---------------------------------------------------------------- algorithms, per kind

// A perf result of any kind.
struct Perf {
  int algo;
  cudnnStatus_t status;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t math;
};

template <class P> Perf perf_of(const P& r) { return {int(r.algo), r.status, r.memory, r.determinism, r.mathType}; }

// The results of a cuDNN algorithm query for up to n algorithms: query(results, &count) fills an
// array of the kind's perf type R (cudnnConvolution*AlgoPerf_t).
template <class R, class Query> std::vector<Perf> collect(int n, const Query& query) {
  std::vector<R> r(static_cast<size_t>(n));
  int got = 0;
  query(r.data(), &got);
  std::vector<Perf> out;
  for (int i = 0; i < got; ++i) out.push_back(perf_of(r[size_t(i)]));
  return out;
}

int max_algo_count(Kind kind, cudnnHandle_t h) {
  int n = 0;
  switch (kind) {
    case Kind::Forward: EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &n)); break;
    case Kind::BackwardData: EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &n)); break;
    case Kind::BackwardFilter: EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &n)); break;
  }
  return std::max(n, 1);
}

int algo_enum_count(Kind kind) {
  switch (kind) {
    case Kind::Forward: return int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    case Kind::BackwardData: return int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    default: return int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
  }
}

std::vector<Perf> heuristics(Kind kind, cudnnHandle_t h, const Descs& d) {
  const int n = max_algo_count(kind, h);
  switch (kind) {
    case Kind::Forward:
      return collect<cudnnConvolutionFwdAlgoPerf_t>(n, [&](auto* r, int* got) {
        EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), n,
                                                                 got, r));
      });
    case Kind::BackwardData:
      return collect<cudnnConvolutionBwdDataAlgoPerf_t>(n, [&](auto* r, int* got) {
        EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv.get(),
                                                                      d.x.get(), n, got, r));
      });
    case Kind::BackwardFilter:
      return collect<cudnnConvolutionBwdFilterAlgoPerf_t>(n, [&](auto* r, int* got) {
        EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv.get(),
                                                                        d.w.get(), n, got, r));
      });
  }
  return {};
}

// The workspace `algo` needs under the descriptor's current math type; false when cuDNN does
// not support the algorithm for this problem.
bool workspace_size(Kind kind, cudnnHandle_t h, const Descs& d, int algo, size_t* bytes) {
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  *bytes = 0;
  switch (kind) {
    case Kind::Forward:
      s = cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                  cudnnConvolutionFwdAlgo_t(algo), bytes);
      break;
    case Kind::BackwardData:
      s = cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                       cudnnConvolutionBwdDataAlgo_t(algo), bytes);
      break;
    case Kind::BackwardFilter:
      s = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                         cudnnConvolutionBwdFilterAlgo_t(algo), bytes);
      break;
  }
  return s == CUDNN_STATUS_SUCCESS;
}

// Device pointers of one call: x, w, y as in Problem.
struct Ptrs {
  void* x;
  void* w;
  void* y;
};

std::vector<Perf> find_ex(Kind kind, cudnnHandle_t h, const Descs& d, const Ptrs& p, void* ws, size_t ws_bytes) {
  const int n = max_algo_count(kind, h);
  switch (kind) {
    case Kind::Forward:
      return collect<cudnnConvolutionFwdAlgoPerf_t>(n, [&](auto* r, int* got) {
        EMBER_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, d.x.get(), p.x, d.w.get(), p.w, d.conv.get(),
                                                                 d.y.get(), p.y, n, got, r, ws, ws_bytes));
      });
    case Kind::BackwardData:
      return collect<cudnnConvolutionBwdDataAlgoPerf_t>(n, [&](auto* r, int* got) {
        EMBER_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w.get(), p.w, d.y.get(), p.y, d.conv.get(),
                                                                      d.x.get(), p.x, n, got, r, ws, ws_bytes));
      });
    case Kind::BackwardFilter:
      return collect<cudnnConvolutionBwdFilterAlgoPerf_t>(n, [&](auto* r, int* got) {
        EMBER_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x.get(), p.x, d.y.get(), p.y,
                                                                        d.conv.get(), d.w.get(), p.w, n, got, r, ws,
                                                                        ws_bytes));
      });
  }
  return {};
}

// out = alpha * conv + beta * out, alpha = 1.
void execute(Kind kind, cudnnHandle_t h, const Descs& d, const Ptrs& p, DType dtype, int algo, void* ws,
             size_t ws_bytes, bool accumulate) {
  // alpha / beta in the compute type: double for float64, float otherwise
  const double one_d = 1.0, beta_d = accumulate ? 1.0 : 0.0;
  const float one_f = 1.0f, beta_f = accumulate ? 1.0f : 0.0f;
  const bool dbl = dtype == DType::Float64;
  const void* alpha = dbl ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = dbl ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  switch (kind) {
    case Kind::Forward:
      EMBER_CUDNN_CHECK(cudnnConvolutionForward(h, alpha, d.x.get(), p.x, d.w.get(), p.w, d.conv.get(),
                                                cudnnConvolutionFwdAlgo_t(algo), ws, ws_bytes, beta, d.y.get(), p.y));
      break;
    case Kind::BackwardData:
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardData(h, alpha, d.w.get(), p.w, d.y.get(), p.y, d.conv.get(),
                                                     cudnnConvolutionBwdDataAlgo_t(algo), ws, ws_bytes, beta,
                                                     d.x.get(), p.x));
      break;
    case Kind::BackwardFilter:
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, alpha, d.x.get(), p.x, d.y.get(), p.y, d.conv.get(),
                                                       cudnnConvolutionBwdFilterAlgo_t(algo), ws, ws_bytes, beta,
                                                       d.w.get(), p.w));
      break;
  }
}

// Algorithms torch keeps out of deterministic mode even when a perf result says otherwise
// (the atomics-based ones).
bool known_nondeterministic(Kind kind, int algo) {
  if (kind == Kind::BackwardData) return algo == int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
  if (kind == Kind::BackwardFilter)
    return algo == int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0) || algo == int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
  return false;
}

// The algorithm cuDNN always has (no workspace or little), tried when no candidate is left.
int fallback_algo(Kind kind) {
  switch (kind) {
    case Kind::Forward: return int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
    case Kind::BackwardData: return int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
    default: return int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  }
}

// ---------------------------------------------------------------- the plan cache

struct Candidate {
  int algo;
  cudnnMathType_t math;
  size_t workspace;
};

struct PlanCache {
  std::mutex mu;
  std::map<std::vector<int64_t>, std::vector<Candidate>> plans;
};
PlanCache& plan_cache() {
  static auto* cache = new PlanCache;  // never destroyed (used from other threads at exit)
  return *cache;
}

std::vector<int64_t> plan_key(Kind kind, const Problem& p, cudnnMathType_t math, bool deterministic, bool benchmark) {
  std::vector<int64_t> k{int64_t(kind), p.device, int64_t(p.dtype), int64_t(math), deterministic, benchmark,
                         p.groups, int64_t(p.x.size())};
  for (const Shape* s : {&p.x, &p.w, &p.y, &p.stride, &p.padding, &p.dilation}) k.insert(k.end(), s->begin(), s->end());
  return k;
}

// A uint8 workspace of `bytes` on `device` from the caching allocator (current stream), or an
// undefined tensor when the memory is not there.
Tensor try_workspace(int device, size_t bytes) {
  if (bytes == 0) return Tensor();
  try {
    return empty({int64_t(bytes)}, {.dtype = kUInt8, .device = Device(DeviceType::CUDA, int16_t(device))});
  } catch (const OutOfMemoryError&) {
    return Tensor();
  }
}

// The candidates of a problem, best first: from the heuristics or, with benchmark, timed.
std::vector<Candidate> plan(Kind kind, const Problem& p, cudnnHandle_t h, Descs& d, const Ptrs& ptrs,
                            cudnnMathType_t math, bool deterministic, bool benchmark) {
  std::vector<Perf> perfs;
  if (benchmark) {
    // a buffer as large as the hungriest algorithm wants (within the cap), or the largest that can be had
    std::vector<size_t> sizes{0};
    for (int a = 0; a < algo_enum_count(kind); ++a) {
      size_t b = 0;
      if (workspace_size(kind, h, d, a, &b) && b <= kMaxWorkspace) sizes.push_back(b);
    }
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
    Tensor ws;
    size_t ws_bytes = 0;
    for (size_t b : sizes) {
      if (b == 0 || (ws = try_workspace(p.device, b)).defined()) {
        ws_bytes = b;
        break;
      }
    }
    // the timed runs write their output: a weight gradient may be accumulating in chunks, so
    // that one gets a scratch buffer
    Ptrs run = ptrs;
    Tensor scratch;
    if (kind == Kind::BackwardFilter) {
      scratch = empty(p.w, {.dtype = p.dtype, .device = Device(DeviceType::CUDA, int16_t(p.device))});
      run.w = scratch.data_ptr();
    }
    perfs = find_ex(kind, h, d, run, ws_bytes ? ws.data_ptr() : nullptr, ws_bytes);
  } else {
    perfs = heuristics(kind, h, d);
  }
  bool strided = false;
  for (int64_t s : p.stride) strided = strided || s > 1;
  const bool fma_only = p.dtype == DType::Float32 && !cudnn_allow_tf32();
  std::vector<Candidate> out;
  for (const Perf& r : perfs) {
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && (r.determinism != CUDNN_DETERMINISTIC || known_nondeterministic(kind, r.algo))) continue;
    // torch's blocklist: FFT data gradients with strides gave wrong results in some cuDNN versions
    if (kind == Kind::BackwardData && strided &&
        (r.algo == int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT) || r.algo == int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING)))
      continue;
    if (std::any_of(out.begin(), out.end(), [&](const Candidate& c) { return c.algo == r.algo; })) continue;
    const cudnnMathType_t m = fma_only ? CUDNN_FMA_MATH : r.math;
    d.conv.set_math(m);
    size_t bytes = 0;
    if (!workspace_size(kind, h, d, r.algo, &bytes) || bytes > kMaxWorkspace) continue;
    out.push_back({r.algo, m, bytes});
  }
  // the always-there algorithm as a last resort
  const int fb = fallback_algo(kind);
  if (std::none_of(out.begin(), out.end(), [&](const Candidate& c) { return c.algo == fb; })) {
    d.conv.set_math(math);
    size_t bytes = 0;
    if (workspace_size(kind, h, d, fb, &bytes)) out.push_back({fb, math, bytes});
  }
  return out;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Forward: return "forward";
    case Kind::BackwardData: return "backward data";
    default: return "backward filter";
  }
}

// One cuDNN call on one batch chunk (p.x[0] == p.y[0] samples).
void run_chunk(Kind kind, const Problem& p, const Ptrs& ptrs, bool accumulate) {
  cudnnHandle_t h = cudnn_handle(p.device);
  const cudnnMathType_t math = math_type(p.dtype);
  const bool deterministic = cudnn_deterministic(), benchmark = cudnn_benchmark();
  Descs d;
  set_descs(d, p, math);
  const std::vector<int64_t> key = plan_key(kind, p, math, deterministic, benchmark);
  std::vector<Candidate> cands;
  {
    PlanCache& c = plan_cache();
    std::lock_guard lock(c.mu);
    if (auto it = c.plans.find(key); it != c.plans.end()) cands = it->second;
  }
  if (cands.empty()) {
    cands = plan(kind, p, h, d, ptrs, math, deterministic, benchmark);
    EMBER_CHECK(!cands.empty(), "cuDNN: no convolution ", kind_name(kind), " algorithm supports this problem (input ",
                p.x, ", weight ", p.w, ", output ", p.y, ", ", scalar_type_name(p.dtype), ")");
    PlanCache& c = plan_cache();
    std::lock_guard lock(c.mu);
    c.plans.emplace(key, cands);
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    const Candidate& c = cands[i];
    Tensor ws;
    if (c.workspace) {
      ws = try_workspace(p.device, c.workspace);
      if (!ws.defined()) {
        if (i + 1 < cands.size()) continue;  // the next candidate may need less
        throw OutOfMemoryError(detail::cat("cuDNN convolution: cannot allocate a workspace of ", c.workspace,
                                           " bytes for any algorithm"));
      }
    }
    d.conv.set_math(c.math);
    execute(kind, h, d, ptrs, p.dtype, c.algo, ws.defined() ? ws.data_ptr() : nullptr, c.workspace, accumulate);
    return;  // the workspace goes back to the cache, stream-ordered, while the call is queued
  }
}

int64_t numel_of(IntArrayRef s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// Runs the convolution over the batch, in chunks where a tensor would reach 2^31 elements.
// Pointers are to the whole (contiguous) x, w, y. For the weight gradient, chunks accumulate.
void convolve(Kind kind, const Problem& p, const Ptrs& ptrs) {
  const int64_t N = p.x[0];
  const int64_t per_x = numel_of(p.x) / std::max<int64_t>(N, 1), per_y = numel_of(p.y) / std::max<int64_t>(N, 1);
  EMBER_CHECK(numel_of(p.w) <= INT_MAX && per_x <= INT_MAX && per_y <= INT_MAX,
              "cuDNN convolution: a weight or a single sample with 2^31 elements or more is not supported");
  const int64_t chunk = std::max<int64_t>(1, std::min({N, int64_t(INT_MAX) / per_x, int64_t(INT_MAX) / per_y}));
  const int64_t es = element_size(p.dtype);
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nb = std::min(chunk, N - n0);
    Problem q = p;
    q.x[0] = nb;
    q.y[0] = nb;
    Ptrs c = ptrs;
    c.x = static_cast<char*>(ptrs.x) + n0 * per_x * es;
    c.y = static_cast<char*>(ptrs.y) + n0 * per_y * es;
    run_chunk(kind, q, c, kind == Kind::BackwardFilter && n0 > 0);
  }
}

// ---------------------------------------------------------------- tensors

bool aligned(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

// Contiguous and 16-byte aligned (a view at an odd offset is copied).
Tensor prepared(const Tensor& t) {
  Tensor c = t.contiguous();
  if (aligned(c)) return c;
  Tensor fresh = empty(c.sizes(), c.options());
  fresh.copy_(c);
  return fresh;
}

// `t` zero-extended at the end of its spatial dims to `sizes` (its own where equal).
Tensor zero_extended(const Tensor& t, IntArrayRef sizes) {
  if (IntArrayRef(t.sizes()) == sizes) return t;
  Tensor z = zeros(sizes, t.options());
  Tensor v = z;
  for (int64_t d = 2; d < t.dim(); ++d) v = v.narrow(d, 0, t.sizes()[size_t(d)]);
  v.copy_(t);
  return z;
}

// floor((a) / b) for b > 0
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The convolution formula's output size of one spatial dim.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return floor_div(in + 2 * p - d * (k - 1) - 1, s) + 1;
}

void check_devices(const char* what, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.device() == b.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              a.device().str(), " and ", b.device().str(), "! (when checking argument for ", what, ")");
}

// For a backward op: the input size `in` (N, C, spatial...) and grad_output size `gy` as cuDNN
// needs them (see the file comment): `in_ext` >= in, `gy_ext` >= gy, consistent with the formula.
void consistent_sizes(IntArrayRef in, IntArrayRef wt, IntArrayRef gy, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation, Shape& in_ext, Shape& gy_ext) {
  in_ext.assign(in.begin(), in.end());
  gy_ext.assign(gy.begin(), gy.end());
  for (size_t i = 2; i < in.size(); ++i) {
    const size_t j = i - 2;
    const int64_t f = out_size(in[i], wt[i], stride[j], padding[j], dilation[j]);
    if (gy[i] > f) {
      in_ext[i] = (gy[i] - 1) * stride[j] + dilation[j] * (wt[i] - 1) + 1 - 2 * padding[j];
    } else {
      gy_ext[i] = f;
    }
  }
}

// ---------------------------------------------------------------- the ops

Tensor conv_forward_cuda(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_dtype("conv2d", input.dtype());
  check_devices("conv2d", input, weight);
  const bool has_bias = bias && bias->defined();
  if (has_bias) check_devices("conv2d", input, *bias);
  const int device = input.device().index;
  GpuGuard guard(device);
  Shape out_shape{input.sizes()[0], weight.sizes()[0]};
  for (size_t i = 2; i < size_t(input.dim()); ++i)
    out_shape.push_back(out_size(input.sizes()[i], weight.sizes()[i], stride[i - 2], padding[i - 2], dilation[i - 2]));
  Shape bias_shape(size_t(input.dim()), 1);
  bias_shape[1] = weight.sizes()[0];
  if (numel_of(out_shape) == 0) return empty(out_shape, input.options());
  if (input.numel() == 0 || weight.numel() == 0) {  // no channels, or only padding: bias alone
    Tensor out = zeros(out_shape, input.options());
    if (has_bias) out.add_(bias->reshape(bias_shape));
    return out;
  }
  Tensor out = empty(out_shape, input.options());
  Tensor x = prepared(input), w = prepared(weight);
  Problem p{device, input.dtype(), x.sizes(), w.sizes(), out_shape,
            Shape(stride.begin(), stride.end()), Shape(padding.begin(), padding.end()),
            Shape(dilation.begin(), dilation.end()), groups};
  convolve(Kind::Forward, p, {x.data_ptr(), w.data_ptr(), out.data_ptr()});
  if (has_bias) out.add_(bias->reshape(bias_shape));
  return out;
}

Tensor conv_backward_input_cuda(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size,
                                IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_dtype("conv2d_backward_input", grad_out.dtype());
  check_devices("conv2d_backward_input", grad_out, weight);
  const int device = grad_out.device().index;
  GpuGuard guard(device);
  if (numel_of(input_size) == 0 || grad_out.numel() == 0 || weight.numel() == 0)
    return zeros(input_size, grad_out.options());
  Shape in_ext, gy_ext;
  consistent_sizes(input_size, weight.sizes(), grad_out.sizes(), stride, padding, dilation, in_ext, gy_ext);
  Tensor gy = prepared(zero_extended(grad_out, gy_ext)), w = prepared(weight);
  Tensor dx = empty(in_ext, grad_out.options());
  Problem p{device, grad_out.dtype(), in_ext, w.sizes(), gy_ext,
            Shape(stride.begin(), stride.end()), Shape(padding.begin(), padding.end()),
            Shape(dilation.begin(), dilation.end()), groups};
  convolve(Kind::BackwardData, p, {dx.data_ptr(), w.data_ptr(), gy.data_ptr()});
  if (IntArrayRef(in_ext) == input_size) return dx;
  Tensor v = dx;
  for (size_t d = 2; d < input_size.size(); ++d) v = v.narrow(int64_t(d), 0, input_size[d]);
  return v.contiguous();
}

Tensor conv_backward_weight_cuda(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size,
                                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  check_dtype("conv2d_backward_weight", grad_out.dtype());
  check_devices("conv2d_backward_weight", grad_out, input);
  const int device = grad_out.device().index;
  GpuGuard guard(device);
  if (numel_of(weight_size) == 0 || grad_out.numel() == 0 || input.numel() == 0)
    return zeros(weight_size, grad_out.options());
  Shape in_ext, gy_ext;
  consistent_sizes(input.sizes(), weight_size, grad_out.sizes(), stride, padding, dilation, in_ext, gy_ext);
  Tensor gy = prepared(zero_extended(grad_out, gy_ext)), x = prepared(zero_extended(input, in_ext));
  Tensor dw = empty(weight_size, grad_out.options());
  Problem p{device, grad_out.dtype(), in_ext, Shape(weight_size.begin(), weight_size.end()), gy_ext,
            Shape(stride.begin(), stride.end()), Shape(padding.begin(), padding.end()),
            Shape(dilation.begin(), dilation.end()), groups};
  convolve(Kind::BackwardFilter, p, {x.data_ptr(), dw.data_ptr(), gy.data_ptr()});
  return dw;
}

EMBER_REGISTER_KERNEL(conv2d_forward, CUDA, conv_forward_cuda);
EMBER_REGISTER_KERNEL(conv2d_backward_input, CUDA, conv_backward_input_cuda);
EMBER_REGISTER_KERNEL(conv2d_backward_weight, CUDA, conv_backward_weight_cuda);
EMBER_REGISTER_KERNEL(conv3d_forward, CUDA, conv_forward_cuda);
EMBER_REGISTER_KERNEL(conv3d_backward_input, CUDA, conv_backward_input_cuda);
EMBER_REGISTER_KERNEL(conv3d_backward_weight, CUDA, conv_backward_weight_cuda);

}  // namespace
}  // namespace ember::cuda
#endif  // EMBER_CUDNN
