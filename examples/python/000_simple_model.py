# Seed 000, section 3.1 (subclassing nn.Module). Changed: the import lines only.
import ember as torch
import ember.nn as nn


class SimpleModel(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.linear1 = nn.Linear(input_dim, hidden_dim)
        self.relu = nn.ReLU()
        self.linear2 = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        return self.linear2(self.relu(self.linear1(x)))


model = SimpleModel(784, 256, 10)
output = model(torch.randn(32, 784))
print(output.shape)
