# Seed 000, section 5.1 (moving the model and data to the device; on a CPU-only machine the
# device is 'cpu'). Changed: the import lines; the print at the end is added.
import ember as torch
import ember.nn as nn

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
model = nn.Linear(100, 10).to(device)
x = torch.randn(32, 100).to(device)
y = model(x)
print(device, y.shape)  # added
