// The float32 matmul precision (include/ember/matmul_precision.h): one atomic, read by the CUDA
// GEMM kernels (src/cuda/blas_ops.cpp) on every float32 / complex64 product.
#include "ember/matmul_precision.h"

#include <atomic>

#include "ember/core/errors.h"

namespace ember {
namespace {

std::atomic<Float32MatmulPrecision> g_precision{Float32MatmulPrecision::Highest};

}  // namespace

void set_float32_matmul_precision(std::string_view precision) {
  if (precision == "highest") g_precision.store(Float32MatmulPrecision::Highest);
  else if (precision == "high") g_precision.store(Float32MatmulPrecision::High);
  else if (precision == "medium") g_precision.store(Float32MatmulPrecision::Medium);
  // torch's TORCH_WARN text, byte for byte (its missing space included).
  else throw ValueError(detail::cat(precision, " is not one of 'highest', 'high', or 'medium'; the current",
                                    "setFloat32MatmulPrecision call has no effect."));
}

Float32MatmulPrecision float32_matmul_precision() { return g_precision.load(std::memory_order_relaxed); }

std::string get_float32_matmul_precision() {
  switch (float32_matmul_precision()) {
    case Float32MatmulPrecision::High: return "high";
    case Float32MatmulPrecision::Medium: return "medium";
    default: return "highest";
  }
}

bool allow_tf32_matmul() { return float32_matmul_precision() != Float32MatmulPrecision::Highest; }

void set_allow_tf32_matmul(bool allow) {
  g_precision.store(allow ? Float32MatmulPrecision::High : Float32MatmulPrecision::Highest);
}

}  // namespace ember
