# Seed 000, section 2.2 (requires_grad and backward()). Changed: the torch import line only.
import ember as torch

x = torch.tensor([2.0, 3.0], requires_grad=True)
y = x * 3
z = y.sum()
z.backward()
print(x.grad)
