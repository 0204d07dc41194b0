// ember._C._nn: the C++ side of ember.nn, all glue over include/ember/nn/:
//   - nn.functional ops (F.conv2d, F.cross_entropy, ...) with C++ signatures; the Python
//     wrappers in ember/nn/functional.py add torch's legacy arguments and in-place variants.
//   - the computation of the recurrent layers (torch's _VF.lstm family) and of
//     multi-head attention, which ember.nn's RNN/LSTM/GRU and MultiheadAttention call.
//   - nn.init (in place on the given tensor, which is returned as the same Python object) and
//     nn.utils (gradient clipping, flat parameter vectors).
// Heavy kernels (conv, linear, norms, pooling, attention, losses, recurrent layers) run with
// the GIL released; the lambdas that build Python objects re-acquire it by leaving the guard's
// scope first.
#include <nanobind/stl/variant.h>

#include "bind.h"
#include "ember/nn.h"
#include "ember/nn/functional.h"
#include "ember/nn/utils.h"

namespace ember::python {
namespace {

namespace F = ember::nn::functional;
using Release = nb::call_guard<nb::gil_scoped_release>;
using OptTensor = std::optional<Tensor>;

// An undefined C++ tensor (an absent optional output) is None in Python.
nb::object tensor_or_none(Tensor t) {
  if (!t.defined()) return nb::none();
  return nb::cast(std::move(t));
}

// conv padding: an int, a tuple of ints, or 'same' / 'valid'.
F::Padding padding_from(nb::handle h, const char* op) {
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  IntArrayRef v;
  nb::detail::make_caster<IntArrayRef> c;
  if (c.from_python(h, (uint8_t)nb::detail::cast_flags::convert, nullptr)) {
    v = c.value;
    return std::vector<int64_t>(v.begin(), v.end());
  }
  throw ember::TypeError(detail::cat(op, "(): argument 'padding' must be an int, a tuple of ints or a string, not ",
                                     nb::type_name(h.type()).c_str()));
}

// pooling stride: None (= kernel_size, passed to C++ as empty), an int or a tuple of ints.
std::vector<int64_t> stride_from(nb::handle h) {
  if (h.is_none()) return {};
  nb::detail::make_caster<IntArrayRef> c;
  if (!c.from_python(h, (uint8_t)nb::detail::cast_flags::convert, nullptr))
    throw ember::TypeError(detail::cat("pooling: argument 'stride' must be None, an int or a tuple of ints, not ",
                                       nb::type_name(h.type()).c_str()));
  IntArrayRef v = c.value;
  return std::vector<int64_t>(v.begin(), v.end());
}

Tensor& tensor_arg(nb::handle h, const char* op) {
  if (!nb::isinstance<Tensor>(h))
    throw ember::TypeError(detail::cat(op, "(): argument 'tensor' must be Tensor, not ", nb::type_name(h.type()).c_str()));
  return tensor_of(h);
}

std::vector<Tensor> tensor_vector(nb::handle seq) {
  std::vector<Tensor> out;
  if (nb::isinstance<Tensor>(seq)) {
    out.push_back(tensor_of(seq));
    return out;
  }
  for (nb::handle h : seq) out.push_back(tensor_arg(h, "nn.utils"));
  return out;
}

void bind_functional(nb::module_& m) {
  m.def("linear", &F::linear, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(), Release());
  m.def("conv1d", [](const Tensor& x, const Tensor& w, const OptTensor& b, int64_t stride, nb::handle padding,
                     int64_t dilation, int64_t groups) {
    F::Padding p = padding_from(padding, "conv1d");
    nb::gil_scoped_release release;
    return F::conv1d(x, w, b, stride, std::move(p), dilation, groups);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("stride") = 1,
     nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1);
  m.def("conv2d", [](const Tensor& x, const Tensor& w, const OptTensor& b, IntArrayRef stride, nb::handle padding,
                     IntArrayRef dilation, int64_t groups) {
    F::Padding p = padding_from(padding, "conv2d");
    nb::gil_scoped_release release;
    return F::conv2d(x, w, b, stride, std::move(p), dilation, groups);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("stride") = 1,
     nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1);

  // ---- issue 15 (conv): conv3d, transposed convolutions, 1-d/3-d and adaptive max pooling, fold
  m.def("conv3d", [](const Tensor& x, const Tensor& w, const OptTensor& b, IntArrayRef stride, nb::handle padding,
                     IntArrayRef dilation, int64_t groups) {
    F::Padding p = padding_from(padding, "conv3d");
    nb::gil_scoped_release release;
    return F::conv3d(x, w, b, stride, std::move(p), dilation, groups);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(), nb::arg("stride") = 1,
     nb::arg("padding") = 0, nb::arg("dilation") = 1, nb::arg("groups") = 1);
  m.def("conv_transpose1d", &F::conv_transpose1d, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(),
        nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("output_padding") = 0, nb::arg("groups") = 1,
        nb::arg("dilation") = 1, Release());
  m.def("conv_transpose2d", &F::conv_transpose2d, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(),
        nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("output_padding") = 0, nb::arg("groups") = 1,
        nb::arg("dilation") = 1, Release());
  m.def("conv_transpose3d", &F::conv_transpose3d, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none(),
        nb::arg("stride") = 1, nb::arg("padding") = 0, nb::arg("output_padding") = 0, nb::arg("groups") = 1,
        nb::arg("dilation") = 1, Release());
  m.def("_conv_transpose_output_padding", &F::conv_transpose_output_padding, nb::arg("input_size"),
        nb::arg("output_size"), nb::arg("stride"), nb::arg("padding"), nb::arg("kernel_size"), nb::arg("dilation"));
  // max pooling with indices; stride None = kernel_size
  auto max_pool = [&m](const char* name, auto fn) {
    m.def(name, [fn](const Tensor& x, IntArrayRef k, nb::handle stride_obj, IntArrayRef padding, IntArrayRef dilation,
                     bool ceil_mode) {
      std::vector<int64_t> stride = stride_from(stride_obj);
      nb::gil_scoped_release release;
      return fn(x, k, stride, padding, dilation, ceil_mode);
    }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
       nb::arg("dilation") = 1, nb::arg("ceil_mode") = false);
  };
  max_pool("max_pool1d_with_indices", &F::max_pool1d_with_indices);
  max_pool("max_pool3d_with_indices", &F::max_pool3d_with_indices);
  max_pool("max_pool1d", &F::max_pool1d);
  max_pool("max_pool3d", &F::max_pool3d);
  m.def("avg_pool1d", [](const Tensor& x, IntArrayRef k, nb::handle stride_obj, IntArrayRef padding, bool ceil_mode,
                         bool count_include_pad) {
    std::vector<int64_t> stride = stride_from(stride_obj);
    nb::gil_scoped_release release;
    return F::avg_pool1d(x, k, stride, padding, ceil_mode, count_include_pad);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
     nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true);
  m.def("avg_pool3d", [](const Tensor& x, IntArrayRef k, nb::handle stride_obj, IntArrayRef padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
    std::vector<int64_t> stride = stride_from(stride_obj);
    nb::gil_scoped_release release;
    return F::avg_pool3d(x, k, stride, padding, ceil_mode, count_include_pad, divisor_override);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
     nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true, nb::arg("divisor_override") = nb::none());
  m.def("adaptive_avg_pool1d", &F::adaptive_avg_pool1d, nb::arg("input"), nb::arg("output_size"), Release());
  m.def("adaptive_avg_pool3d", &F::adaptive_avg_pool3d, nb::arg("input"), nb::arg("output_size"), Release());
  m.def("adaptive_max_pool1d_with_indices", &F::adaptive_max_pool1d_with_indices, nb::arg("input"),
        nb::arg("output_size"), Release());
  m.def("adaptive_max_pool2d_with_indices", &F::adaptive_max_pool2d_with_indices, nb::arg("input"),
        nb::arg("output_size"), Release());
  m.def("adaptive_max_pool3d_with_indices", &F::adaptive_max_pool3d_with_indices, nb::arg("input"),
        nb::arg("output_size"), Release());
  m.def("unfold", &F::unfold, nb::arg("input"), nb::arg("kernel_size"), nb::arg("dilation") = 1,
        nb::arg("padding") = 0, nb::arg("stride") = 1, Release());
  m.def("fold", &F::fold, nb::arg("input"), nb::arg("output_size"), nb::arg("kernel_size"), nb::arg("dilation") = 1,
        nb::arg("padding") = 0, nb::arg("stride") = 1, Release());

  // ---- pooling and padding (stride None / empty = kernel_size)
  m.def("max_pool2d", [](const Tensor& x, IntArrayRef k, nb::handle stride_obj, IntArrayRef padding,
                         IntArrayRef dilation, bool ceil_mode) {
    std::vector<int64_t> stride = stride_from(stride_obj);
    nb::gil_scoped_release release;
    return F::max_pool2d(x, k, stride, padding, dilation, ceil_mode);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
     nb::arg("dilation") = 1, nb::arg("ceil_mode") = false);
  m.def("max_pool2d_with_indices", [](const Tensor& x, IntArrayRef k, nb::handle stride_obj,
                                      IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
    std::vector<int64_t> stride = stride_from(stride_obj);
    nb::gil_scoped_release release;
    return F::max_pool2d_with_indices(x, k, stride, padding, dilation, ceil_mode);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
     nb::arg("dilation") = 1, nb::arg("ceil_mode") = false);
  m.def("avg_pool2d", [](const Tensor& x, IntArrayRef k, nb::handle stride_obj, IntArrayRef padding,
                         bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
    std::vector<int64_t> stride = stride_from(stride_obj);
    nb::gil_scoped_release release;
    return F::avg_pool2d(x, k, stride, padding, ceil_mode, count_include_pad, divisor_override);
  }, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
     nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true, nb::arg("divisor_override") = nb::none());
  m.def("adaptive_avg_pool2d", &F::adaptive_avg_pool2d, nb::arg("input"), nb::arg("output_size"), Release());
  m.def("pad", &F::pad, nb::arg("input"), nb::arg("pad"), nb::arg("mode") = "constant", nb::arg("value") = 0.0);

  // ---- normalisation
  m.def("layer_norm", &F::layer_norm, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = nb::none(),
        nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5, Release());
  m.def("rms_norm", &F::rms_norm, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = nb::none(),
        nb::arg("eps") = nb::none(), Release());
  m.def("group_norm", &F::group_norm, nb::arg("input"), nb::arg("num_groups"), nb::arg("weight") = nb::none(),
        nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5, Release());
  m.def("batch_norm", &F::batch_norm, nb::arg("input"), nb::arg("running_mean").none(), nb::arg("running_var").none(),
        nb::arg("weight") = nb::none(), nb::arg("bias") = nb::none(), nb::arg("training") = false,
        nb::arg("momentum") = 0.1, nb::arg("eps") = 1e-5, Release());

  // ---- activations (elementwise: cheap, keep the GIL)
  m.def("relu", &F::relu, nb::arg("input"));
  m.def("relu6", &F::relu6, nb::arg("input"));
  m.def("leaky_relu", &F::leaky_relu, nb::arg("input"), nb::arg("negative_slope") = 0.01);
  m.def("gelu", &F::gelu, nb::arg("input"), nb::arg("approximate") = "none");
  m.def("silu", &F::silu, nb::arg("input"));
  m.def("elu", &F::elu, nb::arg("input"), nb::arg("alpha") = 1.0);
  m.def("softplus", &F::softplus, nb::arg("input"), nb::arg("beta") = 1.0, nb::arg("threshold") = 20.0);
  m.def("sigmoid", &F::sigmoid, nb::arg("input"));
  m.def("tanh", &F::tanh, nb::arg("input"));
  m.def("softmax", &F::softmax, nb::arg("input"), nb::arg("dim"), nb::arg("dtype") = nb::none());
  m.def("log_softmax", &F::log_softmax, nb::arg("input"), nb::arg("dim"), nb::arg("dtype") = nb::none());
  m.def("dropout", &F::dropout, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true,
        nb::arg("generator").none() = nb::none());
  m.def("dropout2d", &F::dropout2d, nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true,
        nb::arg("generator").none() = nb::none());
  m.def("embedding", &F::embedding, nb::arg("input"), nb::arg("weight"), nb::arg("padding_idx") = nb::none(),
        nb::arg("max_norm") = nb::none(), nb::arg("norm_type") = 2.0, nb::arg("scale_grad_by_freq") = false);
  m.def("one_hot", &F::one_hot, nb::arg("tensor"), nb::arg("num_classes") = -1);
  m.def("scaled_dot_product_attention", &F::scaled_dot_product_attention, nb::arg("query"), nb::arg("key"),
        nb::arg("value"), nb::arg("attn_mask") = nb::none(), nb::arg("dropout_p") = 0.0, nb::arg("is_causal") = false,
        nb::arg("scale") = nb::none(), nb::arg("generator").none() = nb::none(), Release());

  // ---- losses
  m.def("cross_entropy", &F::cross_entropy, nb::arg("input"), nb::arg("target"), nb::arg("weight") = nb::none(),
        nb::arg("ignore_index") = -100, nb::arg("reduction") = "mean", nb::arg("label_smoothing") = 0.0, Release());
  m.def("nll_loss", &F::nll_loss, nb::arg("input"), nb::arg("target"), nb::arg("weight") = nb::none(),
        nb::arg("ignore_index") = -100, nb::arg("reduction") = "mean", Release());
  m.def("mse_loss", &F::mse_loss, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean", Release());
  m.def("l1_loss", &F::l1_loss, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean", Release());
  m.def("smooth_l1_loss", &F::smooth_l1_loss, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean",
        nb::arg("beta") = 1.0, Release());
  m.def("huber_loss", &F::huber_loss, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean",
        nb::arg("delta") = 1.0, Release());
  m.def("binary_cross_entropy", &F::binary_cross_entropy, nb::arg("input"), nb::arg("target"),
        nb::arg("weight") = nb::none(), nb::arg("reduction") = "mean", Release());
  m.def("binary_cross_entropy_with_logits", &F::binary_cross_entropy_with_logits, nb::arg("input"), nb::arg("target"),
        nb::arg("weight") = nb::none(), nb::arg("reduction") = "mean", nb::arg("pos_weight") = nb::none(), Release());
  m.def("kl_div", &F::kl_div, nb::arg("input"), nb::arg("target"), nb::arg("reduction") = "mean",
        nb::arg("log_target") = false, Release());
}

// nn.init: in place on the tensor; returns the same Python object, as torch does.
void bind_init(nb::module_& m) {
  namespace I = ember::nn::init;
  m.def("calculate_gain", &I::calculate_gain, nb::arg("nonlinearity"), nb::arg("param") = nb::none());
  m.def("_calculate_fan_in_and_fan_out", [](const Tensor& t) { return I::calculate_fan_in_and_fan_out(t); },
        nb::arg("tensor"));
  m.def("uniform_", [](nb::handle t, double a, double b, Generator* g) {
    I::uniform_(tensor_arg(t, "uniform_"), a, b, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("a") = 0.0, nb::arg("b") = 1.0, nb::arg("generator").none() = nb::none());
  m.def("normal_", [](nb::handle t, double mean, double std, Generator* g) {
    I::normal_(tensor_arg(t, "normal_"), mean, std, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::arg("generator").none() = nb::none());
  m.def("constant_", [](nb::handle t, double v) {
    I::constant_(tensor_arg(t, "constant_"), v);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("val"));
  m.def("zeros_", [](nb::handle t) { I::zeros_(tensor_arg(t, "zeros_")); return nb::borrow(t); }, nb::arg("tensor"));
  m.def("ones_", [](nb::handle t) { I::ones_(tensor_arg(t, "ones_")); return nb::borrow(t); }, nb::arg("tensor"));
  m.def("eye_", [](nb::handle t) { I::eye_(tensor_arg(t, "eye_")); return nb::borrow(t); }, nb::arg("tensor"));
  m.def("xavier_uniform_", [](nb::handle t, double gain, Generator* g) {
    I::xavier_uniform_(tensor_arg(t, "xavier_uniform_"), gain, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("gain") = 1.0, nb::arg("generator").none() = nb::none());
  m.def("xavier_normal_", [](nb::handle t, double gain, Generator* g) {
    I::xavier_normal_(tensor_arg(t, "xavier_normal_"), gain, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("gain") = 1.0, nb::arg("generator").none() = nb::none());
  m.def("kaiming_uniform_", [](nb::handle t, double a, const std::string& mode, const std::string& nl, Generator* g) {
    I::kaiming_uniform_(tensor_arg(t, "kaiming_uniform_"), a, mode, nl, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("a") = 0.0, nb::arg("mode") = "fan_in", nb::arg("nonlinearity") = "leaky_relu",
     nb::arg("generator").none() = nb::none());
  m.def("kaiming_normal_", [](nb::handle t, double a, const std::string& mode, const std::string& nl, Generator* g) {
    I::kaiming_normal_(tensor_arg(t, "kaiming_normal_"), a, mode, nl, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("a") = 0.0, nb::arg("mode") = "fan_in", nb::arg("nonlinearity") = "leaky_relu",
     nb::arg("generator").none() = nb::none());
  m.def("trunc_normal_", [](nb::handle t, double mean, double std, double a, double b, Generator* g) {
    I::trunc_normal_(tensor_arg(t, "trunc_normal_"), mean, std, a, b, g);
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::arg("a") = -2.0, nb::arg("b") = 2.0,
     nb::arg("generator").none() = nb::none());
  m.def("orthogonal_", [](nb::handle t, double gain, Generator* g) {
    Tensor& x = tensor_arg(t, "orthogonal_");
    {
      nb::gil_scoped_release release;  // a QR decomposition
      I::orthogonal_(x, gain, g);
    }
    return nb::borrow(t);
  }, nb::arg("tensor"), nb::arg("gain") = 1.0, nb::arg("generator").none() = nb::none());
}

void bind_utils(nb::module_& m) {
  namespace U = ember::nn::utils;
  m.def("clip_grad_norm_", [](nb::handle params, double max_norm, double norm_type, bool error_if_nonfinite) {
    std::vector<Tensor> ps = tensor_vector(params);
    nb::gil_scoped_release release;
    return U::clip_grad_norm_(ps, max_norm, norm_type, error_if_nonfinite);
  }, nb::arg("parameters"), nb::arg("max_norm"), nb::arg("norm_type") = 2.0, nb::arg("error_if_nonfinite") = false);
  m.def("clip_grad_value_", [](nb::handle params, double clip_value) {
    std::vector<Tensor> ps = tensor_vector(params);
    nb::gil_scoped_release release;
    U::clip_grad_value_(ps, clip_value);
  }, nb::arg("parameters"), nb::arg("clip_value"));
  m.def("parameters_to_vector", [](nb::handle params) { return U::parameters_to_vector(tensor_vector(params)); },
        nb::arg("parameters"));
  m.def("vector_to_parameters", [](const Tensor& vec, nb::handle params) {
    U::vector_to_parameters(vec, tensor_vector(params));
  }, nb::arg("vec"), nb::arg("parameters"));
}

// The computation of nn.RNN / LSTM / GRU (torch's _VF functions) and of nn.MultiheadAttention:
// the Python modules call these with their own parameters, as the C++ modules do.
void bind_recurrent_and_attention(nb::module_& m) {
  m.def("rnn_tanh", &F::rnn_tanh, nb::arg("input"), nb::arg("hx").none(), nb::arg("params"), nb::arg("has_biases"),
        nb::arg("num_layers"), nb::arg("dropout"), nb::arg("train"), nb::arg("bidirectional"), nb::arg("batch_first"),
        Release());
  m.def("rnn_relu", &F::rnn_relu, nb::arg("input"), nb::arg("hx").none(), nb::arg("params"), nb::arg("has_biases"),
        nb::arg("num_layers"), nb::arg("dropout"), nb::arg("train"), nb::arg("bidirectional"), nb::arg("batch_first"),
        Release());
  m.def("gru", &F::gru, nb::arg("input"), nb::arg("hx").none(), nb::arg("params"), nb::arg("has_biases"),
        nb::arg("num_layers"), nb::arg("dropout"), nb::arg("train"), nb::arg("bidirectional"), nb::arg("batch_first"),
        Release());
  m.def("lstm", &F::lstm, nb::arg("input"), nb::arg("hx"), nb::arg("params"), nb::arg("has_biases"),
        nb::arg("num_layers"), nb::arg("dropout"), nb::arg("train"), nb::arg("bidirectional"), nb::arg("batch_first"),
        Release());
  m.def("multi_head_attention_forward",
        [](const Tensor& query, const Tensor& key, const Tensor& value, int64_t embed_dim_to_check, int64_t num_heads,
           const OptTensor& in_proj_weight, const OptTensor& in_proj_bias, const OptTensor& bias_k,
           const OptTensor& bias_v, bool add_zero_attn, double dropout_p, const Tensor& out_proj_weight,
           const OptTensor& out_proj_bias, bool training, const OptTensor& key_padding_mask, bool need_weights,
           const OptTensor& attn_mask, bool use_separate_proj_weight, const OptTensor& q_proj_weight,
           const OptTensor& k_proj_weight, const OptTensor& v_proj_weight, const OptTensor& static_k,
           const OptTensor& static_v, bool average_attn_weights, bool is_causal, bool batch_first) {
          std::tuple<Tensor, Tensor> r;
          {
            nb::gil_scoped_release release;
            r = F::multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                                in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                                out_proj_weight, out_proj_bias, training, key_padding_mask,
                                                need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
                                                k_proj_weight, v_proj_weight, static_k, static_v,
                                                average_attn_weights, is_causal, batch_first);
          }
          return nb::make_tuple(std::get<0>(r), tensor_or_none(std::get<1>(r)));
        },
        nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("embed_dim_to_check"), nb::arg("num_heads"),
        nb::arg("in_proj_weight").none(), nb::arg("in_proj_bias").none(), nb::arg("bias_k").none(),
        nb::arg("bias_v").none(), nb::arg("add_zero_attn"), nb::arg("dropout_p"), nb::arg("out_proj_weight"),
        nb::arg("out_proj_bias").none(), nb::arg("training") = true, nb::arg("key_padding_mask") = nb::none(),
        nb::arg("need_weights") = true, nb::arg("attn_mask") = nb::none(), nb::arg("use_separate_proj_weight") = false,
        nb::arg("q_proj_weight") = nb::none(), nb::arg("k_proj_weight") = nb::none(),
        nb::arg("v_proj_weight") = nb::none(), nb::arg("static_k") = nb::none(), nb::arg("static_v") = nb::none(),
        nb::arg("average_attn_weights") = true, nb::arg("is_causal") = false, nb::kw_only(),
        nb::arg("batch_first") = false);
}

}  // namespace

void bind_nn(nb::module_& m) {
  nb::module_ nn = m.def_submodule("_nn", "C++ side of ember.nn (functional ops, init, utils)");
  bind_functional(nn);
  bind_init(nn);
  bind_utils(nn);
  bind_recurrent_and_attention(nn);
}

}  // namespace ember::python
