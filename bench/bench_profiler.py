"""What the profiler costs: ember vs PyTorch on this machine, each library in its own process.

For a small-op loop (a 1-element add, where dispatch is everything) and the seeds' MLP training
step, it times each iteration with the profiler off, on (CPU activity), and on with
record_shapes + profile_memory, and reports the added cost per recorded event. Off vs an ember
build from before the profiler (--before DIR, a source tree with build/python) is the "pays
nothing when off" check. Also times what stopping and building key_averages costs per event.

    python bench/bench_profiler.py [--threads 2] [--before /path/to/old/tree]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def child(lib_name, threads, repeats):
    if lib_name.startswith("ember"):
        import ember as lib
    else:
        import torch as lib
    lib.set_num_threads(threads)
    nn = lib.nn
    has_profiler = hasattr(lib, "profiler") and hasattr(lib.profiler, "profile")

    a, b = lib.ones(1), lib.ones(1)

    def small_op(n):
        for _ in range(n):
            a + b
        return n

    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = lib.randn(128, 784), lib.randint(0, 10, (128,))

    def train(n):
        for _ in range(n):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return n

    def timed(fn, n, mode):
        best = []
        events = 0
        post = 0.0
        for _ in range(repeats):
            if mode == "off":
                t0 = time.perf_counter()
                fn(n)
                best.append((time.perf_counter() - t0) / n)
                continue
            kwargs = {} if mode == "on" else {"record_shapes": True, "profile_memory": True}
            prof = lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kwargs)
            prof.__enter__()
            t0 = time.perf_counter()
            fn(n)
            t1 = time.perf_counter()
            prof.__exit__(None, None, None)
            ev = prof.events()
            prof.key_averages()
            t2 = time.perf_counter()
            best.append((t1 - t0) / n)
            events = len([e for e in ev if getattr(e, "device_type", None) is None or str(e.device_type).lower().endswith("cpu")])
            post = (t2 - t1) / max(1, len(ev))
        return {"s_per_iter": min(best), "events_per_iter": events / n if events else 0, "post_s_per_event": post}

    out = {}
    for name, fn, n in (("small op (1-element add)", small_op, 20000), ("MLP train step (784-256-10, b128, AdamW)", train, 30)):
        fn(max(1, n // 10))  # warm up
        # The modes take turns, so a slow moment of the machine hits all of them alike.
        modes = ["off"] + (["on", "shapes"] if has_profiler else [])
        runs = {m: [] for m in modes}
        for _ in range(3):
            for m in modes:
                runs[m].append(timed(fn, n, m))
        pick = lambda rs: min(rs, key=lambda r: r["s_per_iter"])  # noqa: E731
        row = {"off": pick(runs["off"])}
        if has_profiler:
            row["on"] = pick(runs["on"])
            row["on+shapes+memory"] = pick(runs["shapes"])
        out[name] = row
    print(json.dumps(out))


def run_child(python, lib_name, env_extra, threads, repeats):
    env = dict(os.environ)
    env.update(env_extra)
    env["OMP_NUM_THREADS"] = str(threads)
    p = subprocess.run([python, __file__, "--child", lib_name, "--threads", str(threads), "--repeats", str(repeats)],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"[{lib_name}] failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--before", help="an ember source tree built before the profiler (its build/python)")
    ap.add_argument("--torch2-python", default="/work/torch2/bin/python")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.threads, args.repeats)

    ember_env = {"PYTHONPATH": f"{ROOT}/python:{ROOT}/build/python"}
    runs = {"ember": run_child(sys.executable, "ember", ember_env, args.threads, args.repeats)}
    if args.before:
        runs["ember (before the profiler)"] = run_child(
            sys.executable, "ember-before", {"PYTHONPATH": f"{args.before}/python:{args.before}/build/python"},
            args.threads, args.repeats)
    if os.path.exists(args.torch2_python):
        runs["torch 2.x"] = run_child(args.torch2_python, "torch", {"PYTHONPATH": ""}, args.threads, args.repeats)
    runs["torch 1.13"] = run_child("/usr/bin/python3", "torch", {"PYTHONPATH": ""}, args.threads, args.repeats)

    print(f"profiler cost, {args.threads} threads, best of 3 x {args.repeats} (modes interleaved)")
    for workload in next(r for r in runs.values() if r):
        print(f"\n{workload}")
        print(f"  {'library':30s} {'off (us/iter)':>14s} {'on':>10s} {'on+shapes+mem':>14s} {'events/iter':>12s}"
              f" {'added us/event':>15s} {'+shapes,mem':>12s} {'post us/event':>14s}")
        for lib, r in runs.items():
            if not r:
                continue
            row = r[workload]
            off = row["off"]["s_per_iter"] * 1e6
            if "on" not in row:
                print(f"  {lib:30s} {off:14.2f}")
                continue
            on = row["on"]["s_per_iter"] * 1e6
            sh = row["on+shapes+memory"]["s_per_iter"] * 1e6
            ev = row["on"]["events_per_iter"] or float("nan")
            print(f"  {lib:30s} {off:14.2f} {on:10.2f} {sh:14.2f} {ev:12.1f} {(on - off) / ev:15.3f}"
                  f" {(sh - off) / ev:12.3f} {row['on']['post_s_per_event'] * 1e6:14.3f}")
    if args.before and runs.get("ember") and runs.get("ember (before the profiler)"):
        for workload in runs["ember"]:
            now = runs["ember"][workload]["off"]["s_per_iter"]
            then = runs["ember (before the profiler)"][workload]["off"]["s_per_iter"]
            print(f"\nprofiler off, {workload}: {now * 1e6:.3f} us now vs {then * 1e6:.3f} us before "
                  f"({(now / then - 1) * 100:+.1f}%)")


if __name__ == "__main__":
    main()
