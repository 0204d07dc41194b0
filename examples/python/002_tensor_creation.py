# Seed 002, section 3.1.1 (creating tensors, initialisers, NumPy). Changed: the import line only.
import ember as torch

# 从列表创建
a = torch.tensor([1.0, 2.0, 3.0])  # 1D 张量
b = torch.tensor([[1, 2], [3, 4]], dtype=torch.float32)  # 2D 张量,指定类型

# 常用工厂函数
zeros = torch.zeros(3, 4)  # 全零张量,形状 (3, 4)
ones = torch.ones(2, 3, 5)  # 全一张量
empty = torch.empty(2, 3)  # 未初始化张量(值不确定)
rand = torch.rand(2, 3)  # 均匀分布 [0, 1) 随机张量
randn = torch.randn(2, 3)  # 标准正态分布 N(0,1) 随机张量
arange = torch.arange(0, 10, 2)  # 等差序列:[0, 2, 4, 6, 8]
linspace = torch.linspace(0, 1, 5)  # 等间隔序列:[0, 0.25, 0.5, 0.75, 1.0]

# LLM 中常用的初始化方法
# Xavier/Glorot 初始化(适用于 Sigmoid/Tanh)
xavier = torch.empty(512, 512)
torch.nn.init.xavier_uniform_(xavier)

# Kaiming/He 初始化(适用于 ReLU,Transformer 中常用)
kaiming = torch.empty(512, 512)
torch.nn.init.kaiming_normal_(kaiming, mode='fan_in', nonlinearity='relu')

# 从 NumPy 转换
import numpy as np
np_array = np.array([1, 2, 3])
tensor_from_np = torch.from_numpy(np_array)  # 共享内存
np_from_tensor = a.numpy()  # CPU 张量转 NumPy,共享内存
