# Seed 000, section 3.2 (parameters(), named_parameters(), state_dict()). Changed: the import line only.
import ember.nn as nn

model = nn.Linear(10, 5)
for name, param in model.named_parameters():
    print(f"{name}: {param.shape}")
total_params = sum(p.numel() for p in model.parameters())
print(f"参数量: {total_params}")
print(model.state_dict().keys())
