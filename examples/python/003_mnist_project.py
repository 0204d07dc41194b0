# Seed 003, "完整项目:MNIST手写数字识别" (the complete MNIST project: a 4-conv CNN with BatchNorm,
# Dropout2d, Kaiming init, rotation/affine augmentation, Adam + cosine schedule, best-model
# checkpoint, per-class accuracy). Changed: the import lines; the data is Fashion-MNIST from
# Debian's dataset-fashion-mnist package (datasets.FashionMNIST(root=DATA_ROOT) instead of
# datasets.MNIST(root="./data", download=True): same IDX format, ember never downloads); to stay
# short on a CPU, Config.epochs is 1 (seed: 15) and only the first TRAIN_SAMPLES/TEST_SAMPLES
# samples are used (two added Subset lines in prepare_data).
# 完整项目:MNIST手写数字识别
# 整合所有PyTorch基础知识的端到端项目

import ember as torch
import ember.nn as nn
import ember.optim as optim
from ember.utils.data import DataLoader, Subset
import ember.vision as torchvision
import ember.vision.transforms as transforms
import time
from typing import Dict, Tuple

DATA_ROOT = "/usr/share/datasets/fashion-mnist"  # added: Debian's dataset-fashion-mnist
TRAIN_SAMPLES, TEST_SAMPLES = 2000, 1000  # added: the first samples of each split only


# ===================== 1. 配置 =====================

class Config:
    """训练配置"""
    # 数据
    batch_size = 128
    num_workers = 2

    # 模型
    num_classes = 10
    dropout = 0.25

    # 训练
    epochs = 1  # the seed trains 15 epochs
    learning_rate = 0.001
    weight_decay = 1e-4

    # 设备
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    # 保存
    save_path = "mnist_best.pth"


# ===================== 2. 数据准备 =====================

def prepare_data(config: Config) -> Tuple[DataLoader, DataLoader]:
    """准备数据"""
    # 训练集变换 (含数据增强)
    train_transform = transforms.Compose([
        transforms.RandomRotation(10),           # 随机旋转
        transforms.RandomAffine(0, translate=(0.1, 0.1)),  # 随机平移
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,))
    ])

    # 测试集变换 (仅标准化)
    test_transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,))
    ])

    # 下载和加载数据集
    train_dataset = torchvision.datasets.FashionMNIST(
        root=DATA_ROOT, train=True,
        download=True, transform=train_transform
    )

    test_dataset = torchvision.datasets.FashionMNIST(
        root=DATA_ROOT, train=False,
        download=True, transform=test_transform
    )

    train_dataset = Subset(train_dataset, range(TRAIN_SAMPLES))  # added
    test_dataset = Subset(test_dataset, range(TEST_SAMPLES))  # added

    train_loader = DataLoader(
        train_dataset,
        batch_size=config.batch_size,
        shuffle=True,
        num_workers=config.num_workers,
        pin_memory=True
    )

    test_loader = DataLoader(
        test_dataset,
        batch_size=config.batch_size,
        shuffle=False,
        num_workers=config.num_workers,
        pin_memory=True
    )

    return train_loader, test_loader


# ===================== 3. 模型定义 =====================

