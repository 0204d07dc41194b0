# Seed 003, "Autograd自动求导" code example. Changed: the import lines only.
# Autograd自动求导 - 完整示例
import ember as torch
import ember.nn as nn


# ===================== 1. 基础自动求导 =====================

def basic_autograd():
    """基础自动求导演示"""
    print("=" * 50)
    print("1. 基础自动求导")
    print("=" * 50)

    # 创建需要梯度的Tensor
    x = torch.tensor(2.0, requires_grad=True)
    w = torch.tensor(3.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)

    # 前向计算: y = w*x + b
    y = w * x + b
    print(f"y = w*x + b = {w}*{x} + {b} = {y}")
    print(f"y.grad_fn: {y.grad_fn}")

    # 反向传播
    y.backward()

    # 查看梯度
    print(f"\n梯度:")
    print(f"  dy/dx = w = {x.grad}")      # 3.0
    print(f"  dy/dw = x = {w.grad}")      # 2.0
    print(f"  dy/db = 1 = {b.grad}")      # 1.0


# ===================== 2. 复杂函数的梯度 =====================

def complex_gradient():
    """复杂函数的梯度计算"""
    print("\n" + "=" * 50)
    print("2. 复杂函数的梯度")
    print("=" * 50)

    # f(x) = x^3 + 2x^2 + 3x + 4
    x = torch.tensor(2.0, requires_grad=True)
    f = x**3 + 2 * x**2 + 3 * x + 4
    f.backward()
    # df/dx = 3x^2 + 4x + 3 = 3*4 + 4*2 + 3 = 23
    print(f"f(x) = x^3 + 2x^2 + 3x + 4")
    print(f"f(2) = {f.item()}")
    print(f"f'(x) = 3x^2 + 4x + 3")
    print(f"f'(2) = {x.grad.item()}")  # 23.0

    # 多变量函数
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()  # y = x1^2 + x2^2 + x3^2
    y.backward()
    print(f"\ny = sum(x^2), x = {[1, 2, 3]}")
    print(f"dy/dx = 2x = {x.grad}")  # [2, 4, 6]


# ===================== 3. 梯度累积和清零 =====================

def gradient_accumulation():
    """梯度累积和清零"""
    print("\n" + "=" * 50)
    print("3. 梯度累积和清零")
    print("=" * 50)

    w = torch.tensor(1.0, requires_grad=True)

    # 第一次backward
    y1 = w * 2
    y1.backward()
    print(f"第1次backward后 w.grad = {w.grad}")  # 2.0

    # 第二次backward - 梯度会累积!
    y2 = w * 3
    y2.backward()
    print(f"第2次backward后 w.grad = {w.grad}")  # 5.0 (2+3)

    # 清零梯度
    w.grad.zero_()
    print(f"清零后 w.grad = {w.grad}")  # 0.0

    # 第三次backward
    y3 = w * 4
    y3.backward()
    print(f"第3次backward后 w.grad = {w.grad}")  # 4.0

    print("\n注意: 在训练循环中,每次backward前必须清零梯度!")


# ===================== 4. 禁用梯度计算 =====================

def disable_gradient():
    """禁用梯度计算"""
    print("\n" + "=" * 50)
    print("4. 禁用梯度计算")
    print("=" * 50)

    x = torch.randn(3, requires_grad=True)

    # 方法1: torch.no_grad() 上下文管理器
    with torch.no_grad():
        y = x * 2
        print(f"no_grad中: y.requires_grad = {y.requires_grad}")

    # 方法2: detach()
    y_detached = x.detach()
    print(f"detach后: y.requires_grad = {y_detached.requires_grad}")

    # 方法3: @torch.no_grad() 装饰器
    @torch.no_grad()
    def inference(model_input):
        return model_input * 2

    result = inference(x)
    print(f"装饰器: result.requires_grad = {result.requires_grad}")

    print("\n使用场景: 推理时、评估时、计算指标时")


# ===================== 5. 实际应用:线性回归 =====================

def linear_regression_autograd():
    """用Autograd实现线性回归"""
    print("\n" + "=" * 50)
    print("5. 线性回归 (纯Autograd)")
    print("=" * 50)

    # 生成数据: y = 3x + 2 + noise
    torch.manual_seed(42)
    X = torch.randn(100, 1)
    y_true = 3 * X + 2 + torch.randn(100, 1) * 0.3

    # 初始化参数
    w = torch.randn(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)

    learning_rate = 0.1
    epochs = 100

    for epoch in range(epochs):
        # 前向传播
        y_pred = X * w + b

        # 计算MSE损失
        loss = ((y_pred - y_true) ** 2).mean()

        # 反向传播
        loss.backward()

        # 手动更新参数 (不记录梯度)
        with torch.no_grad():
            w -= learning_rate * w.grad
            b -= learning_rate * b.grad

        # 清零梯度
        w.grad.zero_()
        b.grad.zero_()

        if (epoch + 1) % 20 == 0:
            print(f"Epoch {epoch+1:3d}: "
                  f"loss={loss.item():.4f}, "
                  f"w={w.item():.4f}, "
                  f"b={b.item():.4f}")

    print(f"\n最终结果: y = {w.item():.4f}x + {b.item():.4f}")
    print(f"真实关系: y = 3.0000x + 2.0000")


if __name__ == "__main__":
    basic_autograd()
    complex_gradient()
    gradient_accumulation()
    disable_gradient()
    linear_regression_autograd()
