// Autograd from Python: the Tensor attributes (.grad, .requires_grad, .grad_fn, hooks, .data,
// backward), ember.autograd.backward/grad, grad mode, graph nodes as Python objects, and custom
// Python Functions recorded as ember graph nodes (apply_custom).
//
// The engine runs with the GIL released; everything it calls back into Python (tensor hooks,
// Function.backward) takes the GIL itself. Python objects captured by C++ closures live in
// PyRef holders, which take the GIL to drop their reference: a graph can be freed on a thread
// that does not hold it (a graph built and dropped inside backward).
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>

#include "autograd/meta.h"
#include "bind.h"
#include "ember/autograd/anomaly_mode.h"
#include "ember/autograd/saved_tensor_hooks.h"
#include "ember/compile/capture.h"

namespace ember::python {
namespace {

using autograd::Node;
using autograd::variable_list;

// ---- Python references held by C++ closures

struct PyRef {
  nb::object obj;
  explicit PyRef(nb::object o) : obj(std::move(o)) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() {
    if (!obj.is_valid()) return;
    if (!nb::is_alive()) { obj.release(); return; }  // interpreter gone: leak rather than crash
    nb::gil_scoped_acquire gil;
    obj.reset();
  }
};

// ---- argument conversion

bool is_tensor(nb::handle h) { return nb::isinstance<Tensor>(h); }
std::string type_name_of(nb::handle o) { return nb::cast<std::string>(nb::handle(o.type()).attr("__name__")); }

// A tensor or a sequence of tensors, as torch.autograd.backward/grad take them. `allow_none`:
// None entries become undefined tensors (grad_tensors / grad_outputs).
variable_list tensors_from(nb::handle obj, const char* op, const char* arg, bool allow_none = false) {
  variable_list out;
  if (obj.is_none()) return out;
  if (is_tensor(obj)) { out.push_back(tensor_of(obj)); return out; }
  if (!nb::isinstance<nb::sequence>(obj) || nb::isinstance<nb::str>(obj))
    throw nb::type_error((std::string(op) + "(): argument '" + arg + "' must be a Tensor or a sequence of Tensors, not " +
                          type_name_of(obj).c_str()).c_str());
  size_t i = 0;
  for (nb::handle item : obj) {
    if (is_tensor(item)) out.push_back(tensor_of(item));
    else if (allow_none && item.is_none()) out.push_back(Tensor());
    else
      throw nb::type_error((std::string(op) + "(): element " + std::to_string(i) + " of argument '" + arg +
                            "' must be a Tensor" + (allow_none ? " or None" : "") + ", not " +
                            type_name_of(item).c_str()).c_str());
    ++i;
  }
  return out;
}

nb::object tensor_or_none(const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

// ---- graph nodes as Python objects

// The C++ payload of every grad_fn object. Each node name gets its own Python subclass
// (MulBackward0, AccumulateGrad, ...) as in torch, and a node keeps one Python object while
// that object lives, so `y.grad_fn is y.grad_fn`.
struct PyNode {
  std::shared_ptr<Node> node;
  ~PyNode();
};

std::unordered_map<Node*, PyObject*>& live_node_objects() {
  static auto* m = new std::unordered_map<Node*, PyObject*>();  // borrowed; entries die with their object
  return *m;
}
// Custom Python Function nodes -> their ctx object, so grad_fn.saved_tensors & co. work.
std::unordered_map<Node*, PyObject*>& function_ctx_of() {
  static auto* m = new std::unordered_map<Node*, PyObject*>();
  return *m;
}

PyNode::~PyNode() { live_node_objects().erase(node.get()); }

nb::handle node_base_type;  // ember._C.Node (kept alive by the module)

nb::object node_type_for(const std::string& name) {
  static auto* types = new std::unordered_map<std::string, nb::object>();
  auto it = types->find(name);
  if (it != types->end()) return it->second;
  nb::dict ns;
  ns["__module__"] = "ember.autograd.graph";
  ns["__qualname__"] = name.c_str();
  nb::object meta = nb::borrow(reinterpret_cast<PyObject*>(Py_TYPE(node_base_type.ptr())));
  nb::object type = meta(nb::str(name.c_str()), nb::make_tuple(node_base_type), ns);
  types->emplace(name, type);
  return type;
}

nb::object node_object(const std::shared_ptr<Node>& node) {
  if (!node) return nb::none();
  auto& live = live_node_objects();
  if (auto it = live.find(node.get()); it != live.end()) return nb::borrow(it->second);
  nb::object obj = nb::inst_alloc(node_type_for(node->name()));
  new (nb::inst_ptr<PyNode>(obj)) PyNode{node};
  nb::inst_mark_ready(obj);
  live[node.get()] = obj.ptr();
  return obj;
}

nb::tuple next_functions(const PyNode& self) {
  const auto& edges = self.node->next_edges();
  nb::list out;
  for (const auto& e : edges) out.append(nb::make_tuple(node_object(e.fn), e.input_nr));
  return nb::tuple(out);
}

// ---- node hooks: gradients as a tuple (None where undefined) and back

nb::tuple grads_tuple(const variable_list& grads) {
  nb::list out;
  for (const auto& g : grads) out.append(g.defined() ? nb::cast(g) : nb::none());
  return nb::tuple(out);
}

variable_list node_hook_result(nb::handle r, const char* what) {
  if (r.is_none()) return {};
  if (!nb::isinstance<nb::tuple>(r) && !nb::isinstance<nb::list>(r))
    throw nb::type_error((std::string(what) + ": a node hook must return None or a tuple of gradients, not " +
                          type_name_of(r)).c_str());
  variable_list out;
  for (nb::handle g : r) {
    if (g.is_none()) out.emplace_back();
    else if (is_tensor(g)) out.push_back(tensor_of(g));
    else throw nb::type_error((std::string(what) + ": a node hook returned a " + type_name_of(g) +
                               " where a Tensor or None was expected").c_str());
  }
  return out;
}

// ---- tensor hooks

autograd::TensorHook python_tensor_hook(nb::object fn) {
  auto ref = std::make_shared<PyRef>(std::move(fn));
  return [ref](const Tensor& grad) -> Tensor {
    nb::gil_scoped_acquire gil;
    nb::object r = ref->obj(grad);
    if (r.is_none()) return Tensor();
    if (!is_tensor(r))
      throw nb::type_error((std::string("hook returned an object of type ") +
                            type_name_of(r).c_str() +
                            "; a tensor hook must return a Tensor or None").c_str());
    return tensor_of(r);
  };
}

// ---- custom Python Functions

// The ctx object Function.forward/backward receive. Arbitrary attributes go in its __dict__.
struct FunctionCtx {
  autograd::AutogradContext* cpp = nullptr;  // the node's context; null once the node is gone
  std::vector<bool> needs_input_grad;
  bool in_forward = false;
  nb::object to_save;  // tuple given to save_for_backward, turned into SavedVariables by apply_custom
};

// What a Python Function's node keeps for its backward: the ctx and the Function class.
struct FunctionState {
  nb::object ctx;  // FunctionCtx
  nb::object cls;
  Node* node = nullptr;
  std::vector<int> tensor_arg_pos;  // forward argument index of each tensor input
  size_t num_args = 0;
  std::vector<bool> output_is_tensor;  // per element of forward's result (as a tuple)
  ~FunctionState() {
    if (!nb::is_alive()) { ctx.release(); cls.release(); return; }
    nb::gil_scoped_acquire gil;
    if (node) function_ctx_of().erase(node);
    nb::inst_ptr<FunctionCtx>(ctx)->cpp = nullptr;
    ctx.reset();
    cls.reset();
  }
};

std::string py_class_name(nb::handle cls) { return nb::cast<std::string>(cls.attr("__name__")); }

// Runs cls.backward(ctx, *grads) for the engine (GIL taken here) and maps its results onto the
// tensor inputs of forward.
variable_list call_python_backward(FunctionState& st, const variable_list& grads) {
  nb::gil_scoped_acquire gil;
  std::string name = py_class_name(st.cls) + "Backward";
  nb::list args;
  args.append(st.ctx);
  size_t g = 0;
  for (bool is_t : st.output_is_tensor) {
    if (is_t) args.append(tensor_or_none(grads[g++]));
    else args.append(nb::none());
  }
  nb::object result = st.cls.attr("backward")(*nb::tuple(args));
  nb::tuple results = nb::isinstance<nb::tuple>(result) ? nb::borrow<nb::tuple>(result) : nb::make_tuple(result);
  size_t n = results.size();
  if (n < st.num_args)
    throw std::runtime_error("function " + name + " returned an incorrect number of gradients (expected " +
                             std::to_string(st.num_args) + ", got " + std::to_string(n) + ")");
  // torch allows extra trailing Nones (a Function whose backward returns one per input plus more).
  for (size_t i = st.num_args; i < n; ++i)
    if (!results[i].is_none())
      throw std::runtime_error("function " + name + " returned an incorrect number of gradients (expected " +
                               std::to_string(st.num_args) + ", got " + std::to_string(n) + ")");
  variable_list out(st.tensor_arg_pos.size());
  size_t k = 0;
  for (size_t i = 0; i < st.num_args; ++i) {
    nb::handle r = results[i];
    bool tensor_arg = k < st.tensor_arg_pos.size() && st.tensor_arg_pos[k] == int(i);
    if (!tensor_arg) {
      if (!r.is_none())
        throw std::runtime_error("function " + name + " returned a gradient different than None at position " +
                                 std::to_string(i + 1) + ", but the corresponding forward input was not a Variable");
      continue;
    }
    if (!r.is_none()) {
      if (!is_tensor(r))
        throw nb::type_error(("function " + name + " returned a gradient of type " +
                              type_name_of(r).c_str() + " at position " +
                              std::to_string(i + 1) + "; expected a Tensor or None").c_str());
      out[k] = tensor_of(r);
    }
    ++k;
  }
  return out;
}

// Function.apply(*args, **kwargs): runs cls.forward(ctx, ...) through apply_custom, so the
// outputs get a node of ember's graph whose backward calls cls.backward. With
// `setup_context` (torch 2's style), forward(*args) runs without ctx and
// cls.setup_context(ctx, args, output) fills the ctx.
nb::object function_apply(nb::handle cls, bool setup_context, nb::args args, nb::kwargs kwargs) {
  auto st = std::make_shared<FunctionState>();
  st->cls = nb::borrow(cls);
  st->ctx = nb::cast(FunctionCtx{});
  FunctionCtx& ctx = *nb::inst_ptr<FunctionCtx>(st->ctx);
  st->num_args = args.size();
  variable_list inputs;
  int pos = 0;
  for (nb::handle a : args) {
    bool t = is_tensor(a);
    // torch reports requires_grad per argument here, whatever the grad mode.
    ctx.needs_input_grad.push_back(t && tensor_of(a).requires_grad());
    if (t) { inputs.push_back(tensor_of(a)); st->tensor_arg_pos.push_back(pos); }
    ++pos;
  }
  nb::object result;
  bool single = false;
  auto forward = [&](autograd::AutogradContext* c) -> variable_list {
    ctx.cpp = c;
    ctx.in_forward = true;
    nb::list fargs;
    if (!setup_context) fargs.append(st->ctx);
    for (nb::handle a : args) fargs.append(a);
    try {
      result = cls.attr("forward")(*nb::tuple(fargs), **kwargs);
      if (setup_context) cls.attr("setup_context")(st->ctx, args, result);
    } catch (...) {
      ctx.in_forward = false;
      throw;
    }
    ctx.in_forward = false;
    single = !nb::isinstance<nb::tuple>(result);
    nb::tuple outs = single ? nb::make_tuple(result) : nb::borrow<nb::tuple>(result);
    variable_list tensors;
    for (nb::handle o : outs) {
      st->output_is_tensor.push_back(is_tensor(o));
      if (is_tensor(o)) tensors.push_back(tensor_of(o));
    }
    if (ctx.to_save.is_valid()) {
      variable_list saved;
      for (nb::handle s : ctx.to_save) saved.push_back(s.is_none() ? Tensor() : tensor_of(s));
      c->save_for_backward(saved);
      ctx.to_save.reset();
    }
    return tensors;
  };
  auto backward = [st](autograd::AutogradContext*, const variable_list& grads) {
    return call_python_backward(*st, grads);
  };
  // apply_custom names the node after a demangled C++ type name; a length-prefixed identifier
  // is the mangled form of itself, so Exp's node is "ExpBackward" as in torch.
  std::string name = py_class_name(cls);
  std::string mangled = std::to_string(name.size()) + name;
  variable_list outs = autograd::apply_custom(mangled.c_str(), forward, backward, inputs);

  // apply_custom may have replaced an output (an input returned as is becomes a view of it):
  // rebuild forward's result from its outputs.
  nb::tuple orig = single ? nb::make_tuple(result) : nb::borrow<nb::tuple>(result);
  nb::list rebuilt;
  size_t k = 0;
  for (nb::handle o : orig) {
    if (is_tensor(o)) {
      const Tensor& t = outs[k++];
      rebuilt.append(t.is_same(tensor_of(o)) ? nb::borrow(o) : nb::cast(t));
    } else {
      rebuilt.append(o);
    }
  }
  for (const auto& t : outs) {
    if (!t.defined() || !t.grad_fn()) continue;
    st->node = t.grad_fn().get();
    function_ctx_of()[st->node] = st->ctx.ptr();
    break;
  }
  return single ? nb::object(rebuilt[0]) : nb::object(nb::tuple(rebuilt));
}

// ---- grad mode

thread_local bool inference_mode_on = false;

// ---- Tensor.data: an alias of the same memory with its own version counter, so changes made
// through it are invisible to autograd's saved-tensor checks (what .data is for).
Tensor data_alias(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(t.impl()->storage(), t.dtype(), t.sizes(), t.strides(),
                                           t.storage_offset());
  return Tensor(std::move(impl));
}

void run_backward(const variable_list& outputs, const variable_list& grads, std::optional<bool> retain_graph,
                  bool create_graph, const variable_list& inputs) {
  nb::gil_scoped_release release;
  autograd::backward(outputs, grads, retain_graph, create_graph, inputs);
}

}  // namespace

void bind_autograd(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- hooks' handles
  nb::class_<autograd::RemovableHandle>(m, "RemovableHandle")
      .def("remove", &autograd::RemovableHandle::remove)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](autograd::RemovableHandle& h, nb::args) { h.remove(); });

