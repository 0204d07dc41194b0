// CPU kernels of the LSTM and GRU cells' pointwise steps (_lstm_cell, _gru_cell and their
// backwards; formulas in src/ops/rnn_cell.cpp): one pass over a step's gates instead of nine ops.
// The activations are the eager kernels' formulas (ops/elementwise_formulas.h with CpuMath) and this file is built
// without contraction (CMakeLists.txt), so h' (and c') have the bits the composition gives.
#include "core/parallel.h"
#include "cpu/elementwise_math.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/rnn_cell.h"

namespace ember::cpu {
namespace {

namespace f = formula;

template <class T> struct Act {
  static T sigmoid(T x) { return CpuFormula<f::sigmoid_fn>::type{}(x); }
  static T tanh(T x) { return f::tanh_fn<CpuMath>{}(x); }
};

// f<float>() or f<double>() (check_fused admits only these).
template <class F> void float_or_double(DType dt, const F& f) {
  if (dt == kFloat32) f.template operator()<float>();
  else f.template operator()<double>();
}

// Rows of a step split across threads, a few thousand elements a task.
template <class Body> void over_rows(int64_t rows, int64_t width, const Body& body) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 8 * width)), body);
}

void check_fused(const char* op, const Tensor& gates, const Tensor& c) {
  check_lstm_cell(op, gates, c);
  EMBER_CHECK(gates.dtype() == c.dtype() && (c.dtype() == kFloat32 || c.dtype() == kFloat64), op,
              ": expected float32 or float64 gates and c of one dtype, got ", dtype_name(gates.dtype()), " and ",
              dtype_name(c.dtype()));
}

// One row of a step: gates a (its four blocks H apart), c -> h', c'. (A function of its own with
// restrict parameters and its size by value: GCC vectorises this loop, not the same loop on
// block-scoped restrict pointers or a bound read through a lambda's reference.)
template <class T>
void lstm_row(const T* __restrict a, const T* __restrict c, T* __restrict h_new, T* __restrict c_new, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T i = Act<T>::sigmoid(a[j]), fg = Act<T>::sigmoid(a[H + j]), g = Act<T>::tanh(a[2 * H + j]);
    const T o = Act<T>::sigmoid(a[3 * H + j]);
    const T cv = fg * c[j] + i * g;
    c_new[j] = cv;
    h_new[j] = o * Act<T>::tanh(cv);
  }
}

template <class T>
void lstm_backward_row(const T* __restrict a, const T* __restrict c, const T* __restrict c_new, const T* __restrict gh,
                       const T* __restrict gc, T* __restrict da, T* __restrict dc_prev, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T i = Act<T>::sigmoid(a[j]), fg = Act<T>::sigmoid(a[H + j]), g = Act<T>::tanh(a[2 * H + j]);
    const T o = Act<T>::sigmoid(a[3 * H + j]), t = Act<T>::tanh(c_new[j]);
    const T dc = gc[j] + gh[j] * o * (T(1) - t * t);
    da[j] = dc * g * (i * (T(1) - i));
    da[H + j] = dc * c[j] * (fg * (T(1) - fg));
    da[2 * H + j] = dc * i * (T(1) - g * g);
    da[3 * H + j] = gh[j] * t * (o * (T(1) - o));
    dc_prev[j] = dc * fg;
  }
}

// One GRU row: input gates x and hidden gates hg (three blocks H apart each), h -> h'.
template <class T>
void gru_row(const T* __restrict x, const T* __restrict hg, const T* __restrict h, T* __restrict h_new, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T r = Act<T>::sigmoid(x[j] + hg[j]), z = Act<T>::sigmoid(x[H + j] + hg[H + j]);
    const T n = Act<T>::tanh(x[2 * H + j] + r * hg[2 * H + j]);
    h_new[j] = n + z * (h[j] - n);
  }
}

template <class T>
void gru_backward_row(const T* __restrict g, const T* __restrict x, const T* __restrict hg, const T* __restrict h,
                      T* __restrict dx, T* __restrict dhg, T* __restrict dh, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T r = Act<T>::sigmoid(x[j] + hg[j]), z = Act<T>::sigmoid(x[H + j] + hg[H + j]);
    const T n = Act<T>::tanh(x[2 * H + j] + r * hg[2 * H + j]);
    const T da_n = g[j] * (T(1) - z) * (T(1) - n * n);
    const T da_r = da_n * hg[2 * H + j] * (r * (T(1) - r));
    const T da_z = g[j] * (h[j] - n) * (z * (T(1) - z));
    dx[j] = da_r;
    dx[H + j] = da_z;
    dx[2 * H + j] = da_n;
    dhg[j] = da_r;
    dhg[H + j] = da_z;
    dhg[2 * H + j] = da_n * r;
    dh[j] = g[j] * z;
  }
}

void check_gru_fused(const char* op, const Tensor& xg, const Tensor& hg, const Tensor& h) {
  check_gru_cell(op, xg, hg, h);
  EMBER_CHECK(xg.dtype() == h.dtype() && hg.dtype() == h.dtype() && (h.dtype() == kFloat32 || h.dtype() == kFloat64),
              op, ": expected float32 or float64 tensors of one dtype, got ", dtype_name(xg.dtype()), ", ",
              dtype_name(hg.dtype()), " and ", dtype_name(h.dtype()));
}

