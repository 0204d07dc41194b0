# Seed 003, "模型调试与性能分析" code example (gradient accumulation, gradient checkpointing, memory
# estimates, per-layer parameter counts of torchvision's resnet18). Changed: the import lines
# (resnet18 comes from ember.vision.models). The block marked "added" at the end runs the
# checkpointed model and the gradient monitor, which the seed defines but never calls.
# 模型调试与性能分析工具
import ember as torch
import ember.nn as nn
import time


# ===================== 1. 梯度检查工具 =====================

class GradientMonitor:
    """梯度监控器 -- 检测梯度爆炸/消失"""

    def __init__(self, model: nn.Module):
        self.model = model
        self.grad_history = {}

    def check_gradients(self) -> dict:
        """检查所有参数的梯度状态"""
        stats = {}
        for name, param in self.model.named_parameters():
            if param.grad is not None:
                grad = param.grad
                stats[name] = {
                    "mean": grad.mean().item(),
                    "std": grad.std().item(),
                    "max": grad.max().item(),
                    "min": grad.min().item(),
                    "has_nan": bool(torch.isnan(grad).any()),
                    "has_inf": bool(torch.isinf(grad).any()),
                }
        return stats

    def print_gradient_report(self):
        """打印梯度报告"""
        stats = self.check_gradients()
        print("=" * 60)
        print("  梯度监控报告")
        print("=" * 60)

        for name, s in stats.items():
            status = "OK"
            if s["has_nan"]:
                status = "NaN!"
            elif s["has_inf"]:
                status = "Inf!"
            elif abs(s["max"]) > 100:
                status = "可能爆炸"
            elif abs(s["max"]) < 1e-7:
                status = "可能消失"

            print(f"  {name:30s} | max={s['max']:>10.4f} "
                  f"| mean={s['mean']:>10.6f} | {status}")


# ===================== 2. 显存监控 =====================

class MemoryTracker:
    """GPU显存追踪器"""

    @staticmethod
    def get_memory_info() -> dict:
        """获取当前显存使用情况"""
        if not torch.cuda.is_available():
            return {"status": "无GPU"}

        return {
            "已分配": f"{torch.cuda.memory_allocated() / 1024**2:.1f} MB",
            "已缓存": f"{torch.cuda.memory_reserved() / 1024**2:.1f} MB",
            "最大分配": f"{torch.cuda.max_memory_allocated() / 1024**2:.1f} MB",
            "最大缓存": f"{torch.cuda.max_memory_reserved() / 1024**2:.1f} MB",
        }

    @staticmethod
    def estimate_model_memory(model: nn.Module) -> dict:
        """估算模型显存占用"""
        param_size = sum(p.numel() * p.element_size()
                        for p in model.parameters())
        buffer_size = sum(b.numel() * b.element_size()
                         for b in model.buffers())

        # 估算: 训练时需要 参数 + 梯度 + 优化器状态(2x for Adam)
        total_training = param_size * 4  # 参数+梯度+Adam(m+v)

        return {
            "参数大小": f"{param_size / 1024**2:.1f} MB",
            "缓冲区": f"{buffer_size / 1024**2:.1f} MB",
            "训练估算(含优化器)": f"{total_training / 1024**2:.1f} MB",
            "参数量": f"{sum(p.numel() for p in model.parameters()):,}",
        }


# ===================== 3. 梯度累积训练 =====================

def gradient_accumulation_training():
    """梯度累积 -- 用小显存模拟大batch"""
    print("=" * 60)
    print("  梯度累积训练示例")
    print("=" * 60)

    model = nn.Linear(100, 10)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    # 等效batch_size = micro_batch * accumulation_steps = 4 * 8 = 32
    micro_batch_size = 4
    accumulation_steps = 8
    effective_batch = micro_batch_size * accumulation_steps

    print(f"微批次大小: {micro_batch_size}")
    print(f"累积步数: {accumulation_steps}")
    print(f"等效批次: {effective_batch}")

    # 训练循环
    for epoch in range(3):
        total_loss = 0
        optimizer.zero_grad()

        for step in range(accumulation_steps):
            x = torch.randn(micro_batch_size, 100)
            y = torch.randint(0, 10, (micro_batch_size,))

            outputs = model(x)
            loss = criterion(outputs, y) / accumulation_steps  # 除以累积步数
            loss.backward()

            total_loss += loss.item()

        # 累积完成后统一更新
        optimizer.step()
        optimizer.zero_grad()

        print(f"Epoch {epoch+1}: loss={total_loss:.4f}")


# ===================== 4. 梯度检查点 =====================

def gradient_checkpointing_demo():
    """梯度检查点 -- 用计算换显存"""
    from ember.utils.checkpoint import checkpoint

    class LargeModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([
                nn.Sequential(
                    nn.Linear(512, 512),
                    nn.ReLU(),
                    nn.Linear(512, 512),
                    nn.ReLU(),
                ) for _ in range(10)
            ])

        def forward(self, x, use_checkpoint=False):
            for layer in self.layers:
                if use_checkpoint:
                    # 不保存中间激活值, 反向传播时重新计算
                    x = checkpoint(layer, x, use_reentrant=False)
                else:
                    x = layer(x)
            return x

    model = LargeModel()

    print("=" * 50)
    print("梯度检查点演示")
    print("=" * 50)

    mem_info = MemoryTracker.estimate_model_memory(model)
    for k, v in mem_info.items():
        print(f"  {k}: {v}")

    print("\n使用梯度检查点可节省 ~60-70% 的激活值显存")
    print("代价是训练速度降低约 ~30% (需要重新计算)")


# ===================== 5. 模型参数统计 =====================

def count_parameters_by_layer(model: nn.Module):
    """按层统计参数量"""
    print("=" * 60)
    print("  模型参数分布")
    print("=" * 60)

    total = 0
    for name, module in model.named_modules():
        params = sum(p.numel() for p in module.parameters(recurse=False))
        if params > 0:
            print(f"  {name:40s} {params:>12,} 参数")
            total += params

    print(f"  {'总计':40s} {total:>12,} 参数")
    print(f"  模型大小 (FP32): {total * 4 / 1024**2:.1f} MB")
    print(f"  模型大小 (FP16): {total * 2 / 1024**2:.1f} MB")


if __name__ == "__main__":
    gradient_accumulation_training()
    gradient_checkpointing_demo()

    # 参数统计
    from ember.vision.models import resnet18
    try:
        model = resnet18()
        count_parameters_by_layer(model)
    except ImportError:
        print("需要安装torchvision")

    # added from here on: the seed defines GradientMonitor and the checkpointed LargeModel but never
    # runs them. Run one backward pass with and without checkpointing (same weights and input),
    # compare the gradients, and print the monitor's report for the checkpointed run.
    from ember.utils.checkpoint import checkpoint

    class LargeModel(nn.Module):  # the same model as in gradient_checkpointing_demo
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([
                nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU())
                for _ in range(10)
            ])

        def forward(self, x, use_checkpoint=False):
            for layer in self.layers:
                x = checkpoint(layer, x, use_reentrant=False) if use_checkpoint else layer(x)
            return x

    torch.manual_seed(0)
    model = LargeModel()
    x = torch.randn(8, 512)
    model(x).sum().backward()
    plain = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x, use_checkpoint=True).sum().backward()
    diff = max((p.grad - g).abs().max().item() for p, g in zip(model.parameters(), plain))
    print(f"checkpoint vs plain max grad difference: {diff:.3e}")
    GradientMonitor(model).print_gradient_report()
