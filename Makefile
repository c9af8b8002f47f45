# The README's two commands. Both set everything up from a machine that has only
# Python 3.11 and pip.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast venv clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstall when the package metadata changes; the install is editable, so source
# edits need no reinstall.
$(STAMP): pyproject.toml tests/plugin_example/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m pip install -q -e tests/plugin_example
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# The suite runs on every core the machine has (pytest-xdist); each test is independent.
test: $(STAMP)
	$(BIN)/python -m pytest tests -n auto

# The edit loop: everything but the tests marked slow (whole models, lit, fuzzing,
# brute-force searches), in under two minutes on two cores.
test-fast: $(STAMP)
	$(BIN)/python -m pytest tests -n auto -m "not slow"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
