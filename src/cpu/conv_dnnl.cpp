// oneDNN convolution for ember's conv2d ops: see conv_dnnl.h.
//
// Every primitive is created with format_tag::any, so oneDNN picks its layouts (nChw16c and
// OIhw16i16o for float32 on AVX-512; channels-last and VNNI-blocked weights for its bfloat16
// AMX kernels); ember's tensors stay plain NCHW / OIHW and are reordered in and out on each
// call. Primitive descriptors, primitives and their reorders are created once per shape (JIT
// compilation costs milliseconds) and cached (dnnl_primitives.h); buffers for the blocked
// copies and the scratchpad belong to the calling thread or the call (CallBuffers there), so
// concurrent calls share nothing mutable. The primitives thread over the same libgomp pool as
// everything else.
#include "cpu/conv_dnnl.h"

#include "ember/ops.h"

#if EMBER_HAVE_DNNL
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/dnnl_primitives.h"
#endif

namespace ember::cpu::dnnl_conv {

#if !EMBER_HAVE_DNNL

Tensor forward(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef, IntArrayRef, IntArrayRef,
               int64_t) {
  return {};
}
Tensor backward_input(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, int64_t) {
  return {};
}
Tensor backward_weight(const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, int64_t) {
  return {};
}

#else

namespace {

using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;
using dnnl_primitives::cpu_engine;

// oneDNN's input channel limit below which ember's own kernel is as fast or faster. For
// bfloat16 that kernel is the float32 one plus conversions of every operand, and oneDNN wins
// from 2 channels on (see conv_dnnl.h); with 1 its reorders to and from its blocked layouts
// cost what it saves (weight gradient 0.49 against 0.39 ms for the CNN's 1 -> 32 layer).
constexpr int64_t kMinChannelsFloat32 = 8, kMinChannelsBFloat16 = 2;

bool covered(DType dtype, int64_t in_channels, int64_t groups, IntArrayRef in_sizes, IntArrayRef w_sizes) {
  if (groups < 1) return false;
  if (dtype == kFloat32) {
    if (in_channels < kMinChannelsFloat32) return false;
  } else if (dtype != kBFloat16 || !dnnl_primitives::native_bf16() || in_channels < kMinChannelsBFloat16) {
    return false;
  }
  for (int64_t s : in_sizes)
    if (s == 0) return false;
  for (int64_t s : w_sizes)
    if (s == 0) return false;
  return true;
}

memory::data_type dnnl_type(DType t) { return t == kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32; }

// The convolution's shapes in oneDNN's terms (dilation counted from 0, as oneDNN does), for 2 or
// 3 spatial dims, and the one data type of all its tensors.
struct Geometry {
  Dims src, wei, dst, stride, dilate, pad;  // wei is (G, O/G, C/G, [KD,] KH, KW) when grouped
  memory::data_type type = memory::data_type::f32;
  bool bias = false, grouped = false;
  bool is3d() const { return src.size() == 5; }
  Tag data_tag() const { return is3d() ? Tag::ncdhw : Tag::nchw; }
  Tag wei_tag() const {
    if (grouped) return is3d() ? Tag::goidhw : Tag::goihw;
    return is3d() ? Tag::oidhw : Tag::oihw;
  }
  std::vector<int64_t> key(int kind) const {
    std::vector<int64_t> k{kind, dnnl_primitives::creation_threads(), int64_t(type), bias, grouped};
    for (const Dims* d : {&src, &wei, &dst, &stride, &dilate, &pad}) {
      k.push_back(int64_t(d->size()));
      k.insert(k.end(), d->begin(), d->end());
    }
    return k;
  }
};

Geometry geometry(DType dtype, IntArrayRef in, IntArrayRef w, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, int64_t groups, bool bias) {
  Geometry g;
  g.type = dnnl_type(dtype);
  const size_t k = in.size() - 2;
  g.src = Dims(in.begin(), in.end());
  // ember's (O, C/G, ...) weight is, byte for byte, oneDNN's grouped (G, O/G, C/G, ...)
  g.grouped = groups != 1;
  g.wei = Dims(w.begin(), w.end());
  if (g.grouped) {
    g.wei[0] = w[0] / groups;
    g.wei.insert(g.wei.begin(), groups);
  }
  g.dst = {in[0], w[0]};
  for (size_t i = 0; i < k; ++i) {
    g.dst.push_back((in[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) / stride[i] + 1);
    g.stride.push_back(stride[i]);
    g.dilate.push_back(dilation[i] - 1);
    g.pad.push_back(padding[i]);
  }
  g.bias = bias;
  return g;
}

memory::desc any(const Geometry& g, const Dims& d) { return memory::desc(d, g.type, Tag::any); }
memory::desc plain(const Geometry& g, const Dims& d, Tag t) { return memory::desc(d, g.type, t); }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// One argument of a primitive: its DNNL_ARG id, a plain tensor's layout and the layout the
// primitive wants; the reorder between the two exists only when they differ.
struct Port {
  int arg;
  memory::desc plain_md, want;
  std::optional<dnnl::reorder> to_want, from_want;
  Port(int a, const memory::desc& p, const memory::desc& w, bool input) : arg(a), plain_md(p), want(w) {
    if (p == w) return;
    if (input) to_want = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), p, cpu_engine(), w));
    else from_want = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), w, cpu_engine(), p));
  }
};

