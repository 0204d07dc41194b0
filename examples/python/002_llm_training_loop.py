# Seed 002, section 3.2.4 (gradient management in a training loop, with gradient clipping).
# Changed: the import lines.
# Completed: the seed's snippet leaves `model = ...`, `dataloader` and `loss_fn` undefined. Here the
# model is the seed's own SimpleMLP (section 3.3.1, smaller sizes), the dataloader yields dict
# batches {'input_ids', 'labels'} of synthetic regression data (labels = a fixed linear map of the
# inputs), loss_fn is MSELoss, the loop runs EPOCHS times and prints the mean loss of each (added).
import ember as torch
import ember.nn as nn
from ember.utils.data import DataLoader, Dataset

NUM_SAMPLES, SEQ_LEN, DIM, BATCH_SIZE, EPOCHS = 256, 4, 16, 32, 20  # added: sizes of the completion


class SimpleMLP(nn.Module):  # seed 002, section 3.3.1
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.activation = nn.GELU()
        self.fc2 = nn.Linear(hidden_dim, output_dim)
        self.dropout = nn.Dropout(p=0.1)

    def forward(self, x):
        x = self.fc1(x)
        x = self.activation(x)
        x = self.dropout(x)
        x = self.fc2(x)
        return x


class DictDataset(Dataset):  # added: samples as dicts, as LLM datasets return them
    def __init__(self):
        torch.manual_seed(0)
        self.inputs = torch.randn(NUM_SAMPLES, SEQ_LEN, DIM)
        self.labels = self.inputs @ (torch.randn(DIM, DIM) / DIM ** 0.5)

    def __len__(self):
        return NUM_SAMPLES

    def __getitem__(self, i):
        return {'input_ids': self.inputs[i], 'labels': self.labels[i]}


dataloader = DataLoader(DictDataset(), batch_size=BATCH_SIZE, shuffle=True)
loss_fn = nn.MSELoss()
model = SimpleMLP(DIM, 4 * DIM, DIM)

# 典型训练循环中的梯度管理
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for epoch in range(EPOCHS):  # added
    total = 0.0  # added
    for batch in dataloader:
        # 1. 前向传播
        outputs = model(batch['input_ids'])
        loss = loss_fn(outputs, batch['labels'])
        # 2. 反向传播
        optimizer.zero_grad()  # 清零梯度(等价于 for p in model.parameters(): p.grad=None)
        loss.backward()  # 计算梯度
        # 3. 梯度裁剪(防止梯度爆炸,LLM 训练中常用)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        # 4. 更新参数
        optimizer.step()
        total += loss.item()  # added
    print(f"epoch {epoch + 1}: loss {total / len(dataloader):.4f}")  # added
