# Seed 003, "混合精度训练" code example. Changed: the import lines. Without CUDA the demo prints
# that it needs a GPU and returns, as it does under PyTorch; what runs is the import of
# autocast/GradScaler and the AMPTrainer definition.
# 混合精度训练完整示例
import ember as torch
import ember.nn as nn
import ember.optim as optim
from ember.cuda.amp import autocast, GradScaler


class AMPTrainer:
    """混合精度训练器"""

    def __init__(self, model: nn.Module, lr: float = 1e-3):
        self.model = model
        self.optimizer = optim.Adam(model.parameters(), lr=lr)
        self.scaler = GradScaler()  # 梯度缩放器
        self.criterion = nn.CrossEntropyLoss()

    def train_step(self, inputs, targets):
        """混合精度训练步"""
        self.optimizer.zero_grad()

        # 自动混合精度上下文
        with autocast():
            outputs = self.model(inputs)
            loss = self.criterion(outputs, targets)

        # 缩放损失并反向传播
        self.scaler.scale(loss).backward()

        # 反缩放梯度并更新
        self.scaler.step(self.optimizer)

        # 更新缩放因子
        self.scaler.update()

        return loss.item()


def amp_training_demo():
    """混合精度训练演示"""
    if not torch.cuda.is_available():
        print("混合精度训练需要CUDA GPU")
        return

    device = torch.device("cuda")

    # 创建模型
    model = nn.Sequential(
        nn.Linear(784, 512),
        nn.ReLU(),
        nn.Linear(512, 256),
        nn.ReLU(),
        nn.Linear(256, 10)
    ).to(device)

    trainer = AMPTrainer(model)

    # 模拟数据
    x = torch.randn(128, 784, device=device)
    y = torch.randint(0, 10, (128,), device=device)

    # 训练
    for epoch in range(10):
        loss = trainer.train_step(x, y)
        if (epoch + 1) % 2 == 0:
            print(f"Epoch {epoch+1}: loss={loss:.4f}")

    # 对比显存使用
    print(f"\n已分配显存: {torch.cuda.memory_allocated() / 1024**2:.1f} MB")
    print(f"最大显存峰值: {torch.cuda.max_memory_allocated() / 1024**2:.1f} MB")


# BF16训练 (适用于Ampere及以上架构)
def bf16_training_example():
    """BFloat16训练示例"""
    code = '''
    # BF16比FP16更安全: 指数位与FP32相同, 不需要GradScaler
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        outputs = model(inputs)
        loss = criterion(outputs, targets)

    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    '''
    return code


if __name__ == "__main__":
    amp_training_demo()
