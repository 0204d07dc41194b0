#pragma once
// _addmm_epilogue (op_list.h): a Linear and the activation or residual add that alone reads it,
// one op. ember.compile's matmul-epilogue pass makes these nodes (src/compile/matmul_epilogue.cpp).
#include <optional>
#include <tuple>

#include "ember/tensor.h"

namespace ember {

enum class EpilogueActivation : int64_t { None = 0, Relu = 1, Gelu = 2, GeluTanh = 3 };

// The argument checks every backend's kernel runs (op names the caller).
void check_addmm_epilogue(const char* op, const std::optional<Tensor>& bias, const Tensor& mat1, const Tensor& mat2,
                          const std::optional<Tensor>& residual, int64_t activation);

// The op as addmm (or mm), the activation and add: what backends without a fused kernel run,
// and the CPU for dtypes its kernel does not take.
std::tuple<Tensor, Tensor> addmm_epilogue_composite(const std::optional<Tensor>& bias, const Tensor& mat1,
                                                    const Tensor& mat2, const std::optional<Tensor>& residual,
                                                    int64_t activation, bool save_pre);

}  // namespace ember
