// ember._C._amp: autocast's per-thread state and policy (include/ember/amp.h,
// src/amp/autocast_policy.h) for python/ember/amp/, and GradScaler's two ops under torch's names
// (ember._amp_foreach_non_finite_check_and_unscale_, ember._amp_update_scale_). Glue only.
#include <memory>

#include "amp/autocast.h"
#include "bind.h"
#include "ember/amp.h"

namespace ember::python {

namespace {

DeviceType autocast_device(const std::string& device_type) {
  if (device_type == "cpu") return DeviceType::CPU;
  if (device_type == "cuda") return DeviceType::CUDA;
  throw Error(::ember::detail::cat("User specified an unsupported autocast device_type '", device_type, "'"));
}

const char* policy_name(amp::CastPolicy p) {
  switch (p) {
    case amp::CastPolicy::Lower: return "lower_precision_fp";
    case amp::CastPolicy::Fp32: return "fp32";
    case amp::CastPolicy::Fp32Opt: return "fp32_set_opt_dtype";
    case amp::CastPolicy::Promote: return "promote";
    case amp::CastPolicy::Banned: return "banned";
    case amp::CastPolicy::Keep: return "none (what it calls is not cast)";
    case amp::CastPolicy::None: break;
  }
  return "none";
}

// Tensors directly in args/kwargs values, or in lists/tuples there: what a Python composite's
// policy casts.
void collect(nb::handle h, std::vector<const Tensor*>& out) {
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = tensor_of(h);
    if (t.defined()) out.push_back(&t);
  } else if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    for (nb::handle item : h) if (nb::isinstance<Tensor>(item)) collect(item, out);
  }
}
nb::object cast_value(nb::handle h, const amp::detail::CastPlan& plan) {
  if (nb::isinstance<Tensor>(h)) return nb::cast(amp::detail::cast_arg(plan, static_cast<const Tensor&>(tensor_of(h))));
  bool is_list = nb::isinstance<nb::list>(h);
  if (is_list || nb::isinstance<nb::tuple>(h)) {
    nb::list out;
    for (nb::handle item : h) out.append(cast_value(item, plan));
    return is_list ? nb::object(out) : nb::object(nb::tuple(out));
  }
  return nb::borrow(h);
}

// `with _below_autocast():` runs a Python composite's body with the Autocast layer excluded.
struct BelowAutocast {
  std::unique_ptr<ExcludeDispatchKeyGuard> guard;
};

}  // namespace

void bind_amp(nb::module_& m) {
  nb::module_ a = m.def_submodule("_amp", "ember::amp");
  a.def("is_autocast_enabled", [](const std::string& d) { return amp::is_autocast_enabled(autocast_device(d)); });
  a.def("set_autocast_enabled", [](const std::string& d, bool on) { amp::set_autocast_enabled(autocast_device(d), on); });
  a.def("get_autocast_dtype", [](const std::string& d) { return amp::get_autocast_dtype(autocast_device(d)); });
  a.def("set_autocast_dtype", [](const std::string& d, DType t) { amp::set_autocast_dtype(autocast_device(d), t); });
  a.def("is_autocast_cache_enabled", &amp::is_autocast_cache_enabled);
  a.def("set_autocast_cache_enabled", &amp::set_autocast_cache_enabled);
  a.def("autocast_increment_nesting", &amp::autocast_increment_nesting);
  a.def("autocast_decrement_nesting", &amp::autocast_decrement_nesting);
  a.def("clear_autocast_cache", &amp::clear_autocast_cache);
  a.def("_pending", &amp::detail::autocast_pending);
  a.def("_cache_size", &amp::detail::cache_size);
  // [(name, cuda policy, cpu policy)], the table as torch names its policies.
  a.def("_policy_table", []() {
    nb::list rows;
    for (const auto& r : amp::kAutocastPolicy) rows.append(nb::make_tuple(r.name, policy_name(r.cuda), policy_name(r.cpu)));
    return rows;
  });
  // (args, kwargs) cast for the Python composite `name`, or None when its policy does not apply.
  a.def("_cast_inputs", [](const std::string& name, nb::tuple args, nb::dict kwargs) -> nb::object {
    auto op = amp::detail::autocast_op_named(name);
    if (!op) throw Error(::ember::detail::cat("autocast: no policy row named '", name, "'"));
    std::vector<const Tensor*> tensors;
    for (nb::handle h : args) collect(h, tensors);
    for (auto [k, v] : kwargs) collect(v, tensors);
    auto plan = amp::detail::plan_from(*op, tensors);
    if (!plan || plan->policy == amp::CastPolicy::Fp32Opt) return nb::none();
    if (plan->policy == amp::CastPolicy::Keep) return nb::make_tuple(args, kwargs);
    nb::list new_args;
    for (nb::handle h : args) new_args.append(cast_value(h, *plan));
    nb::dict new_kwargs;
    for (auto [k, v] : kwargs) new_kwargs[k] = cast_value(v, *plan);
    return nb::make_tuple(nb::tuple(new_args), new_kwargs);
  });
  nb::class_<BelowAutocast>(a, "_below_autocast")
      .def(nb::init<>())
      .def("__enter__", [](BelowAutocast& b) {
        b.guard = std::make_unique<ExcludeDispatchKeyGuard>(DispatchKeySet(DispatchKey::Autocast));
      })
      .def("__exit__", [](BelowAutocast& b, nb::args) {
        b.guard.reset();
        return false;
      });

  m.def("_amp_foreach_non_finite_check_and_unscale_",
        [](std::vector<Tensor> grads, const Tensor& found_inf, const Tensor& inv_scale) {
          nb::gil_scoped_release nogil;
          amp::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
        });
  m.def("_amp_update_scale_", [](const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                                 double growth_factor, double backoff_factor, int64_t growth_interval) {
    return amp::_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
  });
}

}  // namespace ember::python
