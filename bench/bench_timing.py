"""Timing shared by the benches that compare several callables on this machine: the best time of
each over interleaved rounds (medians here move 20-40% between runs; the best of interleaved rounds
is what stays put, and drift hits every callable alike)."""
import time


def best_of(steps, rounds=5, calls=2):
    """steps: callables, or (callable, context-manager factory) pairs; returns ms per callable."""
    steps = [s if isinstance(s, tuple) else (s, None) for s in steps]
    best = [float("inf")] * len(steps)
    for _ in range(rounds):
        for i, (step, ctx) in enumerate(steps):
            with (ctx() if ctx else _Nothing()):
                for _ in range(calls):
                    t = time.perf_counter()
                    step()
                    best[i] = min(best[i], (time.perf_counter() - t) * 1e3)
    return best


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
