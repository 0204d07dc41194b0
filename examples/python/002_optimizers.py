# Seed 002, sections 3.4.1-3.4.4 (SGD, Adam, AdamW, learning-rate schedulers). Changed: the import
# lines. Completed: the snippets use `model` and `dataloader` and call `model(batch).loss`; here the
# model is a small regression model whose forward returns an object with a .loss (as Hugging Face
# models do), the dataloader is a list of TOTAL_STEPS random batches (enough to pass the warm-up
# milestone), and the lines marked "added" print the learning rate at a few steps.
import types

import ember as torch
import ember.nn as nn
from ember.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR

TOTAL_STEPS = 2100  # added: steps of the completion's loop


class RegressionModel(nn.Module):  # added
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, batch):
        x, y = batch
        return types.SimpleNamespace(loss=nn.functional.mse_loss(self.linear(x), y))


model = RegressionModel()  # added
dataloader = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(TOTAL_STEPS)]  # added

# 随机梯度下降(带动量和权重衰减)
optimizer = torch.optim.SGD(
    model.parameters(),
    lr=0.01,  # 学习率
    momentum=0.9,  # 动量系数,加速收敛
    weight_decay=1e-4  # L2 正则化(权重衰减)
)

# Adam 优化器(LLM 中最常用的优化器之一)
optimizer = torch.optim.Adam(
    model.parameters(),
    lr=1e-4,  # 学习率
    betas=(0.9, 0.999),  # (β1, β2) 一阶和二阶动量衰减系数
    eps=1e-8,  # 防止除零的小常数
    weight_decay=0.0  # 权重衰减
)

# AdamW:解耦权重衰减的 Adam(LLM 训练的标准选择)
optimizer = torch.optim.AdamW(
    model.parameters(),
    lr=1e-4,
    betas=(0.9, 0.95),  # LLM 中 β2 常用 0.95 而非 0.999
    eps=1e-8,
    weight_decay=0.01,  # 权重衰减系数
    amsgrad=False  # 是否使用 AMSGrad 变体
)

# 方式1:余弦退火(LLM 训练中最常用)
scheduler = CosineAnnealingLR(
    optimizer,
    T_max=100000,  # 周期长度(通常等于总训练步数)
    eta_min=1e-5  # 最小学习率
)

# 方式2:线性预热 + 余弦退火(LLM 标准配置)
warmup_scheduler = LinearLR(optimizer, start_factor=0.01, total_iters=2000)
cosine_scheduler = CosineAnnealingLR(optimizer, T_max=98000, eta_min=1e-5)
scheduler = SequentialLR(
    optimizer,
    schedulers=[warmup_scheduler, cosine_scheduler],
    milestones=[2000]  # 在第 2000 步切换调度器
)

# 训练循环中使用
for step, batch in enumerate(dataloader):
    loss = model(batch).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()  # 每个 step 后更新学习率
    if step in (0, 999, 1998, 1999, 2000, 2099):  # added
        print(f"step {step}: lr {optimizer.param_groups[0]['lr']:.10e}")  # added
