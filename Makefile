# Two commands: `make build` (sample data + dbt build of every layer) and `make test`.
# Each creates .venv and installs the pinned dependencies from pyproject.toml when missing.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: build test lint clean

build: $(STAMP)
	$(VENV)/bin/lakehouse build

test: $(STAMP)
	$(VENV)/bin/lakehouse test

lint: $(STAMP)
	$(VENV)/bin/lakehouse lint

$(STAMP): pyproject.toml
	@echo "==> creating $(VENV) and installing pinned dependencies (first run: a few minutes)"
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' > $(VENV)/install.log 2>&1 \
		|| (tail -n 40 $(VENV)/install.log; echo "install failed: see $(VENV)/install.log"; exit 1)
	@touch $@

clean:
	rm -rf data target logs
