// Placeholder until this part of the binding is written.
#include "bind.h"

namespace ember::python {
void bind_vision(nb::module_& m) {}
}  // namespace ember::python
