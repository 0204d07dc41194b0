# Seed 000, section 1.4 (fp32/fp16/bf16 and memory). Changed: the torch import line only.
import ember as torch

x_fp32 = torch.randn(1000, 1000, dtype=torch.float32)
x_bf16 = torch.randn(1000, 1000, dtype=torch.bfloat16)
print(f"fp32: {x_fp32.nelement() * x_fp32.element_size() / 1024:.0f} KB")
print(f"bf16: {x_bf16.nelement() * x_bf16.element_size() / 1024:.0f} KB")
x = torch.randn(3, 4)
x_half = x.half()
x_bf16 = x.to(torch.bfloat16)
