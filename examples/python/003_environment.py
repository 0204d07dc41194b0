# Seed 003, "PyTorch简介" code example (environment check and first tensors).
# Changed: the import line only.
# PyTorch简介 - 环境验证和基础操作
import ember as torch
import sys


def check_pytorch_environment():
    """检查PyTorch环境"""
    print("=" * 50)
    print("PyTorch 环境信息")
    print("=" * 50)

    print(f"PyTorch 版本: {torch.__version__}")
    print(f"Python 版本: {sys.version}")

    # CUDA信息
    print(f"\nCUDA 可用: {torch.cuda.is_available()}")
    if torch.cuda.is_available():
        print(f"CUDA 版本: {torch.version.cuda}")
        print(f"GPU 数量: {torch.cuda.device_count()}")
        for i in range(torch.cuda.device_count()):
            print(f"  GPU {i}: {torch.cuda.get_device_name(i)}")
            mem = torch.cuda.get_device_properties(i).total_mem
            print(f"  显存: {mem / 1024**3:.1f} GB")

    # MPS信息 (Apple Silicon)
    if hasattr(torch.backends, "mps"):
        print(f"\nMPS 可用: {torch.backends.mps.is_available()}")

    # 选择最佳设备
    if torch.cuda.is_available():
        device = torch.device("cuda")
    elif hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    print(f"\n当前使用设备: {device}")
    return device


def basic_tensor_demo():
    """基础Tensor演示"""
    # 创建Tensor
    x = torch.tensor([1.0, 2.0, 3.0])
    print(f"\n基础Tensor: {x}")
    print(f"  形状: {x.shape}")
    print(f"  数据类型: {x.dtype}")
    print(f"  设备: {x.device}")

    # 简单计算
    y = x * 2 + 1
    print(f"  x * 2 + 1 = {y}")

    # 矩阵运算
    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    B = torch.tensor([[5.0, 6.0], [7.0, 8.0]])
    C = torch.matmul(A, B)
    print(f"\n矩阵乘法结果:\n{C}")


if __name__ == "__main__":
    device = check_pytorch_environment()
    basic_tensor_demo()
