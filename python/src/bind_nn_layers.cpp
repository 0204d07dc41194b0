// Issue 15's layers in ember._C._nn: interpolate (the modes, sizes and checks are
// F::interpolate's; Python's F.interpolate turns int / float arguments into per-dim lists),
// pixel / channel shuffles, instance_norm, pairwise_distance, cosine_similarity, glu.
#include "bind.h"
#include "ember/nn/functional.h"

namespace ember::python {

void bind_nn_layers(nb::module_& m) {
  namespace F = ember::nn::functional;
  nb::module_ nn = nb::borrow<nb::module_>(m.attr("_nn"));
  nn.def("interpolate", &F::interpolate, nb::arg("input"), nb::arg("size") = nb::none(),
         nb::arg("scale_factor") = nb::none(), nb::arg("mode") = "nearest", nb::arg("align_corners") = nb::none(),
         nb::arg("recompute_scale_factor") = nb::none(), nb::arg("antialias") = false,
         nb::call_guard<nb::gil_scoped_release>());
  nn.def("embedding_bag", &F::embedding_bag, nb::arg("input"), nb::arg("weight"), nb::arg("offsets") = nb::none(),
         nb::arg("mode") = "mean", nb::arg("per_sample_weights") = nb::none(), nb::arg("include_last_offset") = false,
         nb::arg("padding_idx") = nb::none(), nb::call_guard<nb::gil_scoped_release>());
  nn.def("ctc_loss", &F::ctc_loss, nb::arg("log_probs"), nb::arg("targets"), nb::arg("input_lengths"),
         nb::arg("target_lengths"), nb::arg("blank") = 0, nb::arg("reduction") = "mean",
         nb::arg("zero_infinity") = false, nb::call_guard<nb::gil_scoped_release>());
  nn.def("grid_sample", &F::grid_sample, nb::arg("input"), nb::arg("grid"), nb::arg("mode") = "bilinear",
         nb::arg("padding_mode") = "zeros", nb::arg("align_corners") = nb::none(),
         nb::call_guard<nb::gil_scoped_release>());
  nn.def("pixel_shuffle", &F::pixel_shuffle, nb::arg("input"), nb::arg("upscale_factor"));
  nn.def("pixel_unshuffle", &F::pixel_unshuffle, nb::arg("input"), nb::arg("downscale_factor"));
  nn.def("channel_shuffle", &F::channel_shuffle, nb::arg("input"), nb::arg("groups"));
  nn.def("instance_norm", &F::instance_norm, nb::arg("input"), nb::arg("running_mean") = nb::none(),
         nb::arg("running_var") = nb::none(), nb::arg("weight") = nb::none(), nb::arg("bias") = nb::none(),
         nb::arg("use_input_stats") = true, nb::arg("momentum") = 0.1, nb::arg("eps") = 1e-5,
         nb::call_guard<nb::gil_scoped_release>());
  nn.def("pairwise_distance", &F::pairwise_distance, nb::arg("x1"), nb::arg("x2"), nb::arg("p") = 2.0,
         nb::arg("eps") = 1e-6, nb::arg("keepdim") = false);
  nn.def("cosine_similarity", &F::cosine_similarity, nb::arg("x1"), nb::arg("x2"), nb::arg("dim") = 1,
         nb::arg("eps") = 1e-8);
  nn.def("glu", &F::glu, nb::arg("input"), nb::arg("dim") = -1);
}

}  // namespace ember::python
