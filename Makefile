# Two commands matter: `make run` and `make test`. Both build the virtualenv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# gcloud-tasks-emulator pins protobuf<5, so it gets a virtualenv of its own.
TASKS_VENV  := .venv-tasks
TASKS_STAMP := $(TASKS_VENV)/.installed
export XDG_RUNTIME_DIR ?= /tmp/colony-runtime-$(shell id -u)

.PHONY: run test lint typecheck unit bench setup clean tasks-emulator-venv

$(STAMP): pyproject.toml constraints.txt | $(TASKS_STAMP)
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "installing dependencies into $(VENV) (pinned by constraints.txt)…"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

$(TASKS_STAMP): constraints-tasks.txt
	@test -x $(TASKS_VENV)/bin/python || $(PYTHON) -m venv $(TASKS_VENV)
	@echo "installing gcloud-tasks-emulator into $(TASKS_VENV)…"
	@$(TASKS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c constraints-tasks.txt 'gcloud-tasks-emulator==0.6.2'
	@touch $(TASKS_STAMP)

tasks-emulator-venv: $(TASKS_STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/colony demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/kc_retrieval.py

clean:
	rm -rf $(VENV) $(TASKS_VENV) .colony .pytest_cache .mypy_cache .ruff_cache
