"""ember.set_default_device / get_default_device: where factories put tensors that name no device
(per thread, as torch's)."""
import threading

import pytest

import ember


@pytest.fixture(autouse=True)
def _restore_default_device():
    yield
    ember.set_default_device(None)


def test_starts_on_the_cpu():
    assert ember.get_default_device() == ember.device("cpu")
    assert ember.zeros(2).device == ember.device("cpu")


def test_set_and_reset():
    ember.set_default_device(ember.device("cpu"))
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    assert ember.ones(3).device == ember.device("cpu")
    ember.set_default_device(None)
    assert ember.get_default_device() == ember.device("cpu")


def test_a_device_without_a_backend_fails_when_a_tensor_is_made_there():
    if ember.cuda.is_available():
        pytest.skip("this build has a GPU")
    ember.set_default_device("cuda")
    assert ember.get_default_device() == ember.device("cuda")
    if ember.version.cuda is not None:  # built with CUDA, no GPU here: torch's message
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            ember.zeros(2)
    else:
        with pytest.raises(NotImplementedError, match="'CUDA' backend"):
            ember.zeros(2)
    # An explicit device still wins.
    assert ember.zeros(2, device="cpu").device == ember.device("cpu")


def test_per_thread():
    ember.set_default_device("cuda")
    seen = []
    t = threading.Thread(target=lambda: seen.append(ember.get_default_device()))
    t.start()
    t.join()
    assert seen == [ember.device("cpu")]