struct Entry {
  dnnl::primitive prim;
  memory::desc scratch;
  std::vector<Port> ports;  // two inputs, then the output
};

// Runs e: its input ports read the plain contiguous tensors a and b, its output port writes
// out; `args` already holds what needs no reorder (the bias). Blocked copies and the scratchpad
// live in the call's buffers (dnnl_primitives.h).
Tensor execute(const Entry& e, const Tensor& a, const Tensor& b, Tensor out, std::unordered_map<int, memory> args) {
  dnnl::stream stream(cpu_engine());
  auto blocked_size = [](const Port& p) { return p.to_want || p.from_want ? p.want.get_size() : 0; };
  const dnnl_primitives::CallBuffers blocks(
      {blocked_size(e.ports[0]), blocked_size(e.ports[1]), blocked_size(e.ports[2]), e.scratch.get_size()});
  auto in = [&](const Port& p, const Tensor& t, char* block) {
    memory user(p.plain_md, cpu_engine(), t.data_ptr());
    if (!p.to_want) return user;
    memory m(p.want, cpu_engine(), block);
    p.to_want->execute(stream, user, m);
    return m;
  };
  args.emplace(e.ports[0].arg, in(e.ports[0], a, blocks[0]));
  args.emplace(e.ports[1].arg, in(e.ports[1], b, blocks[1]));
  const Port& o = e.ports[2];
  memory user_out(o.plain_md, cpu_engine(), out.data_ptr());
  memory produced = o.from_want ? memory(o.want, cpu_engine(), blocks[2]) : user_out;
  args.emplace(o.arg, produced);
  if (e.scratch.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, memory(e.scratch, cpu_engine(), blocks[3]));
  e.prim.execute(stream, args);
  if (o.from_want) o.from_want->execute(stream, produced, user_out);
  stream.wait();
  return out;
}

enum Kind { kForward = 0, kBackwardInput = 1, kBackwardWeight = 2 };

dnnl::convolution_forward::primitive_desc forward_pd(const Geometry& g) {
  memory::desc bias = g.bias ? plain(g, {g.dst[1]}, Tag::x) : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                    any(g, g.src), any(g, g.wei), bias, any(g, g.dst), g.stride, g.dilate, g.pad,
                                    g.pad);
  return dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
}

