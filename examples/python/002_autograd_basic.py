# Seed 002, section 3.2.1 (autograd basics). Changed: the import line (the seed relies on the
# `import torch` of section 3.1.1).
import ember as torch

# requires_grad=True 标记需要计算梯度的张量
x = torch.tensor([2.0, 3.0], requires_grad=True)

# 前向计算(自动构建计算图)
y = x ** 2  # y = [4, 9]
z = y.sum()  # z = 13

# 反向传播
z.backward()

# 查看梯度
print(x.grad)  # dz/dx = 2x = [4, 6]
