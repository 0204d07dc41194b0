"""ember.profiler (torch.profiler): where the time and memory of a training step go.

    from ember.profiler import profile, record_function, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        with record_function("forward"):
            loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")   # open in https://ui.perfetto.dev or chrome://tracing
"""
from .profiler import (profile, schedule, tensorboard_trace_handler, supported_activities,  # noqa: F401
                       ProfilerActivity, ProfilerAction, _KinetoProfile)
from ..autograd.profiler import record_function  # noqa: F401

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "record_function"]
