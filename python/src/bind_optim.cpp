// The C++ optimizers behind ember.optim's built-in classes (SGD, Adam, AdamW, RMSprop, Adagrad).
//
// The Python classes (python/ember/optim/) own torch's API: param_groups is a plain list of
// dicts a user or a scheduler edits. Before each step, sync() copies those dicts' options (a few
// numbers per group) and parameter lists into the C++ ParamGroups, adding groups the Python side
// added; then the update runs in C++ with the GIL released. Per-parameter state lives in C++ and is
// exposed to Python as dicts sharing its tensors.
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <string>
#include <unordered_map>

#include "ember/compile/capture.h"
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"
#include "value_convert.h"

namespace ember::python {
namespace {

using optim::Optimizer;
using optim::ParamGroup;

std::vector<Tensor> params_of(nb::handle group) {
  nb::object params = nb::borrow<nb::dict>(group)["params"];
  std::vector<Tensor> out;
  for (nb::handle p : params) {
    Tensor* t = nullptr;
    if (!nb::try_cast<Tensor*>(p, t) || !t)
      throw nb::type_error(("optimizer can only optimize Tensors, but one of the params is " +
                            std::string(nb::str(nb::handle((PyObject*)Py_TYPE(p.ptr())).attr("__name__")).c_str()))
                               .c_str());
    out.push_back(*t);
  }
  return out;
}

// Copies a Python group dict's options (every key but 'params') into `options`. Values the
// checkpoint model cannot hold (a user's own objects) stay Python-only: no C++ step reads them.
void copy_options(nb::handle group, Value& options) {
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(group.ptr(), &pos, &k, &v)) {
    if (!PyUnicode_Check(k)) continue;
    Py_ssize_t n = 0;
    const char* key = PyUnicode_AsUTF8AndSize(k, &n);
    if (!key) { PyErr_Clear(); continue; }
    std::string name(key, size_t(n));
    if (name == "params") continue;
    Value value;
    if (try_value_from_python(v, value)) options[Value(std::move(name))] = std::move(value);
  }
}

ParamGroup group_from_python(nb::handle group) {
  ParamGroup g{params_of(group)};
  copy_options(group, g.options);
  return g;
}

bool same_params(const std::vector<Tensor>& have, nb::handle params) {
  if (!PyList_Check(params.ptr())) return false;
  Py_ssize_t n = PyList_GET_SIZE(params.ptr());
  if (size_t(n) != have.size()) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    Tensor* t = nullptr;
    if (!nb::try_cast<Tensor*>(nb::handle(PyList_GET_ITEM(params.ptr(), i)), t) || !t) return false;
    if (t->impl() != have[size_t(i)].impl()) return false;
  }
  return true;
}

// Makes the C++ groups mirror the Python ones (options, parameter lists, added/removed groups).
void sync(Optimizer& opt, nb::list groups) {
  size_t n = groups.size();
  if (opt.param_groups.size() > n) opt.param_groups.resize(n);
  for (size_t i = 0; i < n; ++i) {
    nb::handle g = groups[i];
    if (!PyDict_Check(g.ptr())) throw nb::type_error("optimizer.param_groups must hold dicts");
    if (i >= opt.param_groups.size()) {
      opt.add_param_group(group_from_python(g));
      continue;
    }
    ParamGroup& pg = opt.param_groups[i];
    nb::object params = nb::borrow<nb::dict>(g)["params"];
    if (!same_params(pg.params, params)) pg.params = params_of(g);
    copy_options(g, pg.options);
  }
}

double opt_double(const nb::dict& o, const char* key, double fallback) {
  return o.contains(key) ? nb::cast<double>(o[key]) : fallback;
}
bool opt_bool(const nb::dict& o, const char* key, bool fallback) {
  return o.contains(key) ? nb::cast<bool>(o[key]) : fallback;
}
std::pair<double, double> opt_betas(const nb::dict& o, std::pair<double, double> fallback) {
  if (!o.contains("betas")) return fallback;
  nb::object b = o["betas"];
  return {nb::cast<double>(b[0]), nb::cast<double>(b[1])};
}

// Adam and AdamW take the same options (distinct types only for their different defaults).
template <class Options> Options adam_options(const nb::dict& d) {
  Options o;
  o.lr = opt_double(d, "lr", o.lr);
  o.betas = opt_betas(d, o.betas);
  o.eps = opt_double(d, "eps", o.eps);
  o.weight_decay = opt_double(d, "weight_decay", o.weight_decay);
  o.amsgrad = opt_bool(d, "amsgrad", false);
  o.maximize = opt_bool(d, "maximize", false);
  return o;
}

