# Seed 000, section 1.1 (creating tensors). Changed: the torch import line only.
import ember as torch
import numpy as np

a = torch.tensor([1.0, 2.0, 3.0])
zeros = torch.zeros(3, 4)
ones = torch.ones(2, 3, 4)
rand_normal = torch.randn(3, 4)
seq = torch.arange(0, 10, 2)
x = torch.randn(3, 4)
y = torch.zeros_like(x)
t = torch.from_numpy(np.array([1.0, 2.0]))
