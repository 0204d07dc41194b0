// ember._C: the extension module behind `import ember`. Each bind_* lives in its own file
// (bind.h lists them) so touching one part rebuilds one translation unit.
#include "bind.h"
#include "bind_ops.h"

// ember.linalg, torch.det & co, cdist (bind_linalg.cpp); declared here so that adding it rebuilt
// no other binding file.
namespace ember::python {
void bind_linalg(nb::module_& m, TensorClass& cls);
void bind_complex_fft(nb::module_& m, TensorClass& cls);  // bind_complex_fft.cpp
void bind_cuda(nb::module_& m, TensorClass& cls);  // bind_cuda.cpp: ember._C._cuda
void bind_amp(nb::module_& m);  // bind_amp.cpp: ember._C._amp
void bind_profiler(nb::module_& m);  // bind_profiler.cpp: ember._C._profiler
void bind_distributed(nb::module_& m);  // bind_distributed.cpp: ember._C._distributed
void bind_models(nb::module_& m);  // bind_models.cpp: ember._C._models
void bind_compile(nb::module_& m);  // bind_compile.cpp: ember._C._compile
void bind_library(nb::module_& m);  // bind_library.cpp: ember._C._library
}

NB_MODULE(_C, m) {
  using namespace ember::python;
  // The dtype singletons and the Size type live as long as the process, by design.
  nb::set_leak_warnings(false);
  m.doc() = "ember's C++ core (nanobind bindings); use the `ember` package, not this module.";
  bind_core(m);
  // Tensors take arbitrary attributes and weak references, as torch's do (hooks, caches and
  // user code rely on both).
  nb::class_<ember::Tensor> cls(m, "Tensor", nb::dynamic_attr(), nb::is_weak_referenceable());
  bind_tensor(m, cls);
  bind_indexing(cls);
  bind_ops(m, cls);
  bind_linalg(m, cls);
  bind_numpy_operators(cls);
  bind_autograd(m, cls);
  bind_nn(m);
  bind_nn_layers(m);
  bind_optim(m);
  bind_lr_scheduler(m);
  bind_serialize(m);
  bind_data(m);
  bind_vision(m);
  bind_special(m, cls);  // after bind_ops: uses its return_types
  bind_complex_fft(m, cls);
  bind_cuda(m, cls);  // after bind_tensor: replaces its host-only pin_memory/is_pinned
  bind_amp(m);
  bind_profiler(m);
  bind_models(m);
  bind_compile(m);
  bind_library(m);
  bind_distributed(m);  // last: its error classes are translated before the generic ones
}
