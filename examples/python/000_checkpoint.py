# Seed 000, section 4.4 (saving and restoring a checkpoint). Changed: the import line.
# Completed: the seed's snippet uses `epoch`, `model`, `optimizer` and `avg_loss` without defining
# them; they come from the seed's own MNIST script (its MLP and AdamW), with one training step on
# random data so the optimizer has state to save. The test reads checkpoint.pt back.
import ember as torch
import ember.nn as nn


class MLP(nn.Module):  # from seed 000's MNIST script
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10))

    def forward(self, x):
        return self.net(x)


model = MLP()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss = nn.CrossEntropyLoss()(model(torch.randn(8, 1, 28, 28)), torch.randint(0, 10, (8,)))
loss.backward()
optimizer.step()
epoch, avg_loss = 0, loss.item()

torch.save({
    'epoch': epoch,
    'model_state_dict': model.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'loss': avg_loss,
}, 'checkpoint.pt')

ckpt = torch.load('checkpoint.pt', weights_only=False)
model.load_state_dict(ckpt['model_state_dict'])
optimizer.load_state_dict(ckpt['optimizer_state_dict'])
print(f"restored epoch {ckpt['epoch']}, loss {ckpt['loss']:.4f}")  # added
