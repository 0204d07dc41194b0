# Seed 002, section 3.3.3 (a simplified multi-head self-attention module).
# Changed: the import lines. Completed: the seed uses F without importing it (its section 5.1
# imports torch.nn.functional as F); the seed only defines the class, the lines marked "added" run
# it once without and once with a causal mask and check that the mask hides future positions.
import ember as torch
import ember.nn as nn
import ember.nn.functional as F


class MultiHeadSelfAttention(nn.Module):
    """简化版多头自注意力,展示 nn.Module 的典型用法"""

    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        assert hidden_dim % num_heads == 0, "hidden_dim 必须能被 num_heads 整除"
        self.q_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.k_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.v_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.o_proj = nn.Linear(hidden_dim, hidden_dim, bias=False)

    def forward(self, x, attention_mask=None):
        batch_size, seq_len, _ = x.shape
        # 线性投影并分头
        q = self.q_proj(x).view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
        # Scaled Dot-Product Attention
        scale = self.head_dim ** 0.5
        attn_weights = torch.matmul(q, k.transpose(-2, -1)) / scale
        if attention_mask is not None:
            attn_weights = attn_weights.masked_fill(attention_mask == 0, float('-inf'))
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, v)
        # 合并头
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, seq_len, -1)
        return self.o_proj(attn_output)


attn = MultiHeadSelfAttention(hidden_dim=64, num_heads=8)  # added from here on
x = torch.randn(2, 10, 64)
print(attn(x).shape)
causal = torch.tril(torch.ones(10, 10))  # 1 = may attend
y = attn(x, attention_mask=causal)
x2 = x.clone()
x2[:, 5:] = torch.randn(2, 5, 64)  # changing the future must not change the first 5 outputs
y2 = attn(x2, attention_mask=causal)
print("causal prefix unchanged:", bool(torch.allclose(y[:, :5], y2[:, :5], atol=1e-6)))
