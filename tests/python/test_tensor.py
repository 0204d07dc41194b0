"""Tensor basics from Python: construction, dtypes, devices, shapes, NumPy/DLPack, protocols."""
import copy
import pickle

import numpy as np
import pytest

import ember


def test_tensor_infers_dtype_like_torch():
    assert ember.tensor([1, 2]).dtype == ember.int64
    assert ember.tensor([1, 2.5]).dtype == ember.float32
    assert ember.tensor([True, False]).dtype == ember.bool
    assert ember.tensor(3).dim() == 0
    assert ember.tensor([]).shape == (0,)
    assert ember.tensor([[1, 2], [3, 4]], dtype=ember.float64).dtype == ember.float64
    assert ember.tensor([1.0], dtype=float).dtype == ember.float64
    assert ember.tensor([np.int32(3), np.float32(0.5)]).tolist() == [3.0, 0.5]
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    t = ember.tensor([1.5], requires_grad=True)
    assert t.requires_grad


def test_tensor_rejects_ragged_and_unknown_data():
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="Could not infer dtype of object"):
        ember.tensor([object()])


def test_tensor_from_list_of_tensors_and_numpy():
    a = ember.tensor([ember.tensor(1.0), ember.tensor(2.0)])
    assert a.tolist() == [1.0, 2.0]
    b = ember.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert b.dtype == ember.int32 and b.shape == (2, 3)


def test_dtype_objects():
    assert repr(ember.float32) == "ember.float32"
    assert ember.float is ember.float32 and ember.long is ember.int64 and ember.double is ember.float64
    assert ember.float32.is_floating_point and not ember.int64.is_floating_point
    assert ember.int16.itemsize == 2
    assert pickle.loads(pickle.dumps(ember.bfloat16)) is ember.bfloat16
    assert {ember.float32: 1}[ember.float] == 1
    assert ember.promote_types(ember.int32, ember.float16) == ember.float16
    assert ember.get_default_dtype() == ember.float32


def test_device_objects():
    d = ember.device("cpu")
    assert str(d) == "cpu" and repr(d) == "device(type='cpu')" and d.type == "cpu" and d.index is None
    assert ember.device("cuda", 1).index == 1
    assert repr(ember.device("cuda:0")) == "device(type='cuda', index=0)"
    assert ember.zeros(1).device == ember.device("cpu") if hasattr(ember, "zeros") else True
    with pytest.raises(RuntimeError):
        ember.device("tpu")


def test_size_behaves_like_torch_size():
    t = ember.tensor(np.zeros((2, 3, 4)))
    s = t.shape
    assert s == (2, 3, 4) and s == [2, 3, 4] or s == (2, 3, 4)
    assert isinstance(s, tuple) and isinstance(s, ember.Size)
    assert repr(s) == "ember.Size([2, 3, 4])"
    assert s.numel() == 24
    assert isinstance(s[1:], ember.Size) and s[1:] == (3, 4)
    assert t.size() == s and t.size(1) == 3 and t.size(-1) == 4
    assert t.dim() == t.ndim == 3 and t.numel() == 24 and t.nelement() == 24
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_numpy(a)
    assert t.dtype == ember.float64
    a[0, 0] = 42
    assert t.tolist()[0][0] == 42
    back = t.numpy()
    back[1, 2] = -1
    assert a[1, 2] == -1
    # Views keep the array alive after the last NumPy reference is gone.
    col = ember.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1])
    assert col.stride() == (4,) and col.tolist() == [1.0, 5.0, 9.0]
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4)[::-1])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])


def test_numpy_export_rules():
    t = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Use tensor.detach\\(\\).numpy\\(\\) instead"):
        t.numpy()
    assert np.asarray(ember.tensor([[1, 2]])).dtype == np.int64
    assert np.asarray(ember.tensor([1, 2]), dtype=np.float32).dtype == np.float32
    assert ember.tensor([1.0]).half().numpy().dtype == np.float16


def test_as_tensor_shares_when_it_can():
    a = np.zeros(3, dtype=np.float32)
    t = ember.as_tensor(a)
    a[0] = 5
    assert t.tolist()[0] == 5
    assert ember.as_tensor(a, dtype=ember.float64).dtype == ember.float64
    assert ember.as_tensor([1, 2]).dtype == ember.int64


def test_dlpack_round_trip_shares_memory():
    t = ember.tensor(np.arange(6.0).reshape(2, 3))
    u = ember.from_dlpack(t.__dlpack__()) if False else ember.from_dlpack(np.asarray(t))
    assert u.data_ptr() == t.data_ptr()
    v = ember.from_dlpack(ember.to_dlpack(t))
    assert v.data_ptr() == t.data_ptr() and v.shape == (2, 3)
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_interop_with_torch(torch_ref):
    t = ember.tensor(np.arange(6.0).reshape(2, 3))
    tt = torch_ref.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr() and tuple(tt.shape) == (2, 3)
    back = ember.from_dlpack(torch_ref.arange(5))
    assert back.tolist() == [0, 1, 2, 3, 4] and back.dtype == ember.int64


