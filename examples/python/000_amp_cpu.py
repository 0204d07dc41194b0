# Seed 000, "混合精度" code example (bf16 autocast, then fp16 + GradScaler). Changed: the import
# line, device 'cuda' -> 'cpu' (this machine has no GPU; CPU autocast computes the matmuls in
# bfloat16 on AMX), GradScaler('cpu') instead of torch.cuda.amp.GradScaler(), and the data: the
# seed's train_loader is 40 batches of a synthetic 10-class rule here, with the loss printed.
# PyTorch 2.15 prints: bf16 2.280 -> 2.333 (float32), fp16 1.807 -> 1.710, scale 65536.
import ember as torch
import ember.nn as nn
from ember.utils.data import DataLoader, TensorDataset

device = torch.device('cpu')
images = torch.randn(64 * 40, 784)
labels = (images[:, :10].argmax(1) + images[:, 10:20].argmax(1)) % 10  # a learnable rule
train_loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
losses = []
for images, labels in train_loader:
    images, labels = images.to(device), labels.to(device)
    with torch.autocast(device_type='cpu', dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
print(f"bf16 autocast: loss {losses[0]:.3f} -> {sum(losses[-5:]) / 5:.3f} (dtype {loss.dtype})")

scaler = torch.amp.GradScaler('cpu')
losses = []
for images, labels in train_loader:
    images, labels = images.to(device), labels.to(device)
    with torch.autocast(device_type='cpu', dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(images), labels)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
    losses.append(loss.item())
print(f"fp16 autocast + GradScaler: loss {losses[0]:.3f} -> {sum(losses[-5:]) / 5:.3f}, scale {scaler.get_scale():.0f}")
