"""torch.multiprocessing: Python's multiprocessing, plus spawn() for one process per rank.

    import ember.multiprocessing as mp
    mp.spawn(ddp_train, args=(world_size,), nprocs=world_size)   # ddp_train(rank, world_size)

spawn starts `nprocs` processes (start method "spawn": each imports ember afresh, as CUDA needs),
calls fn(i, *args) in process i, and waits for all of them. When one raises, the others are
terminated and ProcessRaisedException carries that process's traceback; one that dies without
an exception (a signal, os._exit) gives ProcessExitedException with its exit code.

Unlike torch, tensors passed to a process are copied (pickled), not moved into shared memory:
writes a child makes to them are not seen by the parent (exchange results through files,
queues or collectives).
"""
import multiprocessing
import multiprocessing.connection
import signal
import traceback
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports it)

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException"] + list(getattr(multiprocessing, "__all__", []))


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited without raising (a signal or a non-zero exit code)."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        raise SystemExit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Waits for the processes; True when all have finished, False on timeout. Raises when one
        failed, after terminating the rest."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for s in ready:
            i = self.sentinels.pop(s)
            self.processes[i].join()
            if self.processes[i].exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        proc = self.processes[failed]
        if not self.error_queues[failed].empty():
            tb = self.error_queues[failed].get()
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n{tb}", failed,
                                         proc.pid)
        code = proc.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, proc.pid, code,
                                         name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {code}", failed, proc.pid, code)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive integer, got {nprocs!r}")
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, tuple(args), q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs fn(i, *args) in nprocs new processes (torch.multiprocessing.spawn); with join=False,
    returns the ProcessContext to join later."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
