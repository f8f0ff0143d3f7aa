# Two set-up commands: `make demo` and `make test`. Both install what is missing (idempotent).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
SYSSTAMP := .venv/.system-packages

.PHONY: demo test setup system-packages bench clean docs fuzz

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

# A fuzz campaign over every subcommand (tests/fuzz, docs/fuzzing.md): FUZZ_SECONDS=600 make fuzz
FUZZ_SECONDS ?= 300
FUZZ_SEED    ?= 1
FUZZ_WORKERS ?= 1
FUZZ_OUT     ?= fuzz-failures
fuzz: setup
	@$(VPY) tests/fuzz/run.py --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED) --workers $(FUZZ_WORKERS) --out $(FUZZ_OUT)

bench: setup
	@$(VPY) bench/lint_speed.py

clean:
	rm -rf .cuport_cache build dist *.egg-info
