# Seed 003, "训练循环" code example (a generic Trainer). Changed: the import lines. The seed only
# builds the Trainer; the block marked "added" at the end trains it on synthetic data (sizes are
# constants there) and writes best_model.pth to the working directory.
# 训练循环 - 完整的训练框架
import ember as torch
import ember.nn as nn
import ember.optim as optim
from ember.optim.lr_scheduler import CosineAnnealingLR
from typing import Dict, Tuple, Optional
import time


class Trainer:
    """通用训练器"""

    def __init__(
        self,
        model: nn.Module,
        criterion: nn.Module,
        optimizer: optim.Optimizer,
        device: torch.device,
        scheduler: Optional[object] = None
    ):
        self.model = model.to(device)
        self.criterion = criterion
        self.optimizer = optimizer
        self.device = device
        self.scheduler = scheduler

        # 训练历史
        self.history = {
            "train_loss": [],
            "train_acc": [],
            "val_loss": [],
            "val_acc": []
        }

    def train_one_epoch(self, dataloader) -> Tuple[float, float]:
        """训练一个epoch"""
        self.model.train()
        total_loss = 0.0
        correct = 0
        total = 0

        for batch_idx, (inputs, targets) in enumerate(dataloader):
            inputs = inputs.to(self.device)
            targets = targets.to(self.device)

            # ===== 核心五步 =====
            # 1. 清零梯度
            self.optimizer.zero_grad()

            # 2. 前向传播
            outputs = self.model(inputs)

            # 3. 计算损失
            loss = self.criterion(outputs, targets)

            # 4. 反向传播
            loss.backward()

            # 5. 更新参数
            self.optimizer.step()
            # ====================

            # 统计
            total_loss += loss.item() * inputs.size(0)
            _, predicted = outputs.max(1)
            correct += predicted.eq(targets).sum().item()
            total += targets.size(0)

        avg_loss = total_loss / total
        accuracy = correct / total
        return avg_loss, accuracy

    @torch.no_grad()
    def validate(self, dataloader) -> Tuple[float, float]:
        """验证"""
        self.model.eval()
        total_loss = 0.0
        correct = 0
        total = 0

        for inputs, targets in dataloader:
            inputs = inputs.to(self.device)
            targets = targets.to(self.device)

            outputs = self.model(inputs)
            loss = self.criterion(outputs, targets)

            total_loss += loss.item() * inputs.size(0)
            _, predicted = outputs.max(1)
            correct += predicted.eq(targets).sum().item()
            total += targets.size(0)

        avg_loss = total_loss / total
        accuracy = correct / total
        return avg_loss, accuracy

    def fit(self, train_loader, val_loader,
            num_epochs: int, verbose: bool = True) -> Dict:
        """完整训练流程"""
        best_val_acc = 0.0
        start_time = time.time()

        for epoch in range(num_epochs):
            epoch_start = time.time()

            # 训练
            train_loss, train_acc = self.train_one_epoch(train_loader)

            # 验证
            val_loss, val_acc = self.validate(val_loader)

            # 更新学习率
            if self.scheduler:
                self.scheduler.step()

            # 记录历史
            self.history["train_loss"].append(train_loss)
            self.history["train_acc"].append(train_acc)
            self.history["val_loss"].append(val_loss)
            self.history["val_acc"].append(val_acc)

            # 保存最佳模型
            if val_acc > best_val_acc:
                best_val_acc = val_acc
                torch.save(self.model.state_dict(), "best_model.pth")

            # 打印进度
            if verbose:
                epoch_time = time.time() - epoch_start
                current_lr = self.optimizer.param_groups[0]["lr"]
                print(
                    f"Epoch {epoch+1:3d}/{num_epochs} "
                    f"| Train Loss: {train_loss:.4f} "
                    f"| Train Acc: {train_acc:.4f} "
                    f"| Val Loss: {val_loss:.4f} "
                    f"| Val Acc: {val_acc:.4f} "
                    f"| LR: {current_lr:.6f} "
                    f"| Time: {epoch_time:.1f}s"
                )

        total_time = time.time() - start_time
        print(f"\n训练完成! 总耗时: {total_time:.1f}s")
        print(f"最佳验证准确率: {best_val_acc:.4f}")

        return self.history


# 使用示例
def training_demo():
    """训练演示"""
    print("=" * 60)
    print("训练循环演示")
    print("=" * 60)

    # 创建模型
    model = nn.Sequential(
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(256, 10)
    )

    # 损失函数和优化器
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    scheduler = CosineAnnealingLR(optimizer, T_max=10)

    # 设备
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    # 创建训练器
    trainer = Trainer(
        model=model,
        criterion=criterion,
        optimizer=optimizer,
        device=device,
        scheduler=scheduler
    )

    print(f"\n模型参数量: "
          f"{sum(p.numel() for p in model.parameters()):,}")
    print(f"设备: {device}")
    print(f"优化器: {type(optimizer).__name__}")
    print(f"调度器: {type(scheduler).__name__}")

    print("\n训练器已准备就绪,可调用trainer.fit()开始训练")


if __name__ == "__main__":
    training_demo()

    # added from here on: the seed stops before calling fit(); run it on a small synthetic
    # 10-class problem (784 features, as the demo's model expects) for a few epochs.
    from ember.utils.data import DataLoader, TensorDataset
    NUM_TRAIN, NUM_VAL, NUM_EPOCHS = 2048, 512, 3
    torch.manual_seed(0)
    centers = torch.randn(10, 784) * 0.1  # close class centres: a few epochs to learn
    def make_split(n):
        y = torch.randint(0, 10, (n,))
        return TensorDataset(centers[y] + torch.randn(n, 784), y)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))
    optimizer = optim.Adam(model.parameters(), lr=0.001)
    trainer = Trainer(model, nn.CrossEntropyLoss(), optimizer, torch.device("cpu"),
                      CosineAnnealingLR(optimizer, T_max=10))
    trainer.fit(DataLoader(make_split(NUM_TRAIN), batch_size=64, shuffle=True),
                DataLoader(make_split(NUM_VAL), batch_size=128), num_epochs=NUM_EPOCHS)
