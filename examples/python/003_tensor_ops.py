# Seed 003, "Tensor操作" code example (creation, shapes, math, indexing; the GPU part checks for
# CUDA and skips itself without it). Changed: the import line only.
# Tensor操作 - 完整示例
import ember as torch
import numpy as np


# ===================== 1. Tensor创建 =====================

def tensor_creation():
    """Tensor创建的各种方式"""
    print("=" * 50)
    print("1. Tensor创建方式")
    print("=" * 50)

    # 从Python列表创建
    t1 = torch.tensor([1, 2, 3, 4])
    print(f"从列表创建: {t1}")

    # 从NumPy数组创建
    np_arr = np.array([[1.0, 2.0], [3.0, 4.0]])
    t2 = torch.from_numpy(np_arr)
    print(f"从NumPy创建: {t2}")

    # 指定数据类型
    t3 = torch.tensor([1, 2, 3], dtype=torch.float32)
    print(f"指定float32: {t3}")

    # 特殊Tensor
    zeros = torch.zeros(3, 4)         # 全零
    ones = torch.ones(2, 3)           # 全一
    eye = torch.eye(3)                # 单位矩阵
    rand = torch.rand(2, 3)           # 均匀分布 [0, 1)
    randn = torch.randn(2, 3)         # 标准正态分布
    arange = torch.arange(0, 10, 2)   # 等差序列
    linspace = torch.linspace(0, 1, 5)  # 等间隔

    print(f"\n全零矩阵 (3x4):\n{zeros}")
    print(f"随机矩阵 (2x3):\n{rand}")
    print(f"等差序列: {arange}")
    print(f"等间隔序列: {linspace}")

    # 根据已有Tensor创建(形状和设备一致)
    t4 = torch.zeros_like(t2)
    t5 = torch.randn_like(t3)
    print(f"\nzeros_like: {t4}")
    print(f"randn_like: {t5}")


# ===================== 2. Tensor形状操作 =====================

def tensor_shape_operations():
    """Tensor形状变换"""
    print("\n" + "=" * 50)
    print("2. Tensor形状操作")
    print("=" * 50)

    x = torch.arange(12).float()
    print(f"原始Tensor: {x}")
    print(f"  形状: {x.shape}")

    # reshape / view
    x_2d = x.reshape(3, 4)
    print(f"\nreshape(3, 4):\n{x_2d}")

    x_view = x.view(4, 3)
    print(f"\nview(4, 3):\n{x_view}")

    # -1 自动推断维度
    x_auto = x.reshape(2, -1)
    print(f"\nreshape(2, -1):\n{x_auto}")
    print(f"  形状: {x_auto.shape}")  # (2, 6)

    # 增加/删除维度
    x_3d = x_2d.unsqueeze(0)     # 增加批次维度
    print(f"\nunsqueeze(0) 形状: {x_3d.shape}")  # (1, 3, 4)

    x_squeeze = x_3d.squeeze(0)   # 删除大小为1的维度
    print(f"squeeze(0) 形状: {x_squeeze.shape}")  # (3, 4)

    # 转置
    x_t = x_2d.t()               # 2D转置
    print(f"\n转置:\n{x_t}")

    # permute - 多维转置
    batch = torch.randn(2, 3, 4)
    batch_p = batch.permute(0, 2, 1)  # (2, 4, 3)
    print(f"\npermute(0,2,1): {batch.shape} -> {batch_p.shape}")

    # 拼接
    a = torch.ones(2, 3)
    b = torch.zeros(2, 3)
    cat_0 = torch.cat([a, b], dim=0)  # 沿行拼接
    cat_1 = torch.cat([a, b], dim=1)  # 沿列拼接
    print(f"\ncat(dim=0) 形状: {cat_0.shape}")  # (4, 3)
    print(f"cat(dim=1) 形状: {cat_1.shape}")  # (2, 6)

    # stack - 创建新维度
    stacked = torch.stack([a, b], dim=0)
    print(f"stack(dim=0) 形状: {stacked.shape}")  # (2, 2, 3)


# ===================== 3. Tensor数学运算 =====================

