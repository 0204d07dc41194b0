# Seed 002, section 3.2.2 (gradient accumulation). Changed: the import line (the seed relies on the
# `import torch` of section 3.1.1).
import ember as torch

# 梯度累积:默认情况下梯度会累加
x = torch.tensor([2.0], requires_grad=True)
for _ in range(3):
    y = x ** 2
    y.backward()
    print(x.grad)  # 4.0 → 8.0 → 12.0(梯度累积!)

# 正确做法:每次反向传播前清零梯度
x = torch.tensor([2.0], requires_grad=True)
for _ in range(3):
    y = x ** 2
    if x.grad is not None:
        x.grad.zero_()  # 清零梯度
    y.backward()
    print(x.grad)  # 4.0 → 4.0 → 4.0(正确)
