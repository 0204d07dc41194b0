"""Shared pytest setup: the package comes from PYTHONPATH (a build tree) or an installed wheel."""
import pytest

import ember


@pytest.fixture
def torch_ref():
    """PyTorch for differential tests; the test is skipped (with the reason shown) without it."""
    return pytest.importorskip("torch", reason="PyTorch not installed: differential test skipped")


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