class MNISTNet(nn.Module):
    """MNIST分类网络"""

    def __init__(self, num_classes: int = 10,
                 dropout: float = 0.25):
        super().__init__()

        # 卷积特征提取器
        self.features = nn.Sequential(
            # Block 1: 1 -> 32 channels
            nn.Conv2d(1, 32, kernel_size=3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 32, kernel_size=3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),        # 28x28 -> 14x14
            nn.Dropout2d(dropout),

            # Block 2: 32 -> 64 channels
            nn.Conv2d(32, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.Conv2d(64, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, 2),        # 14x14 -> 7x7
            nn.Dropout2d(dropout),
        )

        # 分类器
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 256),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(256, num_classes)
        )

        # 初始化权重
        self._initialize_weights()

    def _initialize_weights(self):
        """Kaiming初始化"""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(
                    m.weight, mode='fan_out', nonlinearity='relu'
                )
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight)
                nn.init.constant_(m.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.classifier(x)
        return x


# ===================== 4. 训练和评估 =====================

def train_one_epoch(
    model: nn.Module,
    train_loader: DataLoader,
    criterion: nn.Module,
    optimizer: optim.Optimizer,
    device: torch.device
) -> Tuple[float, float]:
    """训练一个epoch"""
    model.train()
    total_loss = 0.0
    correct = 0
    total = 0

    for images, labels in train_loader:
        images, labels = images.to(device), labels.to(device)

        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        total_loss += loss.item() * images.size(0)
        _, predicted = outputs.max(1)
        correct += predicted.eq(labels).sum().item()
        total += labels.size(0)

    return total_loss / total, correct / total


@torch.no_grad()
def evaluate(
    model: nn.Module,
    test_loader: DataLoader,
    criterion: nn.Module,
    device: torch.device
) -> Tuple[float, float]:
    """评估模型"""
    model.eval()
    total_loss = 0.0
    correct = 0
    total = 0

    for images, labels in test_loader:
        images, labels = images.to(device), labels.to(device)

        outputs = model(images)
        loss = criterion(outputs, labels)

        total_loss += loss.item() * images.size(0)
        _, predicted = outputs.max(1)
        correct += predicted.eq(labels).sum().item()
        total += labels.size(0)

    return total_loss / total, correct / total


# ===================== 5. 完整训练流程 =====================

def train_mnist():
    """完整的MNIST训练流程"""
    config = Config()

    print("=" * 60)
    print("  MNIST 手写数字识别")
    print("=" * 60)
    print(f"  设备: {config.device}")
    print(f"  批次大小: {config.batch_size}")
    print(f"  学习率: {config.learning_rate}")
    print(f"  训练轮数: {config.epochs}")

    # 1. 数据准备
    print("\n[1/4] 准备数据...")
    train_loader, test_loader = prepare_data(config)
    print(f"  训练集: {len(train_loader.dataset)} 样本")
    print(f"  测试集: {len(test_loader.dataset)} 样本")

    # 2. 创建模型
    print("\n[2/4] 创建模型...")
    model = MNISTNet(
        num_classes=config.num_classes,
        dropout=config.dropout
    ).to(config.device)

    total_params = sum(p.numel() for p in model.parameters())
    print(f"  模型参数量: {total_params:,}")

    # 3. 损失函数和优化器
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(
        model.parameters(),
        lr=config.learning_rate,
        weight_decay=config.weight_decay
    )
    scheduler = optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=config.epochs
    )

    # 4. 训练循环
    print("\n[3/4] 开始训练...")
    print("-" * 75)
    print(f"{'Epoch':>5} | {'Train Loss':>10} | {'Train Acc':>9} "
          f"| {'Test Loss':>9} | {'Test Acc':>8} | {'LR':>10} "
          f"| {'Time':>5}")
    print("-" * 75)

    best_acc = 0.0
    start_time = time.time()

    for epoch in range(1, config.epochs + 1):
        epoch_start = time.time()

        # 训练
        train_loss, train_acc = train_one_epoch(
            model, train_loader, criterion, optimizer, config.device
        )

        # 评估
        test_loss, test_acc = evaluate(
            model, test_loader, criterion, config.device
        )

        # 更新学习率
        scheduler.step()

        # 保存最佳模型
        if test_acc > best_acc:
            best_acc = test_acc
            torch.save(model.state_dict(), config.save_path)

        # 打印进度
        epoch_time = time.time() - epoch_start
        current_lr = optimizer.param_groups[0]["lr"]

        print(
            f"{epoch:5d} | {train_loss:10.4f} | {train_acc:8.4f}% "
            f"| {test_loss:9.4f} | {test_acc:7.4f}% | "
            f"{current_lr:10.6f} | {epoch_time:4.1f}s"
        )

    total_time = time.time() - start_time
    print("-" * 75)
    print(f"\n训练完成!")
    print(f"  总耗时: {total_time:.1f}s")
    print(f"  最佳测试准确率: {best_acc:.4f}%")
    print(f"  最佳模型已保存到: {config.save_path}")

    # 5. 详细评估
    print("\n[4/4] 详细评估...")
    model.load_state_dict(torch.load(config.save_path))

    # 每个数字的准确率
    model.eval()
    class_correct = [0] * 10
    class_total = [0] * 10

    with torch.no_grad():
        for images, labels in test_loader:
            images, labels = images.to(config.device), labels.to(config.device)
            outputs = model(images)
            _, predicted = outputs.max(1)

            for i in range(labels.size(0)):
                label = labels[i].item()
                class_total[label] += 1
                if predicted[i] == labels[i]:
                    class_correct[label] += 1

    print("\n  各数字识别准确率:")
    for i in range(10):
        acc = class_correct[i] / class_total[i] * 100
        print(f"    数字 {i}: {acc:6.2f}% "
              f"({class_correct[i]}/{class_total[i]})")

    return model


# ===================== 6. 推理函数 =====================

@torch.no_grad()
def predict(model: nn.Module, image: torch.Tensor,
            device: torch.device) -> Tuple[int, float]:
    """单张图像预测"""
    model.eval()
    image = image.to(device)

    if image.dim() == 3:
        image = image.unsqueeze(0)  # 增加batch维度

    output = model(image)
    probabilities = torch.softmax(output, dim=1)
    confidence, predicted = probabilities.max(1)

    return predicted.item(), confidence.item()


# ===================== 主程序 =====================

if __name__ == "__main__":
    model = train_mnist()
