# Seed 000, section 4.3 (learning-rate schedulers). Changed: the import line.
# Completed: the seed's snippet uses `model` without defining it; the model here is the seed's own
# TwoLayerMLP (section 3.3), and the last two lines (marked "added") step the schedule and print
# the learning rate so the result can be checked.
import ember as torch
import ember.nn as nn


class TwoLayerMLP(nn.Module):  # from seed 000, section 3.3
    def __init__(self, input_dim, hidden_dim, output_dim, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        return self.fc2(self.dropout(self.relu(self.fc1(x))))


model = TwoLayerMLP(784, 256, 10)

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.1)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)

for _ in range(50):  # added
    optimizer.step()
    scheduler.step()
print(f"lr after 50 steps: {optimizer.param_groups[0]['lr']:.8f}")  # added
