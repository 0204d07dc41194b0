#pragma once
// The dtype rule of the EMBER_BINARY_ARITH_OPS family, one definition for every backend's kernels
// (CPU, CUDA, meta): atan2 of integers computes in the default float, the rest in the promoted type.
#include <string_view>

#include "ops/elementwise_plan.h"

namespace ember {

inline IterConfig arith_config(const char* name) {
  if (std::string_view(name).starts_with("atan2")) return {.op_name = name, .int_to_float = true};
  return {.op_name = name};
}

}  // namespace ember
