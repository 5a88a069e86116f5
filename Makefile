PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint install clean bytecode

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Workers, agents and spread analyses are fresh interpreters: with PYTHONDONTWRITEBYTECODE set
# (common in containers) each would compile the package again at start (0.1-0.2 s apiece).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q t2s_pipeline

## make demo: build the demo warehouse, validate the gold cases, run one evaluation partition
demo: $(STAMP) bytecode
	$(BIN)/t2s demo run

## make test: lint, type-check and run every test
test: $(STAMP) bytecode
	$(BIN)/ruff format --check t2s_pipeline t2s_pipeline_tests bench
	$(BIN)/ruff check t2s_pipeline t2s_pipeline_tests bench
	$(BIN)/mypy t2s_pipeline
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff format t2s_pipeline t2s_pipeline_tests bench
	$(BIN)/ruff check --fix t2s_pipeline t2s_pipeline_tests bench

clean:
	rm -rf $(VENV) .t2s