// A C++ optimizer of the named kind over the Python groups, hyper-parameters from `defaults`
// (the Python class validated them with torch's messages; the C++ constructor checks again).
std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, nb::list py_groups, nb::dict d) {
  std::vector<ParamGroup> groups;
  for (nb::handle g : py_groups) groups.push_back(group_from_python(g));
  if (kind == "sgd") {
    optim::SGDOptions o;
    // lr is required for SGD: the Python class passes its `required` marker when none was given.
    if (d.contains("lr") && (nb::isinstance<nb::float_>(d["lr"]) || nb::isinstance<nb::int_>(d["lr"])))
      o.lr = nb::cast<double>(d["lr"]);
    o.momentum = opt_double(d, "momentum", 0);
    o.dampening = opt_double(d, "dampening", 0);
    o.weight_decay = opt_double(d, "weight_decay", 0);
    o.nesterov = opt_bool(d, "nesterov", false);
    o.maximize = opt_bool(d, "maximize", false);
    return std::make_unique<optim::SGD>(std::move(groups), o);
  }
  if (kind == "adam") return std::make_unique<optim::Adam>(std::move(groups), adam_options<optim::AdamOptions>(d));
  if (kind == "adamw") return std::make_unique<optim::AdamW>(std::move(groups), adam_options<optim::AdamWOptions>(d));
  if (kind == "rmsprop") {
    optim::RMSpropOptions o;
    o.lr = opt_double(d, "lr", o.lr);
    o.alpha = opt_double(d, "alpha", o.alpha);
    o.eps = opt_double(d, "eps", o.eps);
    o.weight_decay = opt_double(d, "weight_decay", o.weight_decay);
    o.momentum = opt_double(d, "momentum", o.momentum);
    o.centered = opt_bool(d, "centered", false);
    o.maximize = opt_bool(d, "maximize", false);
    return std::make_unique<optim::RMSprop>(std::move(groups), o);
  }
  if (kind == "adagrad") {
    optim::AdagradOptions o;
    o.lr = opt_double(d, "lr", o.lr);
    o.lr_decay = opt_double(d, "lr_decay", o.lr_decay);
    o.weight_decay = opt_double(d, "weight_decay", o.weight_decay);
    o.initial_accumulator_value = opt_double(d, "initial_accumulator_value", o.initial_accumulator_value);
    o.eps = opt_double(d, "eps", o.eps);
    o.maximize = opt_bool(d, "maximize", false);
    return std::make_unique<optim::Adagrad>(std::move(groups), o);
  }
  throw nb::value_error(("unknown optimizer kind: " + kind).c_str());
}

Value* find_state(Optimizer& opt, const Tensor& p) {
  for (auto& [k, v] : opt.state)
    if (k == p.impl()) return &v;
  return nullptr;
}

}  // namespace

void bind_optim(nb::module_& m) {
  nb::class_<Optimizer>(m, "_CppOptimizer")
      .def("__init__", [](Optimizer* self, const std::string&, nb::list, nb::dict) {
        throw nb::type_error("use ember._C._make_optimizer");
      })
      .def("sync", &sync, nb::arg("param_groups"))
      // The whole update runs without the GIL: data loader threads keep working meanwhile.
      .def("step", [](Optimizer& opt, nb::list groups) {
        // its state (momentum buffers, step counts) lives in C++ objects a replayed graph would
        // not update: ember.compile runs a function that steps one eagerly
        compiler::detail::note_break("Optimizer.step() keeps its state in C++ (ember's optimizers are fused already)");
        sync(opt, groups);
        nb::gil_scoped_release release;
        opt.step();
      }, nb::arg("param_groups"))
      .def("state_dict_state", [](Optimizer& opt, nb::list groups) {
        sync(opt, groups);
        return value_to_python(opt.state_dict().at("state"));
      }, nb::arg("param_groups"))
      .def("load_state_dict", [](Optimizer& opt, nb::list groups, nb::handle sd) {
        sync(opt, groups);
        Value v = value_from_python(sd, "Optimizer.load_state_dict");
        nb::gil_scoped_release release;
        opt.load_state_dict(v);
      }, nb::arg("param_groups"), nb::arg("state_dict"))
      // Per-parameter state as a dict sharing the C++ tensors (None when the parameter has none).
      .def("state_get", [](Optimizer& opt, const Tensor& p) -> nb::object {
        Value* v = find_state(opt, p);
        return v ? value_to_python(*v) : nb::none();
      })
      .def("state_set", [](Optimizer& opt, const Tensor& p, nb::handle d) {
        Value v = value_from_python(d, "optimizer.state");
        if (!v.is_dict()) throw nb::type_error("optimizer.state values must be dicts");
        opt.state_for(p) = std::move(v);
      })
      .def("state_del", [](Optimizer& opt, const Tensor& p) {
        std::erase_if(opt.state, [&](const auto& kv) { return kv.first == p.impl(); });
      })
      .def("state_clear", [](Optimizer& opt) { opt.state.clear(); })
      // Which of `params` have state (one pass instead of a lookup per parameter).
      .def("state_mask", [](Optimizer& opt, nb::list params) {
        std::unordered_map<TensorImpl*, bool> has;
        for (const auto& kv : opt.state) has[kv.first] = true;
        nb::list out;
        for (nb::handle p : params) out.append(nb::bool_(has.count(tensor_of(p).impl()) > 0));
        return out;
      });
  m.def("_make_optimizer", &make_optimizer, nb::arg("kind"), nb::arg("param_groups"), nb::arg("defaults"));

  // Optimizer.zero_grad for every optimizer (Python subclasses included): one C++ loop.
  m.def("_zero_grad", [](nb::list groups, bool set_to_none) {
    NoGradGuard guard;
    for (nb::handle g : groups) {
      nb::object params = nb::borrow<nb::dict>(g)["params"];
      for (nb::handle h : params) {
        Tensor* p = nullptr;
        if (!nb::try_cast<Tensor*>(h, p) || !p || !p->grad().defined()) continue;
        if (set_to_none) {
          p->set_grad(Tensor());
        } else {
          Tensor& gr = p->mutable_grad();
          if (gr.grad_fn()) gr = gr.detach();  // torch: detach_() a grad that is part of a graph
          gr.zero_();
        }
      }
    }
  }, nb::arg("param_groups"), nb::arg("set_to_none") = true);
}

}  // namespace ember::python
