#pragma once
// The elementwise reductions Gloo's allreduce and reduce apply to a dtype: out = a (op) b over n
// elements. Half types reduce in float and round once per step, as torch's Gloo backend.
#include <functional>

#include "ember/core/dtype.h"
#include "ember/distributed/process_group.h"

namespace ember::distributed {

using ReduceFunction = std::function<void(void*, const void*, const void*, size_t)>;

// Whether `op` applies to `dtype` (AVG: floating types only; no complex ordering for MIN/MAX).
bool reduce_supported(DType dtype, ReduceOp op);
ReduceFunction reduce_function(DType dtype, ReduceOp op);

}  // namespace ember::distributed
