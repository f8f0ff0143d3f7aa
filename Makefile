# Two set-up commands: `make demo` and `make test`. Both install what is missing (idempotent).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
SYSSTAMP := .venv/.system-packages

.PHONY: demo test setup system-packages bench clean docs

setup: $(STAMP)

# System packages for the verify/translate validation backends (optional for lint).
system-packages:
	@bash scripts/install-system.sh

$(STAMP): pyproject.toml scripts/install-system.sh
	@bash scripts/install-system.sh
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	@$(VPY) -m pip install -q --upgrade pip >/dev/null
	@$(VPY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: setup
	@$(VPY) -m porter demo

test: setup
	@$(VPY) -m pytest -q

bench: setup
	@$(VPY) bench/lint_speed.py

clean:
	rm -rf .cuport_cache build dist *.egg-info
