# Seed 002, section 5.2 (LoRA). Changed: the import lines.
# Completed: the snippet uses the GPT2Model of section 5.1, copied here with smaller sizes
# (constants at the top). As in the seed, GPT2Model has no module named 'q_proj' (its attention is
# nn.MultiheadAttention), so the loop replaces nothing; the lines marked "added" report that and
# apply LoRALinear to the q_proj of the seed's MultiHeadSelfAttention-style projection instead.
import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import math

VOCAB_SIZE, HIDDEN_DIM, NUM_LAYERS, NUM_HEADS, FFN_DIM, MAX_SEQ_LEN = 1000, 64, 2, 4, 256, 128


class GPT2Block(nn.Module):
    def __init__(self, hidden_dim, num_heads, ffn_dim, dropout=0.1):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden_dim)
        self.attn = nn.MultiheadAttention(hidden_dim, num_heads, dropout=dropout, batch_first=True)
        self.ln2 = nn.LayerNorm(hidden_dim)
        self.ffn = nn.Sequential(
            nn.Linear(hidden_dim, ffn_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(ffn_dim, hidden_dim),
            nn.Dropout(dropout),
        )

    def forward(self, x, attention_mask=None):
        # Pre-LN Transformer
        residual = x
        x = self.ln1(x)
        x, _ = self.attn(x, x, x, attn_mask=attention_mask, need_weights=False)
        x = residual + x
        residual = x
        x = self.ln2(x)
        x = self.ffn(x)
        x = residual + x
        return x


class GPT2Model(nn.Module):
    def __init__(self, vocab_size=VOCAB_SIZE, hidden_dim=HIDDEN_DIM, num_layers=NUM_LAYERS,
                 num_heads=NUM_HEADS, ffn_dim=FFN_DIM, max_seq_len=MAX_SEQ_LEN):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, hidden_dim)
        self.position_embedding = nn.Embedding(max_seq_len, hidden_dim)
        self.blocks = nn.ModuleList([
            GPT2Block(hidden_dim, num_heads, ffn_dim) for _ in range(num_layers)
        ])
        self.ln_f = nn.LayerNorm(hidden_dim)
        self.lm_head = nn.Linear(hidden_dim, vocab_size, bias=False)
        # 权重共享
        self.lm_head.weight = self.token_embedding.weight
        # 因果掩码
        self.register_buffer("causal_mask",
                             torch.triu(torch.ones(max_seq_len, max_seq_len), diagonal=1).bool())

    def forward(self, input_ids):
        batch_size, seq_len = input_ids.shape
        positions = torch.arange(seq_len, device=input_ids.device)
        x = self.token_embedding(input_ids) + self.position_embedding(positions)
        attn_mask = self.causal_mask[:seq_len, :seq_len]
        for block in self.blocks:
            x = block(x, attention_mask=attn_mask)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        return logits


class LoRALinear(nn.Module):
    """LoRA:低秩适配器,冻结原始权重,仅训练低秩矩阵"""

    def __init__(self, original_linear, r=8, alpha=16):
        super().__init__()
        self.original = original_linear
        self.original.weight.requires_grad = False  # 冻结原始权重
        if self.original.bias is not None:
            self.original.bias.requires_grad = False
        in_dim = original_linear.in_features
        out_dim = original_linear.out_features
        self.lora_A = nn.Parameter(torch.randn(in_dim, r) * 0.01)
        self.lora_B = nn.Parameter(torch.zeros(r, out_dim))
        self.scaling = alpha / r

    def forward(self, x):
        # W'x = Wx + (B @ A) * scaling * x
        return self.original(x) + (x @ self.lora_A @ self.lora_B) * self.scaling


# 应用 LoRA 到模型
model = GPT2Model()
for name, module in model.named_modules():
    if isinstance(module, nn.Linear) and 'q_proj' in name:
        # 替换 Q 投影为 LoRA 版本
        parent_name, child_name = name.rsplit('.', 1)
        parent = model.get_submodule(parent_name)
        setattr(parent, child_name, LoRALinear(module, r=8, alpha=16))

# added from here on
print("LoRA modules in GPT2Model:", sum(isinstance(m, LoRALinear) for m in model.modules()))
block = nn.Module()
block.q_proj = nn.Linear(HIDDEN_DIM, HIDDEN_DIM)
wrapper = nn.Module()
wrapper.attn = block
for name, module in wrapper.named_modules():
    if isinstance(module, nn.Linear) and 'q_proj' in name:
        parent_name, child_name = name.rsplit('.', 1)
        parent = wrapper.get_submodule(parent_name)
        setattr(parent, child_name, LoRALinear(module, r=8, alpha=16))
lora = wrapper.attn.q_proj
print("replaced:", type(lora).__name__)
trainable = [n for n, p in wrapper.named_parameters() if p.requires_grad]
print("trainable:", trainable)
x = torch.randn(3, HIDDEN_DIM)
print("equals original at init:", bool(torch.allclose(lora(x), lora.original(x))))
opt = torch.optim.SGD([p for p in wrapper.parameters() if p.requires_grad], lr=0.1)
w_before = lora.original.weight.clone()
lora(x).pow(2).mean().backward()
opt.step()
print("frozen weight unchanged:", bool(torch.equal(w_before, lora.original.weight)),
      "| lora_B updated:", bool(lora.lora_B.abs().sum() > 0))