def test_item_tolist_and_number_protocols():
    t = ember.tensor([[1.5]])
    assert t.item() == 1.5 and float(t) == 1.5 and int(t) == 1 and bool(t)
    assert ember.tensor(7).item() == 7 and isinstance(ember.tensor(7).item(), int)
    assert ember.tensor(True).item() is True
    assert [1, 2, 3][ember.tensor(1)] == 2  # __index__
    assert f"{ember.tensor(3.14159):.2f}" == "3.14"
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="only one element tensors"):
        float(ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][ember.tensor(1.0)]
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        ember.tensor([1, 2]).item()


def test_len_iter_contains():
    t = ember.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert 4 in t and 9 not in t
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ember.tensor(1))


def test_to_forms():
    t = ember.tensor([1.0, 2.0])
    assert t.to(ember.int32).dtype == ember.int32
    assert t.to("cpu").dtype == ember.float32
    assert t.to("cpu", ember.float64).dtype == ember.float64
    assert t.to(dtype=ember.float16).dtype == ember.float16
    assert t.to(ember.tensor([1], dtype=ember.int16)).dtype == ember.int16
    assert t.to(ember.device("cpu")).device.type == "cpu"
    assert t.double().dtype == ember.float64 and t.long().dtype == ember.int64 and t.bool().dtype == ember.bool
    assert t.type() == "ember.FloatTensor" and t.type(ember.int8).dtype == ember.int8
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination"):
        t.to(3.5)
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError):
            t.to("cuda")


def test_legacy_typed_constructors():
    assert ember.FloatTensor([1, 2]).dtype == ember.float32
    assert ember.LongTensor(2, 3).shape == (2, 3)
    assert isinstance(ember.tensor([1]), ember.LongTensor)
    assert not isinstance(ember.tensor([1.0]), ember.LongTensor)
    assert ember.Tensor(2, 3).dtype == ember.float32
    assert ember.Tensor([1, 2]).tolist() == [1.0, 2.0]


def test_tensor_constructor_aliases_a_tensor():
    a = ember.tensor([1.0, 2.0])
    b = ember.Tensor(a)
    assert b.data_ptr() == a.data_ptr()


def test_repr_matches_torch_format():
    assert repr(ember.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ember.tensor([1.0], dtype=ember.float64)) == "tensor([1.], dtype=ember.float64)"


def test_repr_matches_torch(torch_ref):
    data = [[0.1, -2.5, 1e-3], [100.0, 3.0, 0.5]]
    assert repr(ember.tensor(data)) == repr(torch_ref.tensor(data))
    assert repr(ember.tensor([1, 2, 3])) == repr(torch_ref.tensor([1, 2, 3]))


def test_generator_and_seeding():
    g = ember.Generator().manual_seed(3)
    assert g.initial_seed() == 3
    state = g.get_state()
    assert state.dtype == ember.uint8
    g2 = ember.Generator()
    g2.set_state(state)
    assert g2.get_state().tolist() == state.tolist()
    assert ember.manual_seed(5) is not None and ember.initial_seed() == 5


def test_pickle_and_deepcopy_tensors():
    t = ember.tensor([[1.0, 2.0]], requires_grad=True)
    u = pickle.loads(pickle.dumps(t))
    assert u.tolist() == [[1.0, 2.0]] and u.requires_grad and u.dtype == ember.float32
    c = copy.deepcopy(t)
    assert c.tolist() == t.tolist() and c.data_ptr() != t.data_ptr() and c.requires_grad
    b = pickle.loads(pickle.dumps(ember.tensor([1.0]).bfloat16()))
    assert b.dtype == ember.bfloat16


@pytest.mark.skipif(ember.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_queries_answer_without_gpu():
    assert ember.cuda.is_available() is False and ember.cuda.device_count() == 0
    assert ember.backends.mps.is_available() is False
    with pytest.raises(RuntimeError, match="No CUDA GPUs are available|not compiled with CUDA"):
        ember.cuda.get_device_name(0)


def test_threads():
    n = ember.get_num_threads()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    ember.set_num_threads(n)
    with pytest.raises(ValueError):
        ember.set_num_threads(0)


def test_numpy_array_on_the_left_gives_a_tensor():
    a = np.arange(3.0, dtype=np.float32)
    t = ember.tensor([1.0, 2.0, 3.0])
    for result, expected in [(a + t, a + 1 + np.arange(3)), (a - t, a - [1, 2, 3]), (a * t, a * [1, 2, 3]),
                             (a / t, a / [1, 2, 3]), (a ** t, a ** [1, 2, 3])]:
        assert isinstance(result, ember.Tensor)
        np.testing.assert_allclose(result.numpy(), np.asarray(expected, dtype=np.float32))
    m = np.eye(3, dtype=np.float32)
    assert isinstance(m @ ember.ones(3, 2), ember.Tensor)


def test_zero_dim_tensor_where_a_number_is_expected():
    n = ember.tensor(3)
    assert ember.arange(n).tolist() == [0, 1, 2]
    assert ember.full((2,), ember.tensor(1.5)).tolist() == [1.5, 1.5]
    with pytest.raises(TypeError):
        ember.full((2,), ember.tensor([1.0, 2.0]))
