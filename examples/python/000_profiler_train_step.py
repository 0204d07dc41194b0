# Seed 000, "代码示例:用 profiler 分析一个训练 step". Changed: the import line; the seed's
# sort_by="cuda_time_total" is kept (without a GPU there is no device column and the order is
# that of CUDA total = 0, i.e. recording order), and a second table sorted by self CPU time plus
# two checks of what the trace contains are added at the end. On a machine without a GPU the
# profiler warns that CUDA activity cannot be traced, as PyTorch's does.
import json

import ember as torch
import ember.nn as nn
from ember.profiler import profile, record_function, ProfilerActivity

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
data = torch.randn(128, 1024, device=device)
labels = torch.randint(0, 10, (128,), device=device)
for _ in range(3):
    criterion(model(data), labels).backward()
    optimizer.step(); optimizer.zero_grad()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, profile_memory=True) as prof:
    with record_function("data_to_gpu"):
        d = torch.randn(128, 1024).to(device)
        l = torch.randint(0, 10, (128,)).to(device)
    with record_function("forward"):
        loss = criterion(model(d), l)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer_step"):
        optimizer.step(); optimizer.zero_grad()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15))
prof.export_chrome_trace("trace.json")

# Added: the step's phases by their own CPU time, and what the trace holds.
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))
regions = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in ("forward", "backward", "optimizer_step")}
print("backward / forward:", round(regions["backward"] / regions["forward"], 2))
trace = json.load(open("trace.json"))
print("trace events:", len(trace["traceEvents"]), "| regions in trace:",
      sorted({e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"}))