// The primitive for (kind, geometry); null when oneDNN declines it, or offers only its reference
// kernels for bfloat16 (ember's float32 path is faster than those).
std::shared_ptr<const Entry> create(Kind kind, const Geometry& g) {
  std::shared_ptr<Entry> e;
  try {
    e = std::make_shared<Entry>();
    const memory::desc src = plain(g, g.src, g.data_tag()), wei = plain(g, g.wei, g.wei_tag()),
                       dst = plain(g, g.dst, g.data_tag());
    std::string impl;  // the implementation oneDNN picked
    if (kind == kForward) {
      auto pd = forward_pd(g);
      impl = pd.impl_info_str();
      e->prim = dnnl::convolution_forward(pd);
      e->scratch = pd.scratchpad_desc();
      e->ports = {Port(DNNL_ARG_SRC, src, pd.src_desc(), true), Port(DNNL_ARG_WEIGHTS, wei, pd.weights_desc(), true),
                  Port(DNNL_ARG_DST, dst, pd.dst_desc(), false)};
    } else if (kind == kBackwardInput) {
      Geometry fg = g;
      fg.bias = false;
      dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, any(g, g.src), any(g, g.wei),
                                              any(g, g.dst), g.stride, g.dilate, g.pad, g.pad);
      dnnl::convolution_backward_data::primitive_desc pd(d, user_scratchpad(), cpu_engine(), forward_pd(fg));
      impl = pd.impl_info_str();
      e->prim = dnnl::convolution_backward_data(pd);
      e->scratch = pd.scratchpad_desc();
      e->ports = {Port(DNNL_ARG_DIFF_DST, dst, pd.diff_dst_desc(), true),
                  Port(DNNL_ARG_WEIGHTS, wei, pd.weights_desc(), true),
                  Port(DNNL_ARG_DIFF_SRC, src, pd.diff_src_desc(), false)};
    } else {
      Geometry fg = g;
      fg.bias = false;
      dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, any(g, g.src),
                                                 any(g, g.wei), memory::desc(), any(g, g.dst), g.stride, g.dilate,
                                                 g.pad, g.pad);
      dnnl::convolution_backward_weights::primitive_desc pd(d, user_scratchpad(), cpu_engine(), forward_pd(fg));
      impl = pd.impl_info_str();
      e->prim = dnnl::convolution_backward_weights(pd);
      e->scratch = pd.scratchpad_desc();
      e->ports = {Port(DNNL_ARG_SRC, src, pd.src_desc(), true), Port(DNNL_ARG_DIFF_DST, dst, pd.diff_dst_desc(), true),
                  Port(DNNL_ARG_DIFF_WEIGHTS, wei, pd.diff_weights_desc(), false)};
    }
    if (g.type == memory::data_type::bf16 && impl.starts_with("ref")) return nullptr;
  } catch (const dnnl::error&) {
    return nullptr;  // not supported for these shapes: the caller's kernel runs
  }
  return e;
}

// The cached primitive for (kind, geometry), created on first use.
std::shared_ptr<const Entry> entry(Kind kind, const Geometry& g) {
  static auto* cache = new dnnl_primitives::PrimitiveCache<Entry>(256);  // never destroyed: used until exit
  return cache->get(g.key(kind), [&] { return create(kind, g); });
}

template <class F> Tensor guarded(const char* op, F f) {
  try {
    return f();
  } catch (const dnnl::error& err) {
    throw Error(detail::cat(op, ": oneDNN failed: ", err.what()));
  }
}

}  // namespace

Tensor forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const DType dt = input.dtype();
  if (!covered(dt, input.sizes()[1], groups, input.sizes(), weight.sizes()) || weight.dtype() != dt ||
      (bias && bias->defined() && bias->dtype() != dt))
    return {};
  const bool has_bias = bias && bias->defined();
  const Geometry g = geometry(dt, input.sizes(), weight.sizes(), stride, padding, dilation, groups, has_bias);
  auto e = entry(kForward, g);
  if (!e) return {};
  return guarded("conv2d", [&] {
    std::unordered_map<int, memory> args;
    Tensor b = has_bias ? bias->contiguous() : Tensor();
    if (has_bias) args.emplace(DNNL_ARG_BIAS, memory(plain(g, {g.dst[1]}, Tag::x), cpu_engine(), b.data_ptr()));
    return execute(*e, input.contiguous(), weight.contiguous(), empty(Shape(g.dst.begin(), g.dst.end()), input.options()),
                   std::move(args));
  });
}

Tensor backward_input(const Tensor& grad_out, const Tensor& weight, IntArrayRef input_size, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const DType dt = grad_out.dtype();
  if (!covered(dt, input_size[1], groups, input_size, weight.sizes()) || weight.dtype() != dt) return {};
  const Geometry g = geometry(dt, input_size, weight.sizes(), stride, padding, dilation, groups, false);
  if (IntArrayRef(grad_out.sizes()) != IntArrayRef(g.dst)) return {};
  auto e = entry(kBackwardInput, g);
  if (!e) return {};
  return guarded("conv2d_backward_input", [&] {
    return execute(*e, grad_out.contiguous(), weight.contiguous(), empty(input_size, grad_out.options()), {});
  });
}

Tensor backward_weight(const Tensor& grad_out, const Tensor& input, IntArrayRef weight_size, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const DType dt = input.dtype();
  if (!covered(dt, input.sizes()[1], groups, input.sizes(), weight_size) || grad_out.dtype() != dt) return {};
  const Geometry g = geometry(dt, input.sizes(), weight_size, stride, padding, dilation, groups, false);
  if (IntArrayRef(grad_out.sizes()) != IntArrayRef(g.dst)) return {};
  auto e = entry(kBackwardWeight, g);
  if (!e) return {};
  return guarded("conv2d_backward_weight", [&] {
    return execute(*e, input.contiguous(), grad_out.contiguous(), empty(weight_size, input.options()), {});
  });
}

#endif

}  // namespace ember::cpu::dnnl_conv
