# Seed 001, "张量计算(Tensor)". Changed: the import line; the seed's text lost its indentation,
# restored here. Without a GPU the cuda branch is skipped, as in PyTorch; the print is added.
import ember as torch

# 创建张量
x = torch.tensor([[1, 2], [3, 4]])

# GPU加速计算
if torch.cuda.is_available():
    x = x.cuda()  # 移到GPU
y = x * 2  # GPU上进行计算
print(y)  # added
