# Seed 001, "简单训练示例". Changed: the import lines; indentation restored. The final print is added.
import ember as torch
import ember.nn as nn
import ember.optim as optim


# 1. 定义模型
class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 5)
        self.fc2 = nn.Linear(5, 1)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        return self.fc2(x)


# 2. 创建模型、损失函数和优化器
model = SimpleModel()
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=0.001)

# 3. 训练循环
for epoch in range(100):
    # 前向传播
    x = torch.randn(32, 10)  # 批次数据
    y = torch.randn(32, 1)  # 标签
    pred = model(x)

    # 计算损失
    loss = criterion(pred, y)

    # 反向传播和优化
    optimizer.zero_grad()  # 清零梯度
    loss.backward()  # 计算梯度
    optimizer.step()  # 更新参数

print(f"final loss: {loss.item():.4f}")  # added
