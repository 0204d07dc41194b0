# Seed 003, "nn.Module" code example (Linear/MLP with BatchNorm/Sequential/CNN, parameters, save
# and load of model.pth in the working directory, freezing). Changed: the import lines only.
# nn.Module - 完整示例
import ember as torch
import ember.nn as nn
import ember.nn.functional as F


# ===================== 1. 基础模型定义 =====================

class SimpleLinearModel(nn.Module):
    """简单的线性模型"""

    def __init__(self, input_dim: int, output_dim: int):
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


# ===================== 2. 多层感知机 (MLP) =====================

class MLP(nn.Module):
    """多层感知机"""

    def __init__(self, input_dim: int, hidden_dim: int,
                 output_dim: int, dropout: float = 0.1):
        super().__init__()

        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.bn1 = nn.BatchNorm1d(hidden_dim)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden_dim, hidden_dim)
        self.bn2 = nn.BatchNorm1d(hidden_dim)
        self.fc3 = nn.Linear(hidden_dim, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # 第一层: 线性 + BN + ReLU + Dropout
        x = self.fc1(x)
        x = self.bn1(x)
        x = F.relu(x)
        x = self.dropout(x)

        # 第二层: 线性 + BN + ReLU + Dropout
        x = self.fc2(x)
        x = self.bn2(x)
        x = F.relu(x)
        x = self.dropout(x)

        # 输出层
        x = self.fc3(x)
        return x


# ===================== 3. nn.Sequential =====================

def sequential_model():
    """使用nn.Sequential快速构建模型"""

    model = nn.Sequential(
        nn.Linear(784, 256),
        nn.BatchNorm1d(256),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(256, 128),
        nn.BatchNorm1d(128),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(128, 10)
    )

    return model


# ===================== 4. 卷积神经网络 (CNN) =====================

class SimpleCNN(nn.Module):
    """简单的卷积神经网络"""

    def __init__(self, num_classes: int = 10):
        super().__init__()

        # 卷积层
        self.conv_layers = nn.Sequential(
            # Conv1: 1 -> 32 通道, 3x3卷积
            nn.Conv2d(1, 32, kernel_size=3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),  # 28x28 -> 14x14

            # Conv2: 32 -> 64 通道
            nn.Conv2d(32, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2, 2),  # 14x14 -> 7x7
        )

        # 全连接层
        self.fc_layers = nn.Sequential(
            nn.Flatten(),              # 64*7*7 = 3136
            nn.Linear(64 * 7 * 7, 128),
            nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(128, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_layers(x)
        x = self.fc_layers(x)
        return x


# ===================== 5. 模型工具函数 =====================

def model_utilities():
    """模型实用功能演示"""
    print("=" * 50)
    print("模型实用功能")
    print("=" * 50)

    model = MLP(input_dim=784, hidden_dim=256, output_dim=10)

    # 查看模型结构
    print(f"\n模型结构:\n{model}")

    # 查看参数数量
    total_params = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters()
                    if p.requires_grad)
    print(f"\n总参数量: {total_params:,}")
    print(f"可训练参数: {trainable:,}")

    # 查看各层参数
    print("\n各层参数:")
    for name, param in model.named_parameters():
        print(f"  {name}: {param.shape}")

    # 保存模型
    torch.save(model.state_dict(), "model.pth")
    print("\n模型已保存到 model.pth")

    # 加载模型
    loaded_model = MLP(input_dim=784, hidden_dim=256, output_dim=10)
    loaded_model.load_state_dict(torch.load("model.pth"))
    print("模型已从 model.pth 加载")

    # 模型模式切换
    model.train()   # 训练模式 (Dropout和BN正常工作)
    model.eval()    # 评估模式 (Dropout关闭, BN使用运行统计量)

    # 移到GPU
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    print(f"\n模型已移至: {device}")

    # 冻结层 (迁移学习常用)
    for param in model.fc1.parameters():
        param.requires_grad = False
    frozen = sum(1 for p in model.parameters() if not p.requires_grad)
    print(f"冻结了 {frozen} 个参数张量")


if __name__ == "__main__":
    model_utilities()

    # 测试前向传播
    model = SimpleCNN(num_classes=10)
    x = torch.randn(4, 1, 28, 28)  # batch=4, 1通道, 28x28
    output = model(x)
    print(f"\nCNN输出形状: {output.shape}")  # (4, 10)
