"""A character-level GPT trained end to end on real English: the license texts Debian's base-files
package ships in /usr/share/common-licenses (GPL, LGPL, GFDL, Apache, ...: about 260 KB, on every
Debian system). Prints the loss with a progress bar, saves a checkpoint (save_pretrained: a
transformers-style folder plus the alphabet), then samples text.

    PYTHONPATH=python:build/python .venv/bin/python examples/char_gpt.py --steps 1500
    PYTHONPATH=python:build/python .venv/bin/python examples/char_gpt.py --sample-only --out runs/char_gpt
"""
import argparse
import json
import math
import os
import sys
import time

import ember
from ember.models import CharTokenizer, GPT2Config, GPT2LMHeadModel

CORPUS_DIR = "/usr/share/common-licenses"


def load_corpus(folder=CORPUS_DIR):
    """Every license text once (the symlinks point at files already read)."""
    seen, parts = set(), []
    for name in sorted(os.listdir(folder)):
        path = os.path.realpath(os.path.join(folder, name))
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            parts.append(f.read())
    return "\n\n".join(parts)


def batches(data, block, batch, generator):
    """Random windows of block + 1 characters: inputs and the same shifted by one."""
    n = data.shape[0] - block - 1
    while True:
        starts = ember.randint(0, n, (batch,), generator=generator)
        x = ember.stack([data[s:s + block] for s in starts.tolist()])
        yield x


def progress(step, steps, loss, start, width=30):
    done = int(width * step / steps)
    rate = step / max(time.perf_counter() - start, 1e-9)
    eta = (steps - step) / rate if rate > 0 else 0
    sys.stdout.write(f"\r  [{'#' * done}{'.' * (width - done)}] {step}/{steps} loss {loss:.3f} "
                     f"{rate:.1f} it/s eta {eta:.0f}s ")
    sys.stdout.flush()


def train(steps=1500, block=128, batch=32, n_layer=4, n_embd=128, n_head=4, lr=3e-3, seed=0, log_every=100,
          out=None, show_progress=True, compile=False):
    """Trains and returns (model, tokenizer, losses): the mean training loss of each log_every steps."""
    text = load_corpus()
    tok = CharTokenizer.from_text(text)
    data = ember.tensor(tok.encode(text))
    split = int(0.95 * data.shape[0])
    train_data, val_data = data[:split], data[split:]
    ember.manual_seed(seed)
    config = GPT2Config(vocab_size=tok.vocab_size, n_positions=block, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                        resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).train()
    forward = ember.compile(model) if compile else model  # (compile: the same parameters, fused chains)
    opt = ember.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    g = ember.Generator().manual_seed(seed)
    stream = batches(train_data, block, batch, g)
    print(f"corpus: {len(text):,} characters of {CORPUS_DIR} ({tok.vocab_size} distinct); model "
          f"{sum(p.numel() for p in model.parameters()):,} parameters; {steps} steps of {batch} x {block}")
    losses, window, start = [], [], time.perf_counter()
    for step in range(1, steps + 1):
        x = next(stream)
        loss = forward(x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        window.append(loss.item())
        if show_progress:
            progress(step, steps, window[-1], start)
        if step % log_every == 0 or step == steps:
            losses.append(sum(window) / len(window))
            window = []
            if out:
                save(model, tok, out)
    if show_progress:
        print()
    model.eval()
    with ember.no_grad():
        vx = next(batches(val_data, block, 16, g))
        val = model(vx, labels=vx).loss.item()
    print(f"trained in {time.perf_counter() - start:.0f} s: train loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
          f"validation {val:.3f} ({val / math.log(2):.2f} bits per character)")
    return model, tok, losses


def save(model, tok, out):
    model.save_pretrained(out)  # config.json + model.safetensors, both written atomically
    tmp = os.path.join(out, "alphabet.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(tok.chars, f, ensure_ascii=False)
    os.replace(tmp, os.path.join(out, "alphabet.json"))


def sample(model, tok, prompt="This License", length=400, temperature=0.8, top_k=20, seed=0):
    g = ember.Generator().manual_seed(seed)
    ids = ember.tensor([tok.encode(prompt)])
    out = model.generate(ids, max_new_tokens=length, do_sample=True, temperature=temperature, top_k=top_k,
                         generator=g)
    return tok.decode(out[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--out", default="runs/char_gpt")
    ap.add_argument("--sample-only", action="store_true", help="load --out and sample")
    ap.add_argument("--prompt", default="This License")
    ap.add_argument("--compile", action="store_true", help="train through ember.compile(model)")
    args = ap.parse_args()
    if args.sample_only:
        model = GPT2LMHeadModel.from_pretrained(args.out)
        with open(os.path.join(args.out, "alphabet.json"), encoding="utf-8") as f:
            tok = CharTokenizer(json.load(f))
    else:
        model, tok, _ = train(args.steps, args.block, args.batch, args.layers, args.width, 4, args.lr, out=args.out,
                              compile=args.compile)
        print(f"checkpoint: {args.out}/ (config.json, model.safetensors, alphabet.json)")
    print("sample:\n" + sample(model, tok, args.prompt))


if __name__ == "__main__":
    main()
