# Seed 002, section 3.1.4 (broadcasting). Changed: the import line (the seed relies on the
# `import torch` of section 3.1.1). The seed prints nothing.
import ember as torch

# (3, 1) + (1, 4) → (3, 4)
a = torch.ones(3, 1)
b = torch.ones(1, 4)
c = a + b  # 形状 (3, 4)

# LLM 典型场景:RoPE 位置编码
# freqs: (seq_len, head_dim/2) → 扩展为 (1, seq_len, 1, head_dim/2)
# query: (batch, seq_len, num_heads, head_dim)
freqs = torch.randn(128, 64)
freqs = freqs[None, :, None, :]  # (1, 128, 1, 64) — 自动广播到 batch 和 num_heads 维度
