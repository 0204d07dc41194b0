"""A GPT-2 124M train step on the GPU (12 layers, 768 wide, 12 heads, T=1024, vocabulary 50257,
tied embedding): forward under bfloat16 autocast, cross entropy, backward, clip_grad_norm_(1.0) and
AdamW, as nanoGPT trains it. ember beside PyTorch eager and (with --compile) torch.compile, same
GPU, same run; ms per step from CUDA events and model-FLOP utilisation against the GPU's dense
bf16 peak (989 TFLOP/s on an H100 SXM): 6 N + 12 L T d FLOPs per token (N: non-embedding-position
parameters, PaLM's count, as nanoGPT's estimate_mfu).
    python bench/bench_gpt2_cuda.py [--batch 8] [--compile] [--profile]
--profile prints each framework's profiler table (self CUDA time) of one step instead."""
import argparse
import sys

import ember
from bench_cuda import gpu_time_ms

try:
    import torch
except ImportError:
    torch = None

LAYERS, WIDTH, HEADS, T_CTX, VOCAB = 12, 768, 12, 1024, 50257
DEVICE = "cuda"
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}


def gpt2(T):
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH)
            self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
            self.c_proj = nn.Linear(WIDTH, WIDTH)
            self.ln_2 = nn.LayerNorm(WIDTH)
            self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
            self.mlp_proj = nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(WIDTH, dim=2)
            q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, WIDTH)
            self.wpe = nn.Embedding(T_CTX, WIDTH)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(WIDTH)
            self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
            self.lm_head.weight = self.wte.weight  # tied, as GPT-2
            for m in self.modules():  # GPT-2's initialisation: the first loss is about ln(50257)
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

        def forward(self, idx, targets):
            pos = T.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def step_fn(T, batch, compile_it=False):
    T.manual_seed(0)
    model = gpt2(T).to(DEVICE)
    opt = T.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    run = T.compile(model) if compile_it else model
    idx = T.randint(0, VOCAB, (batch, T_CTX), device=DEVICE)
    targets = T.randint(0, VOCAB, (batch, T_CTX), device=DEVICE)
    n_params = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        with T.autocast(device_type="cuda", dtype=T.bfloat16):
            loss = run(idx, targets)
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss)

    return step, n_params, losses


def measure(T, batch, compile_it=False):
    step, n_params, losses = step_fn(T, batch, compile_it)
    ms = gpu_time_ms(T, step, repeat=10, warmup=3 if not compile_it else 5)
    flops = (6 * n_params + 12 * LAYERS * T_CTX * WIDTH) * batch * T_CTX
    first, last = float(losses[0]), float(losses[-1])
    return ms, flops / (ms * 1e-3), first, last


def profile(T, batch):
    step, _, _ = step_fn(T, batch)
    for _ in range(3):
        step()
    T.cuda.synchronize()
    prof_mod = T.profiler
    with prof_mod.profile(activities=[prof_mod.ProfilerActivity.CPU, prof_mod.ProfilerActivity.CUDA],
                          record_shapes=True) as prof:
        step()
        T.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=60))
    # the ops again by input shapes: which call of an op the time goes to
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cuda_time_total", row_limit=30,
                                                             max_name_column_width=40, max_shapes_column_width=70))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--compile", action="store_true", help="also torch.compile (its compile time is not timed)")
    ap.add_argument("--profile", action="store_true", help="one step under each framework's profiler")
    args = ap.parse_args()
    if not ember.cuda.is_available():
        print("no CUDA GPU on this machine: nothing measured")
        return 0
    name = ember.cuda.get_device_name()
    peak = next((v for k, v in PEAK_BF16.items() if k in name), float("nan"))
    print(f"GPU: {name}; GPT-2 124M, batch {args.batch} x {T_CTX} tokens, bf16 autocast, AdamW")
    if args.profile:
        for T in [ember] + ([torch] if torch is not None and torch.cuda.is_available() else []):
            print(f"#### {T.__name__}")
            profile(T, args.batch)
        return 0
    print(f"{'':14s} {'ms/step':>9s} {'tokens/s':>10s} {'MFU':>6s} {'ember/this':>11s} {'loss first -> last':>20s}")
    base = None
    runs = [("ember", ember, False)]
    if torch is not None and torch.cuda.is_available():
        runs += [("torch eager", torch, False)] + ([("torch.compile", torch, True)] if args.compile else [])
    for label, T, compile_it in runs:  # each row as soon as it is measured (compile can be slow)
        ms, rate, first, last = measure(T, args.batch, compile_it)
        base = base or ms
        tokens = args.batch * T_CTX / (ms * 1e-3)
        print(f"{label:14s} {ms:9.1f} {tokens:10.0f} {rate / peak:6.1%} {base / ms:11.2f} {first:9.3f} -> {last:7.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
