# Seed 002, section 3.2.3 (no_grad, detach, enable_grad). Changed: the import line (the seed relies
# on the `import torch` of section 3.1.1). The seed prints nothing; the three prints are added.
import ember as torch

x = torch.tensor([2.0], requires_grad=True)

# no_grad:推理时禁用梯度计算,节省内存
with torch.no_grad():
    y = x ** 2  # y.requires_grad = False
print("no_grad:", y.requires_grad)  # added

# detach:从计算图中分离张量
y = x ** 2
z = y.detach()  # z 不再跟踪梯度,但与 y 共享数据
print("detach:", z.requires_grad)  # added

# torch.enable_grad:在 no_grad 内部临时启用梯度
with torch.no_grad():
    with torch.enable_grad():
        y = x ** 2  # 此处可以计算梯度
print("enable_grad:", y.requires_grad)  # added
