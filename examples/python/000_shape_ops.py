# Seed 000, section 1.2 (view, reshape, permute, squeeze, unsqueeze). Changed: the torch import line only.
import ember as torch

x = torch.arange(12)
a = x.view(3, 4)
b = x.reshape(3, 4)
c = x.view(-1, 4)
t = torch.randn(2, 8, 12, 64)
t_permuted = t.permute(0, 2, 1, 3)
e = torch.randn(1, 3, 1, 4)
print(e.squeeze().shape)
f = torch.randn(3, 4)
print(f.unsqueeze(0).shape)
