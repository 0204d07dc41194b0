# Seed 002, sections 3.3.1 and 3.3.2 (a custom nn.Module and its parameters). Changed: the import
# lines (3.3.1 relies on the `import torch` of section 3.1.1).
import ember as torch
import ember.nn as nn


class SimpleMLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()  # 必须调用父类初始化
        # 在 __init__ 中定义所有层和参数
        self.fc1 = nn.Linear(input_dim, hidden_dim)  # 全连接层
        self.activation = nn.GELU()  # 激活函数
        self.fc2 = nn.Linear(hidden_dim, output_dim)
        self.dropout = nn.Dropout(p=0.1)  # Dropout 正则化

    def forward(self, x):
        # 在 forward 中定义前向计算逻辑
        x = self.fc1(x)
        x = self.activation(x)
        x = self.dropout(x)
        x = self.fc2(x)
        return x


# 实例化并使用
model = SimpleMLP(input_dim=768, hidden_dim=3072, output_dim=768)
output = model(torch.randn(2, 10, 768))  # (batch, seq_len, output_dim)

# 访问所有参数
for name, param in model.named_parameters():
    print(f"{name}: shape={param.shape}, requires_grad={param.requires_grad}")

# 访问特定层的参数
print(model.fc1.weight.shape)  # (hidden_dim, input_dim) = (3072, 768)
print(model.fc1.bias.shape)  # (hidden_dim,) = (3072,)

# 冻结参数(LLM 微调中常用:冻结预训练层,只训练新层)
for name, param in model.named_parameters():
    if 'fc1' in name:  # 只冻结 fc1 层
        param.requires_grad = False

# 统计参数量
total_params = sum(p.numel() for p in model.parameters())
trainable_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
print(f"总参数量: {total_params:,}, 可训练参数量: {trainable_params:,}")
