// bfloat16 matmul on oneDNN: see dnnl_matmul.h.
//
// Layouts. oneDNN 2.6's AMX kernel (brg:avx512_core_amx_bf16) takes each matrix dense, row-major
// (ab) or column-major (ba: a t() view), a batch stride of rows * cols, and an operand of batch 1
// broadcast over the other's batch (so an expanded batch, stride 0, costs nothing). A matrix
// whose leading dimension exceeds its width (a slice) can be described too, but oneDNN then
// runs its gemm:jit kernel, slower than copying the slice dense first (64^3: 11.2 against
// 2.6 us; 1024^3: 1.41 against 1.10 ms), so such operands, and any other strides, are copied.
//
// Threads, the discipline of blas_kernels.cpp and gemm.h: a product too small to share runs on
// one thread; a batch of matrices is cut into sub-batches and a single medium matrix into row
// blocks, one single-threaded primitive call per chunk of ember's pool; only products from
// 512^3 multiply-adds on are threaded by oneDNN itself (its OpenMP team). The two never nest: a
// chunk runs with OpenMP's thread count 1, and the primitives it calls were created for one
// thread (dnnl_primitives.h). Alone, oneDNN's team is a little faster on medium products (it
// does not pack B once per row block: 64x784 @ 784x512 45 against 55 us), but an OpenMP team
// spinning after its region fights ember's pool for the cores in whatever op comes next: a
// bfloat16 linear layer (64x512 -> 512) ran forward and backward in 0.32 ms as here, 0.52 ms
// with every product on one thread and 0.86 ms with oneDNN threading those from 2 * 128^3 on.
#include "cpu/dnnl_matmul.h"

#if EMBER_HAVE_DNNL
#include <algorithm>
#include <bit>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/parallel.h"
#include "cpu/dnnl_primitives.h"
#include "ember/ops.h"
#endif

namespace ember::cpu::dnnl_matmul {

#if !EMBER_HAVE_DNNL

bool gemm_into(Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&) { return false; }
bool linear_into(Tensor&, const Tensor&, const Tensor&, const Tensor&) { return false; }

#else

namespace {

using dnnl::memory;
using Dims = memory::dims;
namespace prims = dnnl_primitives;

// Multiply-adds (the batch included) below which the float32 path (convert, sgemm, convert
// back) is faster: a call here costs 1.7 us however small, the float32 path 1.1 us at 1^3,
// 1.6 at 16^3, 2.2 at 32^3 (here 2.3) and 3.5 at 48^3 (here 3.3; 64^3: 5.7 against 2.8).
constexpr int64_t kMinWork = 40 * 40 * 40;
// Threads by multiply-adds (the batch included). Below kThreadsMinWork one thread does the
// product (128^3: 7.4 us alone, 7.6 in two row blocks); up to kLibraryThreadsWork it is cut into
// sub-batches or row blocks on ember's pool; from there on oneDNN threads it.
constexpr int64_t kThreadsMinWork = 2 * 128 * 128 * 128;
constexpr int64_t kLibraryThreadsWork = int64_t(512) * 512 * 512;
constexpr int64_t kMinBlockRows = 32;  // rows per block at least
constexpr int64_t kPackMinRows = 1024;  // see Call::pack_b

// A bfloat16 operand as oneDNN reads it: `batch` matrices (1: broadcast) of rows x cols, dense,
// row- or column-major, one after another.
struct Operand {
  Tensor hold;  // what data points into (a dense copy when one was needed)
  const char* data = nullptr;
  int64_t batch = 1, rows = 0, cols = 0;
  bool col_major = false;
  // the elements from the start of the data to batch entry b
  int64_t offset(int64_t b) const { return batch > 1 ? b * rows * cols : 0; }
};

bool dense_row_major(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (cols == 1 || cs == 1) && (rows == 1 || rs == cols);
}
bool dense_col_major(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (rows == 1 || rs == 1) && (cols == 1 || cs == rows);
}

Operand operand_of(const Tensor& t, int64_t rows, int64_t cols) {
  Operand op;
  op.rows = rows;
  op.cols = cols;
  Tensor m = t;
  if (t.dim() == 3) {
    // one matrix repeated (expanded, stride 0) is passed once and broadcast by oneDNN
    if (t.sizes()[0] == 1 || t.strides()[0] == 0) m = t.select(0, 0);
    else op.batch = t.sizes()[0];
  }
  auto describable = [&](const Tensor& x, bool& col_major) {
    const int64_t d = x.dim(), rs = x.strides()[d - 2], cs = x.strides()[d - 1];
    if (d == 3 && x.strides()[0] != rows * cols) return false;
    col_major = !dense_row_major(rows, cols, rs, cs);
    return !col_major || dense_col_major(rows, cols, rs, cs);
  };
  if (!describable(m, op.col_major)) {
    m = m.contiguous();
    op.col_major = false;
  }
  op.hold = m;
  op.data = static_cast<const char*>(m.data_ptr());
  return op;
}

// One primitive call: (batch_a, M, K) @ (batch_b, K, N) -> (batch, M, N), + a bias row of N,
// alpha scaling the product and beta the old output (oneDNN's output scale and sum post-op).
// With pack_b, B is first reordered into the blocked layout oneDNN's kernel reads best: its
// kernel on a plain B copies panels of B again for every block of rows it computes; the
// reorder copies B once. It pays from 1024 rows on, products oneDNN threads (2048^3: 9.7
// against 12.0 ms; 8192x768 @ 768x768: 4.0 against 4.6 ms; 1024^3 and fewer rows: no gain).
struct Call {
  int64_t batch = 1, batch_a = 1, batch_b = 1, M = 0, N = 0, K = 0;
  bool a_col_major = false, b_col_major = false, bias = false, pack_b = false;
  float alpha = 1, beta = 0;

