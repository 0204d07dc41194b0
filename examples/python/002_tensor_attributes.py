# Seed 002, section 3.1.2 (attributes and shape changes). Changed: the import line (the seed relies
# on the `import torch` of section 3.1.1). The seed evaluates expressions without printing them.
import ember as torch

x = torch.randn(2, 3, 4)

# 基本属性
x.shape  # torch.Size([2, 3, 4]) — 形状
x.dtype  # torch.float32 — 数据类型
x.device  # cpu 或 cuda:0 — 所在设备
x.ndim  # 3 — 维度数
x.numel()  # 24 — 元素总数

# 形状变换
x.view(2, 12)  # 返回新视图(共享内存),要求张量连续
x.reshape(2, 12)  # 优先返回视图,必要时拷贝
x.permute(2, 0, 1)  # 维度重排:(2,3,4) → (4,2,3)
x.transpose(0, 1)  # 交换两个维度
x.unsqueeze(0)  # 在维度0插入:(2,3,4) → (1,2,3,4)
x.squeeze()  # 移除所有大小为1的维度

# LLM 中的典型用法:注意力掩码维度扩展
# attention_mask: (batch_size, seq_len) → (batch_size, 1, 1, seq_len)
attention_mask = torch.ones(4, 128)  # batch=4, seq_len=128
expanded_mask = attention_mask[:, None, None, :]  # (4, 1, 1, 128)