  // ---- graph nodes
  auto node_cls = nb::class_<PyNode>(m, "Node");
  node_base_type = node_cls;
  node_cls.def("name", [](const PyNode& n) { return n.node->name(); })
      .def_prop_ro("next_functions", &next_functions)
      .def_prop_ro("variable", [](const PyNode& n) -> nb::object {
        // AccumulateGrad nodes expose the leaf they accumulate into (torch's .variable).
        if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(n.node.get())) return nb::cast(Tensor(acc->leaf()));
        throw nb::attribute_error(("'" + n.node->name() + "' object has no attribute 'variable'").c_str());
      })
      .def("_sequence_nr", [](const PyNode& n) { return n.node->sequence_nr(); })
      .def("register_prehook", [](const PyNode& n, nb::object fn) {
        // fn(grad_outputs) -> None or replacements; runs on the engine's thread with the GIL.
        if (!PyCallable_Check(fn.ptr())) throw nb::type_error("register_prehook(): the hook must be callable");
        auto ref = std::make_shared<PyRef>(std::move(fn));
        int id = n.node->add_node_pre_hook([ref](const variable_list& grad_outputs) -> variable_list {
          nb::gil_scoped_acquire gil;
          return node_hook_result(ref->obj(grads_tuple(grad_outputs)), "register_prehook");
        });
        std::weak_ptr<Node> weak = n.node;
        return autograd::RemovableHandle([weak, id] {
          if (auto node = weak.lock()) node->remove_node_hook(id);
        });
      }, nb::arg("fn"))
      .def("register_hook", [](const PyNode& n, nb::object fn) {
        // fn(grad_inputs, grad_outputs) -> None or replacements for grad_inputs.
        if (!PyCallable_Check(fn.ptr())) throw nb::type_error("register_hook(): the hook must be callable");
        auto ref = std::make_shared<PyRef>(std::move(fn));
        int id = n.node->add_node_post_hook([ref](const variable_list& grad_inputs, const variable_list& grad_outputs)
                                                -> variable_list {
          nb::gil_scoped_acquire gil;
          return node_hook_result(ref->obj(grads_tuple(grad_inputs), grads_tuple(grad_outputs)), "register_hook");
        });
        std::weak_ptr<Node> weak = n.node;
        return autograd::RemovableHandle([weak, id] {
          if (auto node = weak.lock()) node->remove_node_hook(id);
        });
      }, nb::arg("fn"))
      .def_prop_ro("metadata", [](const PyNode& n) -> nb::object {
        // A dict that lives as long as the node (torch's Node.metadata).
        auto& slot = n.node->binding_data();
        if (!slot) slot = std::make_shared<PyRef>(nb::dict());
        return static_cast<PyRef*>(slot.get())->obj;
      })
      .def("__repr__", [](nb::handle self) {
        char addr[32];
        std::snprintf(addr, sizeof addr, "%p", (void*)self.ptr());
        return "<" + nb::inst_ptr<PyNode>(self)->node->name() + " object at " + addr + ">";
      })
      .def("__getattr__", [](const PyNode& n, const std::string& attr) -> nb::object {
        // A Python Function's node answers for its ctx (saved_tensors, attributes set in forward).
        auto& ctxs = function_ctx_of();
        if (auto it = ctxs.find(n.node.get()); it != ctxs.end() && attr.rfind("__", 0) != 0)
          return nb::handle(it->second).attr(attr.c_str());
        throw nb::attribute_error(("'" + n.node->name() + "' object has no attribute '" + attr + "'").c_str());
      });

  // ---- custom Functions
  nb::class_<FunctionCtx>(m, "FunctionCtx", nb::dynamic_attr(), nb::is_weak_referenceable())
      .def("save_for_backward", [](FunctionCtx& c, nb::args tensors) {
        size_t i = 0;
        for (nb::handle a : tensors) {
          if (!a.is_none() && !is_tensor(a))
            throw nb::type_error(("save_for_backward can only save variables, but argument " + std::to_string(i) +
                                  " is of type " + type_name_of(a)).c_str());
          ++i;
        }
        EMBER_CHECK(c.in_forward, "save_for_backward can only be called inside forward");
        c.to_save = tensors;
      })
      .def_prop_ro("saved_tensors", [](const FunctionCtx& c) {
        EMBER_CHECK(c.cpp && !c.in_forward,
                    "saved_tensors is only available in backward, while the Function's node is alive");
        nb::list out;
        for (const auto& t : c.cpp->get_saved_variables()) out.append(tensor_or_none(t));
        return nb::tuple(out);
      })
      .def_prop_ro("needs_input_grad", [](const FunctionCtx& c) {
        nb::list out;
        for (bool b : c.needs_input_grad) out.append(b);
        return nb::tuple(out);
      })
      .def("mark_non_differentiable", [](FunctionCtx& c, nb::args tensors) {
        EMBER_CHECK(c.in_forward && c.cpp, "mark_non_differentiable can only be called inside forward");
        c.cpp->mark_non_differentiable(tensors_from(tensors, "mark_non_differentiable", "args"));
      })
      .def("mark_dirty", [](FunctionCtx&, nb::args) {
        throw nb::builtin_exception(nb::exception_type::runtime_error,
                                    "ctx.mark_dirty: ember's custom Functions do not support in-place forwards yet; "
                                    "return a new tensor from forward instead");
      })
      .def("set_materialize_grads", [](FunctionCtx&, bool value) {
        // ember always hands backward zeros for outputs that got no gradient (torch's default).
        EMBER_CHECK(value, "ctx.set_materialize_grads(False) is not supported by ember: backward always "
                           "receives zero-filled gradients for unused outputs");
      });
  m.def("_function_apply", &function_apply);

  // ---- backward / grad
  m.def("_autograd_backward", [](nb::handle tensors, nb::handle grad_tensors, std::optional<bool> retain_graph,
                                 bool create_graph, nb::handle inputs) {
    variable_list outs = tensors_from(tensors, "backward", "tensors");
    variable_list grads = tensors_from(grad_tensors, "backward", "grad_tensors", true);
    variable_list ins = tensors_from(inputs, "backward", "inputs");
    EMBER_CHECK(!outs.empty(), "backward(): no tensors given to differentiate");
    EMBER_CHECK(grads.empty() || grads.size() == outs.size(), "backward(): got ", grads.size(),
                " grad_tensors for ", outs.size(), " tensors");
    EMBER_CHECK(inputs.is_none() || !ins.empty(), "backward(): 'inputs' argument to backward() cannot be empty.");
    run_backward(outs, grads, retain_graph, create_graph, ins);
  }, nb::arg("tensors"), nb::arg("grad_tensors").none() = nb::none(), nb::arg("retain_graph").none() = nb::none(),
     nb::arg("create_graph") = false, nb::arg("inputs").none() = nb::none());

  m.def("_autograd_grad", [](nb::handle outputs, nb::handle inputs, nb::handle grad_outputs,
                             std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
    variable_list outs = tensors_from(outputs, "grad", "outputs");
    variable_list ins = tensors_from(inputs, "grad", "inputs");
    variable_list grads = tensors_from(grad_outputs, "grad", "grad_outputs", true);
    EMBER_CHECK(!outs.empty(), "grad(): no outputs given to differentiate");
    EMBER_CHECK(!ins.empty(), "grad requires non-empty inputs.");
    EMBER_CHECK(grads.empty() || grads.size() == outs.size(), "grad(): got ", grads.size(),
                " grad_outputs for ", outs.size(), " outputs");
    variable_list result;
    {
      nb::gil_scoped_release release;
      result = autograd::grad(outs, ins, grads, retain_graph, create_graph, allow_unused);
    }
    nb::list out;
    for (const auto& t : result) out.append(tensor_or_none(t));
    return nb::tuple(out);
  }, nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs").none() = nb::none(),
     nb::arg("retain_graph").none() = nb::none(), nb::arg("create_graph") = false, nb::arg("allow_unused") = false);

  // ---- grad mode (thread-local in the C++ library, as torch's)
  m.def("is_grad_enabled", &ember::is_grad_enabled);
  // torch.autograd.graph.saved_tensors_hooks: Python's pack/unpack as this thread's innermost
  // pair. The engine unpacks on its own threads, so each call takes the GIL; what pack returned
  // is held in a PyRef, released with the GIL wherever the graph dies.
  m.def("_push_saved_tensors_hooks", [](nb::object pack, nb::object unpack) {
    if (!PyCallable_Check(pack.ptr()) || !PyCallable_Check(unpack.ptr()))
      throw nb::type_error("saved_tensors_hooks(): pack_hook and unpack_hook must be callable");
    auto pack_ref = std::make_shared<PyRef>(std::move(pack));
    auto unpack_ref = std::make_shared<PyRef>(std::move(unpack));
    autograd::SavedTensorHooks hooks;
    hooks.pack = [pack_ref](const Tensor& t) -> std::shared_ptr<void> {
      nb::gil_scoped_acquire gil;
      return std::make_shared<PyRef>(pack_ref->obj(nb::cast(t)));
    };
    hooks.unpack = [unpack_ref](const std::shared_ptr<void>& packed) -> Tensor {
      nb::gil_scoped_acquire gil;
      nb::object out = unpack_ref->obj(static_cast<PyRef*>(packed.get())->obj);
      if (!is_tensor(out))
        throw nb::type_error(("saved_tensors_hooks(): the unpack hook must return a Tensor, but returned " +
                              type_name_of(out)).c_str());
      return tensor_of(out);
    };
    autograd::push_saved_tensor_hooks(std::move(hooks));
  }, nb::arg("pack_hook"), nb::arg("unpack_hook"));
  m.def("_pop_saved_tensors_hooks", [] { autograd::pop_saved_tensor_hooks(); });
  m.def("_set_anomaly_mode", &autograd::set_anomaly_mode, nb::arg("enabled"), nb::arg("check_nan") = true);
  m.def("_set_grad_enabled", &ember::set_grad_enabled);
  m.def("is_inference_mode_enabled", [] { return inference_mode_on; });
  // Enters or leaves inference mode on this thread; returns the previous (inference, grad) state.
  m.def("_enter_inference_mode", [](bool on) {
    auto prev = std::make_pair(inference_mode_on, ember::is_grad_enabled());
    inference_mode_on = on;
    ember::set_grad_enabled(!on);  // as torch's InferenceMode(false), leaving it enables grad
    return prev;
  });
  m.def("_exit_inference_mode", [](std::pair<bool, bool> prev) {
    inference_mode_on = prev.first;
    ember::set_grad_enabled(prev.second);
  });

  // ---- Tensor attributes
  nb::object property = nb::module_::import_("builtins").attr("property");
  auto grad_get = nb::cpp_function([](const Tensor& t) { return tensor_or_none(t.grad()); });
  auto grad_set = nb::cpp_function([](Tensor& t, nb::handle g) {
    compiler::detail::note_break("assigning Tensor.grad changes state outside the graph");
    if (g.is_none()) { t.set_grad(Tensor()); return; }
    if (!is_tensor(g))
      throw nb::type_error((std::string("assigned grad expected to be a Tensor or None but got grad of type ") +
                            type_name_of(g).c_str()).c_str());
    const Tensor& v = tensor_of(g);
    EMBER_CHECK(v.dtype() == t.dtype(), "assigned grad has data of a different type");
    EMBER_CHECK(v.device() == t.device(), "assigned grad has data located on a different device");
    t.set_grad(v);
  }, nb::arg("self"), nb::arg("value").none());
  auto grad_del = nb::cpp_function([](Tensor& t) {
    compiler::detail::note_break("deleting Tensor.grad changes state outside the graph");
    t.set_grad(Tensor());
  });
  cls.attr("grad") = property(grad_get, grad_set, grad_del, "The gradient accumulated by backward(), or None.");

  cls.def_prop_rw("requires_grad", [](const Tensor& t) { return t.requires_grad(); },
                  [](Tensor& t, bool on) {
                    // The property, unlike requires_grad_(), refuses any change on a non-leaf.
                    if (!t.is_leaf())
                      throw nb::builtin_exception(
                          nb::exception_type::runtime_error,
                          on ? "you can only change requires_grad flags of leaf variables."
                             : "you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().");
                    compiler::detail::note_break("setting requires_grad changes state outside the graph");
                    t.requires_grad_(on);
                  });
  cls.def("requires_grad_", [](nb::pointer_and_handle<Tensor> self, bool on) {
    compiler::detail::note_break("requires_grad_() changes state outside the graph");
    self.p->requires_grad_(on);
    return nb::borrow(self.h);
  }, nb::arg("requires_grad") = true);
  cls.def_prop_ro("is_leaf", &Tensor::is_leaf);
  cls.def_prop_ro("grad_fn", [](const Tensor& t) { return node_object(t.grad_fn()); });
  cls.def_prop_ro("output_nr", &Tensor::output_nr);
  cls.def_prop_ro("_version", &Tensor::_version);
  cls.def("retain_grad", [](Tensor& t) {
    compiler::detail::note_break("retain_grad() changes state outside the graph");
    t.retain_grad();
  });
  cls.def_prop_ro("retains_grad", &Tensor::retains_grad);
  cls.def("detach", &Tensor::detach);
  cls.def("detach_", [](nb::pointer_and_handle<Tensor> self) {
    self.p->detach_();
    return nb::borrow(self.h);
  });
  // Tensor.t_(), squeeze_(), transpose_(), ...: this tensor (every holder of its impl) takes
  // `view`'s geometry and, inside a graph, its history, so it becomes that view in place as
  // torch's in-place view ops do. `view` is a view of this tensor made by the caller.
  cls.def("_become_view_", [](nb::pointer_and_handle<Tensor> self, const Tensor& view) {
    compiler::detail::note_break("an in-place view op changes a tensor's shape outside the graph");
    Tensor& t = *self.p;
    t.set_data(view);
    if (autograd::AutogradMeta* m = autograd::get_meta(view); m && m->grad_fn)
      autograd::set_history(t, m->grad_fn, m->output_nr);
    return nb::borrow(self.h);
  }, nb::arg("view"));
  cls.def_prop_rw("data", [](const Tensor& t) { return data_alias(t); },
                  [](Tensor& t, const Tensor& v) {
                    compiler::detail::note_break("assigning Tensor.data changes state outside the graph");
                    t.set_data(v);
                  });
  cls.def("backward", [](const Tensor& self, nb::handle gradient, std::optional<bool> retain_graph,
                         bool create_graph, nb::handle inputs) {
    Tensor g;
    if (!gradient.is_none()) {
      if (!is_tensor(gradient))
        throw nb::type_error((std::string("backward(): argument 'gradient' must be a Tensor or None, not ") +
                              type_name_of(gradient).c_str()).c_str());
      g = tensor_of(gradient);
    }
    variable_list ins = tensors_from(inputs, "backward", "inputs");
    EMBER_CHECK(inputs.is_none() || !ins.empty(), "backward(): 'inputs' argument to backward() cannot be empty.");
    run_backward({self}, {g}, retain_graph, create_graph, ins);
  }, nb::arg("gradient").none() = nb::none(), nb::arg("retain_graph").none() = nb::none(),
     nb::arg("create_graph") = false, nb::arg("inputs").none() = nb::none());
  cls.def("register_hook", [](const Tensor& t, nb::object fn) {
    if (!PyCallable_Check(fn.ptr())) throw nb::type_error("register_hook(): the hook must be callable");
    compiler::detail::note_break("register_hook() attaches Python code the graph does not replay");
    return t.register_hook(python_tensor_hook(std::move(fn)));
  }, nb::arg("hook"));
  cls.def("register_post_accumulate_grad_hook", [](const Tensor& t, nb::object fn) {
    if (!PyCallable_Check(fn.ptr()))
      throw nb::type_error("register_post_accumulate_grad_hook(): the hook must be callable");
    auto ref = std::make_shared<PyRef>(std::move(fn));
    return autograd::register_post_accumulate_grad_hook(t, [ref](const Tensor& leaf) {
      nb::gil_scoped_acquire gil;
      ref->obj(leaf);
    });
  }, nb::arg("hook"));
}

}  // namespace ember::python
