# Seed 003, "DataLoader" code example. Changed: the import lines; load_mnist reads Fashion-MNIST
# from Debian's dataset-fashion-mnist package (same IDX format as MNIST; ember never downloads):
# the two datasets.MNIST(root="./data", ...) calls are datasets.FashionMNIST(root=DATA_ROOT, ...).
# DataLoader - 完整示例
import ember as torch
from ember.utils.data import Dataset, DataLoader, random_split
import ember.vision as torchvision
import ember.vision.transforms as transforms
from typing import Tuple, List, Dict, Any, Optional
import numpy as np

DATA_ROOT = "/usr/share/datasets/fashion-mnist"  # added: Debian's dataset-fashion-mnist


# ===================== 1. 自定义Dataset =====================

class CustomDataset(Dataset):
    """自定义数据集"""

    def __init__(self, data: np.ndarray, labels: np.ndarray,
                 transform=None):
        self.data = torch.FloatTensor(data)
        self.labels = torch.LongTensor(labels)
        self.transform = transform

    def __len__(self) -> int:
        """返回数据集大小"""
        return len(self.data)

    def __getitem__(self, idx: int) -> Tuple[torch.Tensor, int]:
        """获取单个样本"""
        x = self.data[idx]
        y = self.labels[idx]

        if self.transform:
            x = self.transform(x)

        return x, y


# ===================== 2. 图像数据集 =====================

class ImageFolderDataset(Dataset):
    """图像文件夹数据集"""

    def __init__(self, image_paths: List[str],
                 labels: List[int],
                 transform=None):
        self.image_paths = image_paths
        self.labels = labels
        self.transform = transform

    def __len__(self) -> int:
        return len(self.image_paths)

    def __getitem__(self, idx: int) -> Tuple[torch.Tensor, int]:
        from PIL import Image

        # 加载图像
        image = Image.open(self.image_paths[idx]).convert("RGB")

        # 应用变换
        if self.transform:
            image = self.transform(image)

        label = self.labels[idx]
        return image, label


# ===================== 3. 数据变换 =====================

def get_transforms(train: bool = True):
    """获取数据变换"""
    if train:
        return transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ColorJitter(
                brightness=0.2, contrast=0.2,
                saturation=0.2, hue=0.1
            ),
            transforms.ToTensor(),
            transforms.Normalize(
                mean=[0.485, 0.456, 0.406],
                std=[0.229, 0.224, 0.225]
            )
        ])
    else:
        return transforms.Compose([
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize(
                mean=[0.485, 0.456, 0.406],
                std=[0.229, 0.224, 0.225]
            )
        ])


# ===================== 4. MNIST数据集加载 =====================

def load_mnist(batch_size: int = 64) -> Tuple[DataLoader, DataLoader]:
    """加载MNIST数据集"""

    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.1307,), (0.3081,))
    ])

    train_dataset = torchvision.datasets.FashionMNIST(
        root=DATA_ROOT,
        train=True,
        download=True,
        transform=transform
    )

    test_dataset = torchvision.datasets.FashionMNIST(
        root=DATA_ROOT,
        train=False,
        download=True,
        transform=transform
    )

    train_loader = DataLoader(
        train_dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=2,
        pin_memory=True,
        drop_last=True
    )

    test_loader = DataLoader(
        test_dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=2,
        pin_memory=True
    )

    print(f"MNIST 数据集:")
    print(f"  训练集: {len(train_dataset)} 样本")
    print(f"  测试集: {len(test_dataset)} 样本")
    print(f"  批次大小: {batch_size}")
    print(f"  训练批次数: {len(train_loader)}")
    print(f"  测试批次数: {len(test_loader)}")

    # 查看一个批次
    images, labels = next(iter(train_loader))
    print(f"\n  批次图像形状: {images.shape}")  # (64, 1, 28, 28)
    print(f"  批次标签形状: {labels.shape}")    # (64,)

    return train_loader, test_loader


# ===================== 5. 数据集分割 =====================

def split_dataset_demo():
    """数据集分割演示"""
    print("\n" + "=" * 50)
    print("数据集分割")
    print("=" * 50)

    # 创建一个简单数据集
    data = np.random.randn(1000, 10)
    labels = np.random.randint(0, 3, size=1000)
    dataset = CustomDataset(data, labels)

    # 按比例分割: 80% 训练, 10% 验证, 10% 测试
    total = len(dataset)
    train_size = int(0.8 * total)
    val_size = int(0.1 * total)
    test_size = total - train_size - val_size

    train_set, val_set, test_set = random_split(
        dataset, [train_size, val_size, test_size],
        generator=torch.Generator().manual_seed(42)
    )

    print(f"数据集大小: {total}")
    print(f"训练集: {len(train_set)}")
    print(f"验证集: {len(val_set)}")
    print(f"测试集: {len(test_set)}")

    # 创建DataLoader
    train_loader = DataLoader(train_set, batch_size=32,
                              shuffle=True)
    val_loader = DataLoader(val_set, batch_size=32,
                            shuffle=False)
    test_loader = DataLoader(test_set, batch_size=32,
                             shuffle=False)

    return train_loader, val_loader, test_loader


if __name__ == "__main__":
    split_dataset_demo()

    print("\n" + "=" * 50)
    print("MNIST数据集加载")
    print("=" * 50)
    train_loader, test_loader = load_mnist(batch_size=64)