Tensor gru_cell_cpu(const Tensor& xg_in, const Tensor& hg_in, const Tensor& h_in) {
  check_gru_fused("_gru_cell", xg_in, hg_in, h_in);
  const Tensor xg = xg_in.contiguous(), hg = hg_in.contiguous(), h = h_in.contiguous();
  const int64_t N = h.size(0), H = h.size(1);
  Tensor out = empty({N, H}, h.options());
  float_or_double(h.dtype(), [&]<class T>() {
    const T *x = xg.data_ptr<T>(), *hp = hg.data_ptr<T>(), *hh = h.data_ptr<T>();
    T* o = out.data_ptr<T>();
    over_rows(N, 3 * H, [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) gru_row<T>(x + r * 3 * H, hp + r * 3 * H, hh + r * H, o + r * H, H);
    });
  });
  return out;
}

std::tuple<Tensor, Tensor, Tensor> gru_cell_backward_cpu(const Tensor& g_in, const Tensor& xg_in, const Tensor& hg_in,
                                                         const Tensor& h_in) {
  check_gru_fused("_gru_cell_backward", xg_in, hg_in, h_in);
  const Tensor xg = xg_in.contiguous(), hg = hg_in.contiguous(), h = h_in.contiguous();
  const Tensor g = g_in.to(h.dtype()).contiguous();
  EMBER_CHECK(IntArrayRef(g.sizes()) == IntArrayRef(h.sizes()), "_gru_cell_backward: expected grad_h' of shape ",
              h.sizes(), ", got ", g.sizes());
  const int64_t N = h.size(0), H = h.size(1);
  Tensor dx = empty({N, 3 * H}, h.options()), dhg = empty({N, 3 * H}, h.options()), dh = empty({N, H}, h.options());
  float_or_double(h.dtype(), [&]<class T>() {
    const T *gp = g.data_ptr<T>(), *x = xg.data_ptr<T>(), *hp = hg.data_ptr<T>(), *hh = h.data_ptr<T>();
    T *dxp = dx.data_ptr<T>(), *dhgp = dhg.data_ptr<T>(), *dhp = dh.data_ptr<T>();
    over_rows(N, 3 * H, [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        gru_backward_row<T>(gp + r * H, x + r * 3 * H, hp + r * 3 * H, hh + r * H, dxp + r * 3 * H, dhgp + r * 3 * H,
                            dhp + r * H, H);
    });
  });
  return {dx, dhg, dh};
}

std::tuple<Tensor, Tensor> lstm_cell_cpu(const Tensor& gates_in, const Tensor& c_in) {
  check_fused("_lstm_cell", gates_in, c_in);
  const Tensor gates = gates_in.contiguous(), c = c_in.contiguous();
  const int64_t N = c.size(0), H = c.size(1);
  Tensor h_new = empty({N, H}, c.options()), c_new = empty({N, H}, c.options());
  float_or_double(c.dtype(), [&]<class T>() {
    const T* a = gates.data_ptr<T>();
    const T* cp = c.data_ptr<T>();
    T* ho = h_new.data_ptr<T>();
    T* co = c_new.data_ptr<T>();
    over_rows(N, 4 * H, [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) lstm_row<T>(a + r * 4 * H, cp + r * H, ho + r * H, co + r * H, H);
    });
  });
  return {h_new, c_new};
}

std::tuple<Tensor, Tensor> lstm_cell_backward_cpu(const Tensor& gh_in, const Tensor& gc_in, const Tensor& gates_in,
                                                  const Tensor& c_in, const Tensor& c_new_in) {
  check_fused("_lstm_cell_backward", gates_in, c_in);
  const Tensor gates = gates_in.contiguous(), c = c_in.contiguous(), c_new = c_new_in.contiguous();
  const Tensor gh = gh_in.to(c.dtype()).contiguous(), gc = gc_in.to(c.dtype()).contiguous();
  const int64_t N = c.size(0), H = c.size(1);
  EMBER_CHECK(IntArrayRef(gh.sizes()) == IntArrayRef(c.sizes()) && IntArrayRef(gc.sizes()) == IntArrayRef(c.sizes()) &&
                  IntArrayRef(c_new.sizes()) == IntArrayRef(c.sizes()),
              "_lstm_cell_backward: expected grad_h, grad_c and c' of shape ", c.sizes());
  Tensor dgates = empty({N, 4 * H}, c.options()), dc_prev = empty({N, H}, c.options());
  float_or_double(c.dtype(), [&]<class T>() {
    const T *a = gates.data_ptr<T>(), *cp = c.data_ptr<T>(), *cnp = c_new.data_ptr<T>();
    const T *ghp = gh.data_ptr<T>(), *gcp = gc.data_ptr<T>();
    T* dap = dgates.data_ptr<T>();
    T* dcp = dc_prev.data_ptr<T>();
    over_rows(N, 4 * H, [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        lstm_backward_row<T>(a + r * 4 * H, cp + r * H, cnp + r * H, ghp + r * H, gcp + r * H, dap + r * 4 * H,
                             dcp + r * H, H);
    });
  });
  return {dgates, dc_prev};
}

EMBER_REGISTER_KERNEL(_lstm_cell, CPU, lstm_cell_cpu);
EMBER_REGISTER_KERNEL(_lstm_cell_backward, CPU, lstm_cell_backward_cpu);
EMBER_REGISTER_KERNEL(_gru_cell, CPU, gru_cell_cpu);
EMBER_REGISTER_KERNEL(_gru_cell_backward, CPU, gru_cell_backward_cpu);

}  // namespace
}  // namespace ember::cpu
