# Seed 001, "动态计算图". Changed: the import lines (the seed relies on an earlier `import torch`);
# indentation restored. The seed only defines forward(); the two calls at the end are added.
import ember as torch
import ember.nn as nn


# 动态控制流
def forward(x, use_relu=True):
    x = nn.Linear(10, 10)(x)
    if use_relu:  # 运行时决定是否使用ReLU
        x = torch.relu(x)
    return x


out = forward(torch.randn(4, 10))  # added
print(out.shape, bool((out >= 0).all()))  # added
print(forward(torch.randn(4, 10), use_relu=False).shape)  # added
