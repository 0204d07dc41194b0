# Seed 002, section 3.1.3 (indexing and slicing). Changed: the import line (the seed relies on the
# `import torch` of section 3.1.1). The seed evaluates expressions without printing them.
import ember as torch

x = torch.arange(12).reshape(3, 4)
# tensor([[ 0, 1, 2, 3],
# [ 4, 5, 6, 7],
# [ 8, 9, 10, 11]])
x[0]  # 第一行:[0, 1, 2, 3]
x[:, 1]  # 第二列:[1, 5, 9]
x[0:2, 1:3]  # 子矩阵:[[1,2],[5,6]]

# 高级索引
indices = torch.tensor([0, 2])
x[:, indices]  # 选取第0和第2列
x[x > 5]  # 布尔索引:[6, 7, 8, 9, 10, 11]

# LLM 常用:选取特定 token 的嵌入
# hidden_states: (batch, seq_len, hidden_dim)
hidden_states = torch.randn(2, 10, 768)
# 获取每个序列最后一个 token 的表示
last_token = hidden_states[:, -1, :]  # (2, 768)
