# Two commands: `make build` (sample data + dbt build of every layer) and `make test`.
# Each creates .venv and installs the pinned dependencies (pyproject.toml: the adapter;
# scripts/pyproject.toml: the warehouse's tools) when missing;
# `make setup` only installs (then plain `.venv/bin/dbt build --profiles-dir profiles` works).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: setup build test lint clean

setup: $(STAMP)

build: $(STAMP)
	$(VENV)/bin/lakehouse build

test: $(STAMP)
	$(VENV)/bin/lakehouse test

lint: $(STAMP)
	$(VENV)/bin/lakehouse lint

$(STAMP): pyproject.toml scripts/pyproject.toml
	@echo "==> creating $(VENV) and installing pinned dependencies (first run: a minute or two)"
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@# uv resolves and installs the same pinned versions as pip (compared with pip freeze),
	@# about 4x faster; pip installs them itself when uv cannot be had.
	@# Two distributions: the adapter (pyproject.toml, editable) and the warehouse's tools
	@# (scripts/pyproject.toml: their dependencies and commands, no code). editable_mode=compat
	@# puts the project folder on sys.path, where dbt finds the adapter dbt/adapters/lakehouse
	@# (dbt.adapters gathers its subpackages from sys.path) and the commands find scripts/ and
	@# orchestration/.
	@( $(VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'uv==0.13.9' \
		&& $(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python \
			--config-setting editable_mode=compat -e . './scripts[dev,operations]' \
		|| (echo "uv failed (see $(VENV)/install.log): installing with pip"; \
			$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
			--config-settings editable_mode=compat -e . './scripts[dev,operations]') ) > $(VENV)/install.log 2>&1 \
		|| (tail -n 40 $(VENV)/install.log; echo "install failed: see $(VENV)/install.log"; exit 1)
	@touch $@

clean:
	rm -rf data target logs
