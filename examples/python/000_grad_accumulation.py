# Seed 000, section 2.3 (gradients accumulate until zeroed). Changed: the torch import line only.
import ember as torch

x = torch.tensor([1.0], requires_grad=True)
(x * 2).sum().backward()
print(x.grad)
(x * 3).sum().backward()
print(x.grad)
x.grad.zero_()
(x * 4).sum().backward()
print(x.grad)
