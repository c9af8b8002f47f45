"""Fixtures of the frontend tests."""

import pytest

from irc.workloads import graphs


@pytest.fixture(scope="session")
def models():
    """The ONNX model builders and their configurations (`irc.workloads.graphs`)."""
    return graphs
