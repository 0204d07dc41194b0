// ember._C._lr_rules: the lr schedulers' rules (include/ember/optim/lr_rules.h) for
// ember.optim.lr_scheduler, whose classes keep torch's API and attributes and pass those
// attributes in here. Glue only: every function forwards to the C++ one of the same name.
// Callables (lr_lambda, scale_fn) arrive as std::function and are called back with the GIL held.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "ember/optim/lr_rules.h"

namespace ember::python {

void bind_lr_scheduler(nb::module_& m) {
  namespace R = optim::lr_rules;
  using namespace nb::literals;
  nb::module_ r = m.def_submodule("_lr_rules", "the lr schedulers' formulas (used by ember.optim.lr_scheduler)");

  r.def("check_group_count", &R::check_group_count, "what"_a, "groups"_a, "got"_a);
  r.def("check_cycle_momentum", &R::check_cycle_momentum, "supported"_a);

  r.def("check_step_size", &R::check_step_size, "step_size"_a);
  r.def("step_lr", &R::step_lr, "epoch"_a, "lrs"_a, "step_size"_a, "gamma"_a);
  r.def("step_lr_closed", &R::step_lr_closed, "epoch"_a, "base_lrs"_a, "step_size"_a, "gamma"_a);
  r.def("multistep_lr", &R::multistep_lr, "epoch"_a, "lrs"_a, "milestones"_a, "gamma"_a);
  r.def("multistep_lr_closed", &R::multistep_lr_closed, "epoch"_a, "base_lrs"_a, "milestones"_a, "gamma"_a);
  r.def("check_constant_factor", &R::check_constant_factor, "factor"_a);
  r.def("constant_lr", &R::constant_lr, "epoch"_a, "lrs"_a, "factor"_a, "total_iters"_a);
  r.def("constant_lr_closed", &R::constant_lr_closed, "epoch"_a, "base_lrs"_a, "factor"_a, "total_iters"_a);
  r.def("check_linear_factors", &R::check_linear_factors, "start_factor"_a, "end_factor"_a);
  r.def("linear_lr", &R::linear_lr, "epoch"_a, "lrs"_a, "start_factor"_a, "end_factor"_a, "total_iters"_a);
  r.def("linear_lr_closed", &R::linear_lr_closed, "epoch"_a, "base_lrs"_a, "start_factor"_a, "end_factor"_a,
        "total_iters"_a);
  r.def("exponential_lr", &R::exponential_lr, "epoch"_a, "lrs"_a, "gamma"_a);
  r.def("exponential_lr_closed", &R::exponential_lr_closed, "epoch"_a, "base_lrs"_a, "gamma"_a);
  r.def("polynomial_lr", &R::polynomial_lr, "epoch"_a, "lrs"_a, "total_iters"_a, "power"_a);
  r.def("polynomial_lr_closed", &R::polynomial_lr_closed, "epoch"_a, "base_lrs"_a, "total_iters"_a, "power"_a);

  r.def("check_t_max", &R::check_t_max, "T_max"_a);
  r.def("cosine_annealing_lr", &R::cosine_annealing_lr, "epoch"_a, "lrs"_a, "base_lrs"_a, "T_max"_a, "eta_min"_a,
        "first_step"_a);
  r.def("cosine_annealing_lr_closed", &R::cosine_annealing_lr_closed, "epoch"_a, "base_lrs"_a, "T_max"_a,
        "eta_min"_a);

  nb::class_<R::WarmRestartsState>(r, "WarmRestartsState")
      .def(nb::init<int64_t, double, int64_t>(), "last_epoch"_a, "T_cur"_a, "T_i"_a)
      .def_ro("last_epoch", &R::WarmRestartsState::last_epoch)
      .def_ro("T_cur", &R::WarmRestartsState::T_cur)
      .def_ro("T_i", &R::WarmRestartsState::T_i);
  r.def("check_warm_restarts", &R::check_warm_restarts, "T_0"_a, "T_mult"_a);
  r.def("warm_restarts_step", &R::warm_restarts_step, "epoch"_a.none(), "state"_a, "T_0"_a, "T_mult"_a);
  r.def("warm_restarts_lr", &R::warm_restarts_lr, "base_lrs"_a, "T_cur"_a, "T_i"_a, "eta_min"_a);

  r.def("check_lambda_count", &R::check_lambda_count, "groups"_a, "lambdas"_a);
  r.def("lambda_lr", &R::lambda_lr, "epoch"_a, "base_lrs"_a, "lr_lambdas"_a);
  r.def("multiplicative_lr", &R::multiplicative_lr, "epoch"_a, "lrs"_a, "lr_lambdas"_a);

  nb::class_<R::CyclicShape>(r, "CyclicShape")
      .def(nb::init<double, double, std::string>(), "total_size"_a, "step_ratio"_a, "scale_mode"_a)
      .def_ro("total_size", &R::CyclicShape::total_size)
      .def_ro("step_ratio", &R::CyclicShape::step_ratio)
      .def_ro("scale_mode", &R::CyclicShape::scale_mode);
  nb::class_<R::CyclicValues>(r, "CyclicValues")
      .def_ro("lrs", &R::CyclicValues::lrs)
      .def_ro("momenta", &R::CyclicValues::momenta);
  r.def("cyclic_shape", &R::cyclic_shape, "step_size_up"_a, "step_size_down"_a.none(), "mode"_a, "has_scale_fn"_a,
        "scale_mode"_a);
  r.def("cyclic_scale", &R::cyclic_scale, "mode"_a, "gamma"_a, "x"_a);
  r.def("cyclic_lr", &R::cyclic_lr, "epoch"_a, "shape"_a, "scale_fn"_a, "base_lrs"_a, "max_lrs"_a, "base_momenta"_a,
        "max_momenta"_a);

  nb::class_<R::OneCyclePhase>(r, "OneCyclePhase")
      .def_ro("end_step", &R::OneCyclePhase::end_step)
      .def_ro("start_lr", &R::OneCyclePhase::start_lr)
      .def_ro("end_lr", &R::OneCyclePhase::end_lr)
      .def_ro("start_momentum", &R::OneCyclePhase::start_momentum)
      .def_ro("end_momentum", &R::OneCyclePhase::end_momentum);
  nb::class_<R::OneCycleLrs>(r, "OneCycleLrs")
      .def_ro("initial_lr", &R::OneCycleLrs::initial_lr)
      .def_ro("min_lr", &R::OneCycleLrs::min_lr);
  nb::class_<R::OneCyclePoint>(r, "OneCyclePoint")
      .def_ro("phase", &R::OneCyclePoint::phase)
      .def_ro("pct", &R::OneCyclePoint::pct);
  r.def("one_cycle_total_steps", &R::one_cycle_total_steps, "total_steps"_a.none(), "epochs"_a.none(),
        "steps_per_epoch"_a.none());
  r.def("check_one_cycle", &R::check_one_cycle, "pct_start"_a, "anneal_strategy"_a);
  r.def("one_cycle_phases", &R::one_cycle_phases, "total_steps"_a, "pct_start"_a, "three_phase"_a);
  r.def("one_cycle_lrs", &R::one_cycle_lrs, "max_lr"_a, "div_factor"_a, "final_div_factor"_a);
  r.def("one_cycle_point", &R::one_cycle_point, "step"_a, "total_steps"_a, "phase_end_steps"_a);
  r.def("anneal", &R::anneal, "strategy"_a, "start"_a, "end"_a, "pct"_a);

  nb::class_<R::PlateauState>(r, "PlateauState")
      .def(nb::init<double, int64_t, int64_t>(), "best"_a, "num_bad_epochs"_a, "cooldown_counter"_a)
      .def_ro("best", &R::PlateauState::best)
      .def_ro("num_bad_epochs", &R::PlateauState::num_bad_epochs)
      .def_ro("cooldown_counter", &R::PlateauState::cooldown_counter);
  nb::class_<R::PlateauStep>(r, "PlateauStep")
      .def_ro("state", &R::PlateauStep::state)
      .def_ro("reduce", &R::PlateauStep::reduce);
  r.def("check_plateau_factor", &R::check_plateau_factor, "factor"_a);
  r.def("check_plateau_modes", &R::check_plateau_modes, "mode"_a, "threshold_mode"_a);
  r.def("plateau_worst", &R::plateau_worst, "mode"_a);
  r.def("plateau_is_better", &R::plateau_is_better, "a"_a, "best"_a, "mode"_a, "threshold_mode"_a, "threshold"_a);
  r.def("plateau_step", &R::plateau_step, "metric"_a, "state"_a, "mode"_a, "threshold_mode"_a, "threshold"_a,
        "patience"_a, "cooldown"_a);
  r.def("plateau_reduce", &R::plateau_reduce, "lrs"_a, "factor"_a, "min_lrs"_a, "eps"_a);

  nb::class_<R::SequentialPick>(r, "SequentialPick")
      .def_ro("index", &R::SequentialPick::index)
      .def_ro("restart", &R::SequentialPick::restart);
  r.def("check_sequential", &R::check_sequential, "schedulers"_a, "milestones"_a);
  r.def("sequential_pick", &R::sequential_pick, "milestones"_a, "epoch"_a);
}

}  // namespace ember::python
