"""DataLoader (torch.utils.data.DataLoader, torch 1.13 arguments, checks and scheduling).

Workers are threads. The main thread draws index batches from the sampler and hands task i to
worker i % num_workers (skipping workers whose iterable stream ended), keeping
prefetch_factor * num_workers tasks in flight; results come back through one queue and are
returned strictly in order. A worker's exception is re-raised in the main thread naming the
worker. Every worker fetches under its own ember default generator seeded base_seed + id, with
base_seed drawn from the loader's generator at each pass (persistent workers are reseeded every
pass, so an epoch's randomness depends only on the state at its start). Abandoning an iterator
(break, del, an exception) stops its workers; nothing waits on a queue without a timeout check.
"""
import itertools
import math
import queue
import threading
import traceback

from ... import _C
from ..._profiler_region import profiler_region as _profiler_region
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

# How often a waiting main thread checks that its workers are still alive.
_POLL_INTERVAL = 1.0


def _drain(q):
    """Empties a queue without blocking."""
    try:
        while True:
            q.get_nowait()
    except queue.Empty:
        pass


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError("Cannot assign attributes to {} objects".format(self.__class__.__name__))
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join("{}={}".format(k, getattr(self, k)) for k in self.__keys)
        return "{}({})".format(self.__class__.__name__, items)


_worker_local = threading.local()



def get_worker_info():
    """In a DataLoader worker thread: its WorkerInfo; in any other thread: None."""
    return getattr(_worker_local, "info", None)


class _InfiniteConstantSampler(Sampler):
    """The 'indices' of an IterableDataset: None forever (the worker's stream decides the end)."""

    def __iter__(self):
        while True:
            yield None


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        # Fast path: a dataset that can build the default-collated batch itself (TensorDataset:
        # one index_select per tensor) skips the per-sample reads; the result is identical.
        self.batch_fn = getattr(dataset, "_collated_batch", None) if collate_fn is default_collate else None
        getitems = getattr(dataset, "__getitems__", None)
        self.getitems = getitems if callable(getitems) else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.batch_fn is not None:
            return self.batch_fn(index)
        if self.getitems is not None:
            data = self.getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in index:
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


class _ExceptionWrapper:
    """An exception from a worker, re-raised in the main thread with the worker's traceback."""

    def __init__(self, exc, where):
        self.exc_type = type(exc)
        self.msg = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.where = where
        self.exc = exc

    def reraise(self):
        msg = "Caught {} {}.\nOriginal {}".format(self.exc_type.__name__, self.where, self.msg)
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            err = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from self.exc
        raise err from self.exc


class KeyErrorMessage(str):
    """KeyError quotes its message; this str keeps the traceback readable."""

    def __repr__(self):
        return self


class _StreamEnded:
    def __init__(self, worker_id):
        self.worker_id = worker_id


def _worker_loop(kind_iterable, dataset, index_queue, result_queue, auto_collation, collate_fn, drop_last,
                 worker_init_fn, worker_id, num_workers):
    """A worker thread: fetch the batches of the tasks (generation, seed, send_idx, index) it
    receives, until it receives None. A new generation (a new pass of a persistent loader)
    restarts its generator and, for an IterableDataset, its stream."""
    fetcher_cls = _IterableFetcher if kind_iterable else _MapFetcher
    generation = None
    gen_ctx = None
    fetcher = None
    setup_error = None
    stream_ended = False
    initialized = False
    try:
        while True:
            task = index_queue.get()
            if task is None:
                return
            gen, base_seed, send_idx, index = task
            if gen != generation:
                generation = gen
                if gen_ctx is not None:
                    gen_ctx.__exit__(None, None, None)
                seed = base_seed + worker_id
                gen_ctx = _C._WorkerGenerator(seed)
                gen_ctx.__enter__()
                _worker_local.info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
                stream_ended = False
                try:
                    if not initialized and worker_init_fn is not None:
                        worker_init_fn(worker_id)
                    initialized = True
                    fetcher = fetcher_cls(dataset, auto_collation, collate_fn, drop_last)
                    setup_error = None
                except Exception as e:  # reported with every task of this pass
                    setup_error = _ExceptionWrapper(e, "in DataLoader worker thread {}".format(worker_id))
            if stream_ended:
                continue  # as torch: a worker whose stream ended answers nothing more this pass
            if setup_error is not None:
                data = setup_error
            else:
                try:
                    # A span on the worker's own thread in the profiler's trace.
                    with _profiler_region("DataLoader worker#fetch"):
                        data = fetcher.fetch(index)
                except StopIteration as e:
                    if kind_iterable:
                        stream_ended = True
                        data = _StreamEnded(worker_id)
                    else:
                        data = _ExceptionWrapper(e, "in DataLoader worker thread {}".format(worker_id))
                except Exception as e:
                    data = _ExceptionWrapper(e, "in DataLoader worker thread {}".format(worker_id))
            result_queue.put((gen, send_idx, data))
            del data
    finally:
        if gen_ctx is not None:
            gen_ctx.__exit__(None, None, None)
        _worker_local.info = None


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._dataset_kind_iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._generator = loader.generator
        self._timeout = loader.timeout
        self._num_yielded = 0
        self._reset_sampler()

    def _reset_sampler(self):
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(self._generator)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)

    def __next__(self):
        # torch's span name: "enumerate(DataLoader)#<iterator class>.__next__".
        with _profiler_region("enumerate(DataLoader)#{}.__next__".format(type(self).__name__)):
            data = self._next_data()
        self._num_yielded += 1
        return data


