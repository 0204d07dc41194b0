#pragma once
// torch.backends.cuda's scaled-dot-product-attention switches (enable_flash_sdp,
// enable_mem_efficient_sdp, enable_math_sdp and the *_sdp_enabled queries), process-wide, read by
// F::scaled_dot_product_attention (src/nn/functional/attention.cpp) and set from Python
// (python/ember/backends/cuda). Backend-neutral.
//   flash          (default true)  the fused flash-attention kernel where it applies (CUDA,
//                                  float16/bfloat16, head dim 64 or 128, no explicit mask, no dropout)
//   mem_efficient  (default true)  kept for torch's API; ember has no separate memory-efficient kernel
//   math           (default true)  the composite of matmul, softmax and dropout
// With flash unavailable for a call and math off, the call fails naming why, as torch's
// "No available kernel" error.
namespace ember {

bool flash_sdp_enabled();
void enable_flash_sdp(bool enabled);
bool mem_efficient_sdp_enabled();
void enable_mem_efficient_sdp(bool enabled);
bool math_sdp_enabled();
void enable_math_sdp(bool enabled);

// On this thread, choose between the CPU's flash and math paths without looking at the sizes
// (flash wherever it applies, except unmasked half precision, which keeps math): while export
// captures a forward at several sizes of a dynamic dim, the captures must run the same ops.
// Returns the previous setting.
bool set_sdp_choice_ignores_sizes(bool on);
bool sdp_choice_ignores_sizes();

}  // namespace ember
