# Seed 001, "自动求导(Autograd)". Changed: the import line (the seed's snippet relies on the
# `import torch` of the snippet before it).
import ember as torch

# 定义需要梯度的张量
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)

# 前向计算
z = x ** 2 + y ** 3

# 自动计算梯度
z.backward()

print(f"dz/dx = {x.grad}")  # 输出: 4.0 (即 2*x)
print(f"dz/dy = {y.grad}")  # 输出: 27.0 (即 3*y^2)
