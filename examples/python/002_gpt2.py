# Seed 002, section 5.1 (a GPT-2 style model from scratch). Changed: the import lines; the model
# sizes are constants at the top (the seed writes them as GPT2Model's default arguments) and
# NUM_LAYERS is 4 instead of GPT-2's 12 so the forward pass stays short on a CPU.
import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import math

VOCAB_SIZE, HIDDEN_DIM, NUM_LAYERS, NUM_HEADS, FFN_DIM, MAX_SEQ_LEN = 50257, 768, 4, 12, 3072, 1024


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


# 使用示例
model = GPT2Model()
input_ids = torch.randint(0, 50257, (2, 128))  # batch=2, seq_len=128
logits = model(input_ids)
print(logits.shape)  # (2, 128, 50257)
