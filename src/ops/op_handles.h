#pragma once
// ember::ops::NAME() returns the dispatcher entry of op NAME (listed in op_list.h).
// Backends include this to register kernels; public functions call through it.
#include <optional>
#include <string>
#include <tuple>

#include "ember/core/generator.h"
#include "ember/dispatch/op.h"

namespace ember::ops {
#define EMBER_OP(name, ...) ::ember::Op<__VA_ARGS__>& name();
#include "ops/op_list.h"
#undef EMBER_OP
}  // namespace ember::ops
