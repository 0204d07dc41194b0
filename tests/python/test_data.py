"""ember.utils.data: datasets, samplers, default_collate, and the threaded DataLoader (batching,
shuffle, drop_last, samplers, collate_fn, Python and iterable datasets, worker order, exception
propagation, no deadlock, concurrency, per-worker seeding). Every test that could hang runs under
a timeout so a deadlock fails instead."""
import collections
import functools
import threading
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, DistributedSampler,
                              IterableDataset, RandomSampler, SequentialSampler, Subset, SubsetRandomSampler,
                              TensorDataset, WeightedRandomSampler, default_collate, default_convert,
                              get_worker_info, random_split)


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")


def deadline(seconds):
    """Runs the test in a thread and fails it if it does not finish in time (a deadlock)."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*a, **kw):
            box = {}

            def target():
                try:
                    fn(*a, **kw)
                except BaseException as e:  # noqa: B902 - re-raised below
                    box["err"] = e
            t = threading.Thread(target=target, daemon=True)
            t.start()
            t.join(seconds)
            if t.is_alive():
                pytest.fail(f"{fn.__name__} did not finish in {seconds} s (deadlock?)")
            if "err" in box:
                raise box["err"]
        return run
    return wrap


class Squares(Dataset):
    def __init__(self, n=10, delay=0.0):
        self.n, self.delay = n, delay

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        if self.delay:
            time.sleep(self.delay)
        return {"x": ember.tensor([float(i)]), "y": i * i, "name": f"s{i}"}

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))  # each worker its share

    def __len__(self):
        return self.n


def values(batches, key=None):
    out = []
    for b in batches:
        t = b if key is None else b[key]
        out.extend(int(v) for v in t.reshape(-1).tolist())
    return out


# -- datasets ---------------------------------------------------------------------------------

def test_tensor_dataset_subset_concat():
    x, y = ember.arange(10.0).reshape(5, 2), ember.arange(5)
    ds = TensorDataset(x, y)
    assert len(ds) == 5 and ds[1][0].tolist() == [2.0, 3.0] and int(ds[1][1]) == 1
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.arange(4))
    sub = Subset(ds, [4, 0])
    assert len(sub) == 2 and int(sub[0][1]) == 4
    cat = ds + sub
    assert isinstance(cat, ConcatDataset) and len(cat) == 7
    assert int(cat[5][1]) == 4 and int(cat[-1][1]) == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-8]
    with pytest.raises(ValueError):
        ConcatDataset([])
    assert list(ChainDataset([Stream(2), Stream(3)])) == [0, 1, 0, 1, 2]


def test_random_split_lengths_and_fractions():
    ds = list(range(10))
    a, b = random_split(ds, [3, 7], generator=ember.Generator().manual_seed(0))
    assert len(a) == 3 and len(b) == 7 and sorted(list(a) + list(b)) == ds
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    parts = random_split(range(11), [0.5, 0.5])
    assert [len(p) for p in parts] == [6, 5]  # remainder round-robin from the first
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])
    again = random_split(ds, [3, 7], generator=ember.Generator().manual_seed(0))
    assert list(again[0]) == list(a)


# -- samplers ---------------------------------------------------------------------------------

def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = ember.Generator().manual_seed(1)
    perm = list(RandomSampler(range(20), generator=g))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    draws = list(RandomSampler(range(3), replacement=True, num_samples=70))
    assert len(draws) == 70 and set(draws) <= {0, 1, 2}
    assert len(list(RandomSampler(range(5), num_samples=12))) == 12
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    sub = list(SubsetRandomSampler([10, 20, 30]))
    assert sorted(sub) == [10, 20, 30]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0], 5))
    assert w == [1] * 5
    assert sorted(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False)) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 1, 0)


def test_distributed_sampler():
    ds = list(range(10))
    parts = [list(DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded by wrapping
    parts = [list(DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False, drop_last=True)) for r in range(3)]
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s = DistributedSampler(ds, num_replicas=2, rank=0, seed=5)
    e0 = list(s)
    assert list(s) == e0  # same epoch, same order
    s.set_epoch(1)
    assert list(s) != e0 and len(s) == 5
    both = list(DistributedSampler(ds, 2, 0, seed=5)) + list(DistributedSampler(ds, 2, 1, seed=5))
    assert sorted(both) == ds  # the replicas partition the data
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 1\]"):
        DistributedSampler(ds, num_replicas=2, rank=3)


# -- collate ----------------------------------------------------------------------------------

def test_default_collate_rules():
    b = default_collate([ember.ones(2), ember.zeros(2)])
    assert tuple(b.shape) == (2, 2)
    f = default_collate([1.5, 2.5])
    assert f.dtype == ember.float64 and f.tolist() == [1.5, 2.5]
    i = default_collate([1, 2])
    assert i.dtype == ember.int64
    assert default_collate([True, False]).dtype == ember.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    d = default_collate([{"a": 1, "b": ember.ones(1)}, {"a": 2, "b": ember.zeros(1)}])
    assert d["a"].tolist() == [1, 2] and tuple(d["b"].shape) == (2, 1)
    t = default_collate([(1, "x"), (2, "y")])
    assert isinstance(t, list) and t[0].tolist() == [1, 2] and t[1] == ("x", "y")  # tuples -> lists
    Point = collections.namedtuple("Point", "x y")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == ember.float64
    a = default_collate([np.ones((2,), dtype=np.float32), np.zeros((2,), dtype=np.float32)])
    assert a.dtype == ember.float32 and tuple(a.shape) == (2, 2)
    s = default_collate([np.float32(1), np.float32(2)])
    assert s.dtype == ember.float32 and s.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([object()])
    assert default_convert((np.ones(2), "s"))[0].dtype == ember.float64


def test_default_collate_matches_torch():
    torch = _torch()
    from torch.utils.data import default_collate as tcollate
    batch = [{"a": (1, 2.5, "s"), "b": [np.arange(3), True]}, {"a": (3, 4.5, "t"), "b": [np.arange(3) + 1, False]}]
    e, t = default_collate(batch), tcollate(batch)
    assert type(e["a"]) is type(t["a"]) and type(e["b"]) is type(t["b"])
    assert e["a"][0].tolist() == t["a"][0].tolist() and e["a"][2] == t["a"][2]
    assert str(e["a"][1].dtype).split(".")[-1] == str(t["a"][1].dtype).split(".")[-1]
    assert e["b"][0].tolist() == t["b"][0].tolist() and e["b"][1].tolist() == t["b"][1].tolist()


# -- DataLoader: arguments --------------------------------------------------------------------

def test_argument_checks_as_torch():
    ds = Squares()
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=3), "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=SequentialSampler(ds), shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=BatchSampler(range(3), 1, False), batch_size=2),
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    ]
    for kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kw)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    dl = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        dl.batch_size = 3


def test_torch_argument_messages_match():
    torch = _torch()
    from torch.utils.data import DataLoader as TDL
    for kw in (dict(num_workers=-1), dict(timeout=-1), dict(persistent_workers=True),
               dict(batch_size=None, drop_last=True), dict(sampler=[0], shuffle=True)):
        with pytest.raises(ValueError) as t:
            TDL(list(range(3)), **kw)
        with pytest.raises(ValueError) as e:
            DataLoader(list(range(3)), **kw)
        assert str(e.value) == str(t.value)


# -- DataLoader: batching ---------------------------------------------------------------------

def test_batching_len_drop_last():
    ds = TensorDataset(ember.arange(10.0), ember.arange(10))
    dl = DataLoader(ds, batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert isinstance(batches[0], list) and batches[0][0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert batches[2][1].tolist() == [8, 9] and batches[2][1].dtype == ember.int64
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[1].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    one = list(DataLoader(ds))
    assert len(one) == 10 and one[3][0].tolist() == [3.0]
    nob = list(DataLoader(ds, batch_size=None))
    assert len(nob) == 10 and isinstance(nob[2], list) and nob[2][0].shape == ()


def test_fast_path_equals_per_sample_path():
    class Slow(TensorDataset):  # same data, no fast path (a custom collate disables it too)
        _collated_batch = None

    x = ember.randn(50, 3)
    y = ember.arange(50)
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    fast = list(DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=g1))
    slow = list(DataLoader(Slow(x, y), batch_size=8, shuffle=True, generator=g2))
    assert len(fast) == len(slow) == 7
    for a, b in zip(fast, slow):
        assert type(a) is type(b) and a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    seen = []
    list(DataLoader(TensorDataset(x, y), batch_size=8, collate_fn=lambda b: seen.append(b) or 0))
    assert isinstance(seen[0], list) and isinstance(seen[0][0], tuple) and len(seen[0]) == 8


def test_shuffle_is_a_permutation_and_reproducible():
    ds = Squares(30)
    a = values(DataLoader(ds, batch_size=7, shuffle=True, generator=ember.Generator().manual_seed(7)), "x")
    b = values(DataLoader(ds, batch_size=7, shuffle=True, generator=ember.Generator().manual_seed(7)), "x")
    assert sorted(a) == list(range(30)) and a == b and a != list(range(30))
    ember.manual_seed(11)
    c = values(DataLoader(ds, batch_size=7, shuffle=True), "x")
    ember.manual_seed(11)
    assert values(DataLoader(ds, batch_size=7, shuffle=True), "x") == c


def test_sampler_batch_sampler_collate_fn_python_dataset():
    ds = Squares(10)
    got = list(DataLoader(ds, batch_size=3, sampler=[9, 8, 7, 1]))
    assert [b["y"].tolist() for b in got] == [[81, 64, 49], [1]]
    assert got[0]["name"] == ["s9", "s8", "s7"] and tuple(got[0]["x"].shape) == (3, 1)
    got = list(DataLoader(ds, batch_sampler=[[0, 1], [5]]))
    assert [b["y"].tolist() for b in got] == [[0, 1], [25]]
    got = list(DataLoader(ds, batch_size=4, collate_fn=lambda b: [s["y"] for s in b]))
    assert got == [[0, 1, 4, 9], [16, 25, 36, 49], [64, 81]]


def test_dataset_with_getitems():
    class Batched(Dataset):
        calls = []

        def __getitem__(self, i):
            raise AssertionError("__getitems__ should be used")

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            return [i * 10 for i in idx]

        def __len__(self):
            return 5

    got = list(DataLoader(Batched(), batch_size=2))
    assert [b.tolist() for b in got] == [[0, 10], [20, 30], [40]] and Batched.calls == [[0, 1], [2, 3], [4]]


def test_iterable_dataset():
    got = values(DataLoader(Stream(7), batch_size=3))
    assert got == list(range(7))
    dl = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert len(dl) == 2 and values(dl) == list(range(6))
    assert [int(v) for v in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]


# -- DataLoader: workers ----------------------------------------------------------------------

@deadline(60)
def test_workers_keep_order_and_cover_everything():
    ds = Squares(50, delay=0.001)
    for nw in (1, 2, 3):
        dl = DataLoader(ds, batch_size=4, num_workers=nw)
        assert values(dl, "x") == list(range(50))
        assert len(list(dl)) == len(dl) == 13
    g1, g2 = ember.Generator().manual_seed(4), ember.Generator().manual_seed(4)
    a = values(DataLoader(ds, batch_size=5, shuffle=True, generator=g1, num_workers=3), "x")
    b = values(DataLoader(ds, batch_size=5, shuffle=True, generator=g2), "x")
    assert a == b  # same sampler order with or without workers


@deadline(60)
def test_iterable_dataset_with_workers():
    got = values(DataLoader(Stream(10), batch_size=2, num_workers=2))
    # worker 0 reads 0,2,4,..., worker 1 reads 1,3,...; batches alternate between them
    assert got == [0, 2, 1, 3, 4, 6, 5, 7, 8, 9]
    got = values(DataLoader(Stream(5), batch_size=2, num_workers=3))
    assert sorted(got) == list(range(5))


class Flaky(Dataset):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return i

    def __len__(self):
        return 20


@deadline(60)
def test_worker_exception_reraised_with_worker_id():
    dl = DataLoader(Flaky(), batch_size=2, num_workers=2)
    it = iter(dl)
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in DataLoader worker thread 0.*bad sample 5"):
        next(it)
    with pytest.raises(ValueError, match="bad sample 5"):  # without workers: the original exception
        list(DataLoader(Flaky(), batch_size=2))

    class BadKey(Dataset):
        def __getitem__(self, i):
            raise KeyError("missing")

        def __len__(self):
            return 2

    with pytest.raises(KeyError, match="worker thread"):
        list(DataLoader(BadKey(), num_workers=1))


@deadline(60)
def test_no_deadlock_on_early_break_del_and_errors():
    before = threading.active_count()
    ds = Squares(200, delay=0.002)
    for _ in range(3):
        for i, _b in enumerate(DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=4)):
            if i == 2:
                break
    it = iter(DataLoader(ds, batch_size=2, num_workers=3))
    next(it)
    del it
    try:
        for _ in DataLoader(Flaky(), batch_size=2, num_workers=2):
            pass
    except ValueError:
        pass
    import gc
    gc.collect()
    deadline_t = time.time() + 20
    while threading.active_count() > before and time.time() < deadline_t:
        time.sleep(0.05)
    assert threading.active_count() <= before  # every worker thread ended


@deadline(60)
def test_timeout_raises():
    dl = DataLoader(Squares(4, delay=2.0), num_workers=1, timeout=0.2)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        next(iter(dl))


class Overlap(Dataset):
    """Counts how many __getitem__ calls run at the same time (sleep releases the GIL)."""

    def __init__(self, n):
        self.n, self.lock, self.active, self.peak = n, threading.Lock(), 0, 0

    def __getitem__(self, i):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(0.01)
        with self.lock:
            self.active -= 1
        return i

    def __len__(self):
        return self.n


@deadline(60)
def test_workers_run_concurrently():
    ds = Overlap(40)
    list(DataLoader(ds, batch_size=2, num_workers=0))
    assert ds.peak == 1
    ds = Overlap(40)
    list(DataLoader(ds, batch_size=2, num_workers=2))
    assert ds.peak == 2
    ds = Overlap(60)
    list(DataLoader(ds, batch_size=1, num_workers=4))
    assert ds.peak >= 3


@deadline(60)
def test_prefetch_bound():
    started = []

    class Track(Dataset):
        def __getitem__(self, i):
            started.append(i)
            return i

        def __len__(self):
            return 100

    def settle(at_least):
        # Wait (bounded) until the workers have started at least this many fetches, then give
        # them time to start more if the bound were not enforced.
        end = time.time() + 20
        while len(started) < at_least and time.time() < end:
            time.sleep(0.01)
        time.sleep(0.2)

    it = iter(DataLoader(Track(), batch_size=1, num_workers=2, prefetch_factor=3))
    settle(6)
    assert len(started) == 6  # prefetch_factor * num_workers tasks in flight, no more
    next(it)
    settle(7)
    assert len(started) == 7
    del it


class RandomSample(Dataset):
    def __getitem__(self, i):
        info = get_worker_info()
        return {"r": ember.rand(1), "worker": -1 if info is None else info.id}

    def __len__(self):
        return 8


@deadline(60)
def test_per_worker_seeding():
    def run(seed):
        dl = DataLoader(RandomSample(), batch_size=2, num_workers=2, generator=ember.Generator().manual_seed(seed))
        return [(b["worker"].tolist(), b["r"].reshape(-1).tolist()) for b in dl]

    a, b, c = run(1), run(1), run(2)
    assert a == b  # same seed: same random transforms
    assert a != c
    assert [w for w, _ in a] == [[0, 0], [1, 1], [0, 0], [1, 1]]
    assert a[0][1] != a[1][1]  # the workers' streams differ
    infos = []

    def init(wid):
        infos.append((wid, get_worker_info().id, get_worker_info().num_workers))

    list(DataLoader(RandomSample(), num_workers=2, worker_init_fn=init))
    assert sorted(infos) == [(0, 0, 2), (1, 1, 2)]
    assert get_worker_info() is None
    with pytest.raises(RuntimeError, match="Cannot assign attributes"):
        seen = []
        list(DataLoader(RandomSample(), num_workers=1, worker_init_fn=lambda w: seen.append(get_worker_info())))
        seen[0].id = 5


@deadline(60)
def test_persistent_workers_reused_and_reseeded():
    dl = DataLoader(RandomSample(), batch_size=4, num_workers=2, persistent_workers=True,
                    generator=ember.Generator().manual_seed(0))
    before = threading.active_count()
    e1 = [b["r"].reshape(-1).tolist() for b in dl]
    threads_after_first = threading.active_count()
    e2 = [b["r"].reshape(-1).tolist() for b in dl]
    assert threading.active_count() == threads_after_first  # the same two workers serve both passes
    assert threads_after_first >= before
    assert e1 != e2  # a new base seed each pass
    it = iter(dl)
    next(it)
    e3 = [b["r"].reshape(-1).tolist() for b in dl]  # abandoning a pass midway is fine
    assert len(e3) == 2


def test_mnist_style_epoch_with_fast_path():
    x = ember.randn(6000, 784)
    y = ember.randint(0, 10, (6000,))
    dl = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=0)
    n = 0
    for xb, yb in dl:
        n += xb.shape[0]
        assert xb.shape[1] == 784 and yb.dtype == ember.int64
    assert n == 6000 and len(dl) == 94