class _SingleThreadIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        cls = _IterableFetcher if self._iterable else _MapFetcher
        self._fetcher = cls(self._dataset, self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)


class _ThreadedIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        self._result_queue = queue.Queue()
        self._index_queues = []
        self._workers = []
        for i in range(self._num_workers):
            q = queue.Queue()
            # The thread gets no reference to this iterator, so dropping the iterator stops it.
            t = threading.Thread(
                target=_worker_loop, name="DataLoader worker {}".format(i), daemon=True,
                args=(self._iterable, self._dataset, q, self._result_queue, self._auto_collation, self._collate_fn,
                      self._drop_last, loader.worker_init_fn, i, self._num_workers))
            t.start()
            self._index_queues.append(q)
            self._workers.append(t)
        self._generation = 0
        self._shutdown = False
        self._start_pass()

    def _start_pass(self):
        self._generation += 1
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # send_idx -> (worker_id,) or (worker_id, data)
        self._workers_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _reset(self):
        """A new pass of a persistent loader: drop queued work of the old pass, reseed."""
        for q in self._index_queues:
            _drain(q)
        self._reset_sampler()
        self._start_pass()

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_active[wid]:
                break
        else:
            return  # every stream has ended
        self._index_queues[wid].put((self._generation, self._base_seed, self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._send_idx += 1

    def _get_result(self):
        """The next result of this pass from any worker, with torch's timeout semantics."""
        waited = 0.0
        while True:
            wait = _POLL_INTERVAL if self._timeout <= 0 else min(_POLL_INTERVAL, self._timeout - waited)
            try:
                gen, idx, data = self._result_queue.get(timeout=max(wait, 1e-3))
            except queue.Empty:
                waited += wait
                if self._timeout > 0 and waited >= self._timeout:
                    raise RuntimeError("DataLoader timed out after {} seconds".format(self._timeout))
                dead = [i for i, t in enumerate(self._workers) if not t.is_alive()]
                if dead:
                    raise RuntimeError("DataLoader worker (thread {}) exited unexpectedly".format(dead[0]))
                continue
            if gen == self._generation:
                return idx, data

    def _next_data(self):
        while True:
            # Skip tasks of workers whose stream ended and that hold no result.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                return self._process(self._task_info.pop(self._rcvd_idx)[1])
            idx, data = self._get_result()
            if isinstance(data, _StreamEnded):
                self._workers_active[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)  # early: keep until its turn
            else:
                del self._task_info[idx]
                return self._process(data)

    def _process(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            _drain(q)
            q.put(None)
        current = threading.current_thread()
        for t in self._workers:
            if t is not current:
                # A worker finishes its current fetch first; do not hang on a stuck one.
                t.join(timeout=max(5.0, float(self._timeout)))

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass


class DataLoader:
    """Iterates a dataset in batches: DataLoader(dataset, batch_size=1, shuffle=False,
    sampler=None, batch_sampler=None, num_workers=0, collate_fn=None, pin_memory=False,
    drop_last=False, timeout=0, worker_init_fn=None, generator=None, *, prefetch_factor=2,
    persistent_workers=False)."""

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False,
                 pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor != 2:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing.")
        if not prefetch_factor > 0:
            raise ValueError("prefetch_factor should be a positive integer, but got prefetch_factor={}"
                             .format(prefetch_factor))
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory  # CPU only: batches are already in ordinary memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context  # workers are threads: unused

        if isinstance(dataset, IterableDataset):
            self._dataset_kind_iterable = True
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 "shuffle={}".format(shuffle))
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 "sampler={}".format(sampler))
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 "got batch_sampler={}".format(batch_sampler))
        else:
            self._dataset_kind_iterable = False
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if self._dataset_kind_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self.__initialized = True

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError("{} attribute should not be set after {} is initialized".format(
                attr, self.__class__.__name__))
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleThreadIter(self)
        return _ThreadedIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset()
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)
