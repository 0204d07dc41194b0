#pragma once
// torch.set_float32_matmul_precision / get_float32_matmul_precision and the flag they drive,
// torch.backends.cuda.matmul.allow_tf32: how float32 (and complex64) matrix products may round
// their inputs inside the GPU's tensor cores. Process-wide, as torch's at::Context setting.
//   "highest" (the default): full float32 products.
//   "high", "medium": TensorFloat32 tensor cores (10 mantissa bits in the products, float32
//   accumulation) where the GPU has them; cuBLAS has no bfloat16x3 mode, so "medium" is "high"
//   there, as in torch.
// The CPU computes in float32 at every setting (there is no TF32 on the CPU).
#include <string>
#include <string_view>

namespace ember {

enum class Float32MatmulPrecision { Highest, High, Medium };

// Accepts exactly "highest", "high" or "medium" (case-sensitive, as torch). Any other value
// leaves the setting unchanged and throws ember::ValueError with the text torch warns with
// ("<value> is not one of 'highest', 'high', or 'medium'; the currentsetFloat32MatmulPrecision
// call has no effect."); the Python binding turns it into torch's UserWarning.
void set_float32_matmul_precision(std::string_view precision);
// "highest", "high" or "medium".
std::string get_float32_matmul_precision();
Float32MatmulPrecision float32_matmul_precision();
// torch.backends.cuda.matmul.allow_tf32: true unless the precision is "highest". Setting it
// selects "high" (true) or "highest" (false), as torch's setter.
bool allow_tf32_matmul();
void set_allow_tf32_matmul(bool allow);

}  // namespace ember