  std::vector<int64_t> key() const {
    return {prims::creation_threads(), batch, batch_a, batch_b, M, N, K, a_col_major, b_col_major, bias, pack_b,
            std::bit_cast<int32_t>(alpha), std::bit_cast<int32_t>(beta)};
  }
};

// A call of batch 1 is described in 2-d: oneDNN picks a blocked layout for B (pack_b) only then.
memory::desc matrices(const Call& c, int64_t batch, int64_t rows, int64_t cols, bool col_major) {
  const Dims strides = col_major ? Dims{1, rows} : Dims{cols, 1};
  if (c.batch == 1) return memory::desc({rows, cols}, memory::data_type::bf16, strides);
  return memory::desc({batch, rows, cols}, memory::data_type::bf16, {rows * cols, strides[0], strides[1]});
}

struct Entry {
  dnnl::matmul prim;
  memory::desc a, b, c, bias, scratch;
  memory::desc packed_b;               // the layout prim reads B in, when it is not b
  std::optional<dnnl::reorder> pack;  // b -> packed_b
};

// The primitive for c, or null when oneDNN declines it or offers only its reference kernels
// (slower than the float32 path by far).
std::shared_ptr<const Entry> create(const Call& c) {
  try {
    auto e = std::make_shared<Entry>();
    e->a = matrices(c, c.batch_a, c.M, c.K, c.a_col_major);
    e->b = matrices(c, c.batch_b, c.K, c.N, c.b_col_major);
    e->c = matrices(c, c.batch, c.M, c.N, false);
    if (c.bias) e->bias = matrices(c, 1, 1, c.N, false);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (c.alpha != 1.0f) attr.set_output_scales(0, {c.alpha});
    if (c.beta != 0.0f) {
      dnnl::post_ops sum;
      sum.append_sum(c.beta);
      attr.set_post_ops(sum);
    }
    const memory::desc wanted_b =
        c.pack_b ? memory::desc(e->b.dims(), memory::data_type::bf16, memory::format_tag::any) : e->b;
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a, wanted_b, e->bias, e->c), attr, prims::cpu_engine());
    if (std::string_view(pd.impl_info_str()).starts_with("ref")) return nullptr;
    e->prim = dnnl::matmul(pd);
    e->scratch = pd.scratchpad_desc();
    if (pd.weights_desc() != e->b) {
      e->packed_b = pd.weights_desc();
      dnnl::engine& eng = prims::cpu_engine();
      e->pack = dnnl::reorder(dnnl::reorder::primitive_desc(eng, e->b, eng, e->packed_b));
    }
    return e;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::shared_ptr<const Entry> entry(const Call& c) {
  static auto* cache = new prims::PrimitiveCache<Entry>(256);  // never destroyed: used until exit
  return cache->get(c.key(), [&] { return create(c); });
}

void execute(const Entry& e, const char* a, const char* b, char* c, const void* bias) {
  dnnl::engine& eng = prims::cpu_engine();
  dnnl::stream stream(eng);
  const prims::CallBuffers buffers({e.scratch.get_size(), e.pack ? e.packed_b.get_size() : 0});
  memory weights(e.b, eng, const_cast<char*>(b));
  if (e.pack) {
    memory plain = weights;
    weights = memory(e.packed_b, eng, buffers[1]);
    e.pack->execute(stream, plain, weights);
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(e.a, eng, const_cast<char*>(a))},
                                       {DNNL_ARG_WEIGHTS, weights},
                                       {DNNL_ARG_DST, memory(e.c, eng, c)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(e.bias, eng, const_cast<void*>(bias)));
  if (e.scratch.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, memory(e.scratch, eng, buffers[0]));
  e.prim.execute(stream, args);
  stream.wait();
}

// A part of the product run as one primitive call: batch entries [b0, b1), rows [r0, r1).
struct Piece {
  int64_t b0, b1, r0, r1;
};

// Cuts the product into sub-batches or row blocks (when A is row-major: a row block of a
// column-major A is not dense) for ember's pool; one piece with library_threads set means
// oneDNN threads it.
std::vector<Piece> plan(int64_t batch, int64_t M, int64_t work_per_matrix, bool rows_splittable,
                        bool& library_threads) {
  const int64_t threads = ember::detail::max_parallel_threads();
  library_threads = false;
  if (threads <= 1 || batch * work_per_matrix < kThreadsMinWork) return {{0, batch, 0, M}};
  // A batch is split by matrix, unless its matrices are large and too few to share out evenly:
  // one fork per call instead of one per matrix, as for float32.
  if (batch > 1 && (work_per_matrix < kLibraryThreadsWork || batch >= 2 * threads)) {
    const int64_t chunks = std::min(threads, batch), per = (batch + chunks - 1) / chunks;
    std::vector<Piece> pieces;
    for (int64_t b = 0; b < batch; b += per) pieces.push_back({b, std::min(batch, b + per), 0, M});
    return pieces;
  }
  if (batch * work_per_matrix >= kLibraryThreadsWork) {
    library_threads = true;
    return {{0, batch, 0, M}};
  }
  if (!rows_splittable || M < 2 * kMinBlockRows) return {{0, batch, 0, M}};
  const int64_t blocks = std::min(threads, M / kMinBlockRows), per = (M + blocks - 1) / blocks;
  std::vector<Piece> pieces;
  for (int64_t r = 0; r < M; r += per) pieces.push_back({0, 1, r, std::min(M, r + per)});
  return pieces;
}

// Runs fn() as the one chunk of a pool loop: on this thread, with OpenMP's thread count 1.
template <class F> void on_one_thread(const F& fn) {
  parallel_chunks(1, [&](int64_t, int64_t) { fn(); });
}

bool run(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta, const Tensor* bias) {
  if (out.dtype() != kBFloat16 || a.dtype() != kBFloat16 || b.dtype() != kBFloat16) return false;
  if (bias && bias->dtype() != kBFloat16) return false;
  const int64_t d = a.dim(), batch = d == 3 ? a.sizes()[0] : 1;
  const int64_t M = a.sizes()[d - 2], K = a.sizes()[d - 1], N = b.sizes()[d - 1];
  if (batch == 0 || M == 0 || N == 0 || K == 0 || batch * M * N * K < kMinWork || !prims::native_bf16()) return false;

  Operand A = operand_of(a, M, K), B = operand_of(b, K, N);
  // oneDNN broadcasts one operand's batch, not both: give one of them its whole batch
  if (batch > 1 && A.batch == 1 && B.batch == 1) A = operand_of(a.contiguous(), M, K);
  Tensor bias_row = bias ? bias->contiguous() : Tensor();

  Call whole;
  whole.batch = batch;
  whole.batch_a = A.batch;
  whole.batch_b = B.batch;
  whole.M = M;
  whole.N = N;
  whole.K = K;
  whole.a_col_major = A.col_major;
  whole.b_col_major = B.col_major;
  whole.bias = bias != nullptr;
  whole.alpha = float(alpha.to_double());
  whole.beta = float(beta.to_double());

  bool library_threads = false;
  const std::vector<Piece> pieces = plan(batch, M, M * N * K, !A.col_major, library_threads);
  whole.pack_b = library_threads && batch == 1 && M >= kPackMinRows;
  auto call_of = [&](const Piece& p) {
    Call c = whole;
    c.batch = p.b1 - p.b0;
    c.batch_a = A.batch > 1 ? c.batch : 1;
    c.batch_b = B.batch > 1 ? c.batch : 1;
    c.M = p.r1 - p.r0;
    return c;
  };
  // Every piece but the last has the same shape: at most two primitives, made here, where a
  // decline can still hand the product to the float32 path.
  std::shared_ptr<const Entry> first, last;
  auto make = [&] {
    first = entry(call_of(pieces.front()));
    last = pieces.size() > 1 ? entry(call_of(pieces.back())) : first;
  };
  if (library_threads) make();
  else on_one_thread(make);
  if (!first || !last) return false;

  const char* a_data = A.data;
  const char* b_data = B.data;
  char* c_data = static_cast<char*>(out.data_ptr());
  const void* bias_data = bias ? bias_row.data_ptr() : nullptr;
  constexpr int64_t kElem = 2;  // bytes of a bfloat16
  auto run_piece = [&](size_t i) {
    const Piece& p = pieces[i];
    const Entry& e = i + 1 == pieces.size() ? *last : *first;
    execute(e, a_data + (A.offset(p.b0) + p.r0 * K) * kElem, b_data + B.offset(p.b0) * kElem,
            c_data + (p.b0 * M + p.r0) * N * kElem, bias_data);
  };
  try {
    if (library_threads) run_piece(0);
    else parallel_chunks(int64_t(pieces.size()), [&](int64_t i, int64_t) { run_piece(size_t(i)); });
  } catch (const dnnl::error& err) {
    throw Error(detail::cat("matmul: oneDNN failed for bfloat16 (batch=", batch, ", M=", M, ", N=", N, ", K=", K,
                            "): ", err.what()));
  }
  return true;
}

}  // namespace

bool gemm_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  return run(out, a, b, alpha, beta, nullptr);
}

bool linear_into(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  if (a.dim() != 2 || bias.dim() != 1 || bias.sizes()[0] != b.sizes()[1]) return false;
  return run(out, a, b, 1, 0, &bias);
}

#endif

}  // namespace ember::cpu::dnnl_matmul
