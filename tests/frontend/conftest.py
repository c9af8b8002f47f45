"""Fixtures of the frontend tests. `benchmarks/models` is loaded by path: xDSL installs
a top-level `benchmarks` package that shadows the repository's `benchmarks` directory."""

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "models"
_NAME = "irc_benchmark_models"


def load_models():
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _NAME, _PATH / "__init__.py", submodule_search_locations=[str(_PATH)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def models():
    """The `benchmarks/models` package (builders and configs)."""
    return load_models()