def tensor_math_operations():
    """Tensor数学运算"""
    print("\n" + "=" * 50)
    print("3. Tensor数学运算")
    print("=" * 50)

    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = torch.tensor([[5.0, 6.0], [7.0, 8.0]])

    # 逐元素运算
    print(f"a + b =\n{a + b}")
    print(f"a * b =\n{a * b}")        # 逐元素乘法
    print(f"a / b =\n{a / b}")
    print(f"a ** 2 =\n{a ** 2}")

    # 矩阵乘法
    mm = torch.matmul(a, b)           # 或 a @ b
    print(f"\n矩阵乘法 (a @ b):\n{mm}")

    # 批量矩阵乘法
    batch_a = torch.randn(4, 3, 2)   # batch=4, 3x2矩阵
    batch_b = torch.randn(4, 2, 5)   # batch=4, 2x5矩阵
    batch_mm = torch.bmm(batch_a, batch_b)
    print(f"\n批量矩阵乘法: {batch_a.shape} @ {batch_b.shape}"
          f" = {batch_mm.shape}")

    # 统计运算
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    print(f"\n统计运算:")
    print(f"  sum: {x.sum()}")
    print(f"  mean: {x.mean()}")
    print(f"  std: {x.std()}")
    print(f"  max: {x.max()}")
    print(f"  min: {x.min()}")
    print(f"  argmax: {x.argmax()}")

    # 沿维度运算
    matrix = torch.tensor([[1.0, 2.0, 3.0],
                           [4.0, 5.0, 6.0]])
    print(f"\n沿dim=0求和 (列): {matrix.sum(dim=0)}")
    print(f"沿dim=1求和 (行): {matrix.sum(dim=1)}")
    print(f"沿dim=1求最大值: {matrix.max(dim=1)}")

    # 广播机制 (Broadcasting)
    print(f"\n广播机制:")
    a = torch.tensor([[1.0], [2.0], [3.0]])  # (3, 1)
    b = torch.tensor([10.0, 20.0, 30.0])     # (3,)
    result = a + b  # 广播为 (3, 3)
    print(f"  {a.shape} + {b.shape} = {result.shape}")
    print(f"  结果:\n{result}")


# ===================== 4. Tensor索引和切片 =====================

def tensor_indexing():
    """Tensor索引和切片"""
    print("\n" + "=" * 50)
    print("4. Tensor索引和切片")
    print("=" * 50)

    x = torch.arange(20).reshape(4, 5).float()
    print(f"原始矩阵 (4x5):\n{x}")

    # 基础索引
    print(f"\nx[0]: {x[0]}")           # 第一行
    print(f"x[0, 0]: {x[0, 0]}")      # 第一个元素
    print(f"x[-1]: {x[-1]}")           # 最后一行

    # 切片
    print(f"\nx[:2]: \n{x[:2]}")       # 前两行
    print(f"x[:, :3]: \n{x[:, :3]}")   # 前三列
    print(f"x[1:3, 2:4]: \n{x[1:3, 2:4]}")  # 子矩阵

    # 布尔索引
    mask = x > 10
    print(f"\nx > 10 的元素: {x[mask]}")

    # fancy indexing
    indices = torch.tensor([0, 2, 3])
    print(f"\n选择第0,2,3行:\n{x[indices]}")

    # where - 条件选择
    result = torch.where(x > 10, x, torch.zeros_like(x))
    print(f"\nwhere(x>10, x, 0):\n{result}")


# ===================== 5. GPU操作 =====================

def tensor_gpu_operations():
    """Tensor GPU操作"""
    print("\n" + "=" * 50)
    print("5. GPU操作")
    print("=" * 50)

    # 检测设备
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"当前设备: {device}")

    # 在GPU上创建Tensor
    x = torch.randn(3, 3, device=device)
    print(f"\n{device}上创建: {x.device}")

    # CPU和GPU之间移动
    x_cpu = torch.randn(3, 3)
    x_gpu = x_cpu.to(device)           # 移到GPU
    x_back = x_gpu.cpu()               # 移回CPU
    print(f"CPU -> {device}: {x_gpu.device}")
    print(f"{device} -> CPU: {x_back.device}")

    # GPU运算速度对比
    if torch.cuda.is_available():
        import time

        size = 5000
        a_cpu = torch.randn(size, size)
        b_cpu = torch.randn(size, size)
        a_gpu = a_cpu.cuda()
        b_gpu = b_cpu.cuda()

        # CPU计算
        start = time.time()
        _ = torch.matmul(a_cpu, b_cpu)
        cpu_time = time.time() - start

        # GPU计算 (含同步)
        torch.cuda.synchronize()
        start = time.time()
        _ = torch.matmul(a_gpu, b_gpu)
        torch.cuda.synchronize()
        gpu_time = time.time() - start

        print(f"\n{size}x{size} 矩阵乘法:")
        print(f"  CPU 耗时: {cpu_time:.4f}秒")
        print(f"  GPU 耗时: {gpu_time:.4f}秒")
        print(f"  加速比: {cpu_time / gpu_time:.1f}x")


# 运行所有示例
if __name__ == "__main__":
    tensor_creation()
    tensor_shape_operations()
    tensor_math_operations()
    tensor_indexing()
    tensor_gpu_operations()
