# Seed 002, section 7.4 (saving and loading models). Changed: the import lines. Left out: the
# last two lines (saving from rank 0 under torch.distributed). Completed: the snippet uses the
# GPT2Model of section 5.1, copied here with smaller sizes (constants at the top); the lines
# marked "added" check what was loaded.
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


model = GPT2Model()  # added: the model being saved

# 保存完整模型(不推荐,不灵活)
torch.save(model, 'model.pth')

# 推荐方式:只保存 state_dict
torch.save(model.state_dict(), 'model_state_dict.pth')

saved = model  # added
# 加载
model = GPT2Model()
model.load_state_dict(torch.load('model_state_dict.pth'))
model.eval()  # 切换到评估模式

# added from here on
saved.eval()
ids = torch.randint(0, VOCAB_SIZE, (2, 16))
with torch.no_grad():
    print("state_dict round trip equal:", bool(torch.equal(saved(ids), model(ids))))
    whole = torch.load('model.pth', weights_only=False)
    whole.eval()
    print("whole-model round trip equal:", type(whole).__name__, bool(torch.equal(saved(ids), whole(ids))))
print("tied weights after load:", model.lm_head.weight is model.token_embedding.weight)
