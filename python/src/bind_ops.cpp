// Placeholder until this part of the binding is written.
#include "bind.h"

namespace ember::python {
void bind_ops(nb::module_& m, nb::class_<Tensor>& cls) {}
}  // namespace ember::python
