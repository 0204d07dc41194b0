#pragma once
// Python objects <-> ember::Value (the checkpoint object model, include/ember/serialize/value.h).
// Shared by bind_serialize.cpp (save/load), bind_optim.cpp (optimizer options and state) and
// bind_data.cpp. Defined in bind_serialize.cpp.
#include "bind.h"

namespace ember::python {

// None/bool/int/float/str/Tensor (nn.Parameter included), list, tuple (ember.Size and namedtuples
// too) and dict (OrderedDict too, order kept). Anything else is a TypeError naming its type;
// `what` names the caller in that message ("ember.save").
Value value_from_python(nb::handle obj, const char* what);
// The same, but false instead of an error (optimizer group options may hold arbitrary objects).
bool try_value_from_python(nb::handle obj, Value& out);
// dict -> dict, list -> list, tuple -> tuple, tensors shared (not copied).
nb::object value_to_python(const Value& v);

}  // namespace ember::python
