// Defines the dispatcher entry of every op in op_list.h. Function-local statics: an entry exists
// before any static registrar in another file touches it.
#include "ops/op_handles.h"

namespace ember::ops {
#define EMBER_OP(name, ...) \
  ::ember::Op<__VA_ARGS__>& name() { static ::ember::Op<__VA_ARGS__> op(#name); return op; }
#include "ops/op_list.h"
#undef EMBER_OP
}  // namespace ember::ops
