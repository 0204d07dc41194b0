"""Sharded training of the character-level GPT (examples/char_gpt.py's model and corpus, Debian's
/usr/share/common-licenses) with FullyShardedDataParallel, a unit per block, and a distributed
checkpoint every --save-every steps. Run it again with the same --out to resume, with any number
of processes (the checkpoint reshards):

    scripts/ember-run --nproc_per_node=2 examples/fsdp_char_gpt.py --steps 200 --out runs/fsdp
    scripts/ember-run --nproc_per_node=1 examples/fsdp_char_gpt.py --steps 300 --out runs/fsdp   # resumes at 200
"""
import argparse
import functools
import os
import sys
import time

import ember
import ember.distributed as dist
import ember.distributed.checkpoint as dcp
from ember.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
from ember.distributed.fsdp.wrap import transformer_auto_wrap_policy
from ember.models import CharTokenizer, GPT2Config, GPT2LMHeadModel
from ember.models.gpt2 import GPT2Block

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from char_gpt import batches, load_corpus  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16, help="sequences per process")
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--save-every", type=int, default=50)
    ap.add_argument("--out", default="runs/fsdp_char_gpt")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    text = load_corpus()
    tok = CharTokenizer.from_text(text)
    data = ember.tensor(tok.encode(text))
    ember.manual_seed(0)  # the same initial model everywhere
    cfg = GPT2Config(vocab_size=len(tok), n_positions=args.block, n_embd=args.width, n_layer=args.layers,
                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = FSDP(GPT2LMHeadModel(cfg), auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                                                            transformer_layer_cls={GPT2Block}))
    opt = ember.optim.AdamW(model.parameters(), lr=args.lr)
    ckpt = os.path.join(args.out, "checkpoint")
    start_step = 0
    if os.path.exists(os.path.join(ckpt, ".metadata")):
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": 0}
        dcp.load(state, checkpoint_id=ckpt)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start_step = state["step"]
        if rank == 0:
            print(f"resumed from {ckpt} at step {start_step}")
    shard = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"{world} process(es), FSDP FULL_SHARD with {len(FSDP.fsdp_modules(model))} units; this rank holds "
              f"{shard} of {sum(p.numel() for p in GPT2LMHeadModel(cfg).parameters())} parameters")
    gen = ember.Generator().manual_seed(1000 * start_step + rank)  # each rank its own windows
    stream = batches(data, args.block, args.batch, gen)
    t0 = time.perf_counter()
    for step in range(start_step, args.steps):
        x = next(stream)
        opt.zero_grad()
        loss = model(x, labels=x).loss
        loss.backward()
        model.clip_grad_norm_(1.0)
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVG)
        if rank == 0 and (step + 1) % 10 == 0:
            rate = (step + 1 - start_step) / (time.perf_counter() - t0)
            print(f"step {step + 1}/{args.steps} loss {avg.item():.3f} ({rate:.1f} steps/s)", flush=True)
        if (step + 1) % args.save_every == 0 or step + 1 == args.steps:
            msd, osd = get_state_dict(model, opt)
            dcp.save({"model": msd, "optim": osd, "step": step + 1}, checkpoint_id=ckpt)
            if rank == 0:
                print(f"  saved {ckpt} (step {step + 1})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
