# costgap: two commands set everything up on a fresh machine.
#   make run   create .venv, install, run the main job on the embedded default
#   make test  create .venv, install, run the whole test suite
PY       ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
# The CPU build of torch; a bare `torch` requirement would pull a multi-GB CUDA build.
TORCH    ?= torch==2.13.0
STAMP    := $(VENV)/.installed-stamp

.PHONY: run test check bench browser clean help sky

help:
	@echo "make run    - install into $(VENV) and run the main job (local target, quick profile)"
	@echo "make test   - install into $(VENV) and run the whole test suite (about 24 minutes on 2 cores)"
	@echo "make check  - the tests that start no server or process fleet of their own (under 3 minutes)"
	@echo "make bench  - run the project's benchmarks and print their figures"

EXTRAS   := .[probe,test,clouds,redis]

# uv installs the same pins as pip in about a quarter of the time (23.6 s against 92 s here). It
# looks only where it is told: the CPU torch file lies in the machine's find-links folder
# ($$PIP_FIND_LINKS), and without that folder uv would take PyPI's multi-GB CUDA build, so the
# install falls back to pip (slower, same result) there, saying so.
# This machine sets PYTHONDONTWRITEBYTECODE, so without .pyc files in site-packages every command would
# compile its imports again. uv's --compile-bytecode compiles every file of every package (torch's alone are
# thousands): 76 s of the install's 83 here, most of it for modules nothing imports. Instead the packages the
# commands and the tests import are compiled by importing them once, in two processes side by side, with
# bytecode writing on (runtime/bytecode.py; 7 s for uv, then ~25 s); anything else compiles the first time
# a `make test` or `make run` process imports it (both write bytecode, see PYC).
COMPILE_A := torch transformers scipy pandas great_expectations sqlalchemy
COMPILE_B := prefect.server.api.server prefect.cli prefect.workers.process prefect.engine prefect_redis.messaging \
             cli.main flows.compare polars duckdb altair vl_convert asyncpg httpx pytest xdist hypothesis playwright.sync_api
PYC      := env -u PYTHONDONTWRITEBYTECODE
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@if [ -n "$$PIP_FIND_LINKS" ] && $(BIN)/python -m pip install -q --disable-pip-version-check uv; then \
	  echo "$(BIN)/uv pip install $(TORCH) -e \"$(EXTRAS)\" (find-links $$PIP_FIND_LINKS)"; \
	  $(BIN)/uv pip install -q --python $(BIN)/python \
	    --find-links "$$PIP_FIND_LINKS" "$(TORCH)" -e "$(EXTRAS)" && \
	  echo "make: compiling the bytecode of what the commands and tests import" && \
	  { $(PYC) $(BIN)/python -m runtime.bytecode $(COMPILE_A) & \
	    $(PYC) $(BIN)/python -m runtime.bytecode $(COMPILE_B); wait; }; \
	else \
	  echo "make: installing with pip (no PIP_FIND_LINKS for uv to find the CPU torch, or no uv)"; \
	  $(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH)" && \
	  $(BIN)/python -m pip install -q --disable-pip-version-check -e "$(EXTRAS)"; \
	fi
	@touch $(STAMP)

run: $(STAMP)
	$(PYC) $(BIN)/costgap run

# SkyPilot's own task loader checks the tasks `costgap export skypilot` writes (tests/test_skypilot_export.py).
# It lives in a venv of its own: skypilot pins click<8.2 and uvicorn<0.36, and costgap's venv needs
# click>=8.4.2 (huggingface_hub). Measured here: 96 packages, 317 MB on disk, `make sky` 16 s with uv.
SKY_VENV ?= .venv-sky
SKYPILOT ?= skypilot==0.14.1
SKY_STAMP := $(SKY_VENV)/.installed-stamp
$(SKY_STAMP): Makefile
	@test -x $(SKY_VENV)/bin/python || \
	  { [ -x $(BIN)/uv ] && $(BIN)/uv venv -q --python "$$(command -v $(PY))" $(SKY_VENV); } || $(PY) -m venv $(SKY_VENV)
	@if [ -n "$$PIP_FIND_LINKS" ] && [ -x $(BIN)/uv ]; then \
	  $(BIN)/uv pip install -q --python $(SKY_VENV)/bin/python --find-links "$$PIP_FIND_LINKS" "$(SKYPILOT)"; \
	else $(SKY_VENV)/bin/python -m pip install -q --disable-pip-version-check "$(SKYPILOT)"; fi
	@touch $(SKY_STAMP)

sky: $(SKY_STAMP)

# Debian's chromium drives the report's browser test; installed here when missing (root only).
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "chromium not installed: the browser test will be skipped"; }

# pytest-xdist: much of the suite's time is spent waiting on servers and child processes, so more workers
# than this 2-core box has cores finish sooner; they share one Prefect test server and one warm process
# (tests/conftest.py), and each adds its own imports (~10 CPU-s). Measured here, 3 workers 580-704 s and 4
# workers 687-779 s for the parallel part, with the box's speed varying by about 30% between runs. Each
# worker runs torch on one thread (tests/conftest.py TORCH_THREADS).
TEST_WORKERS ?= 3

# Tests marked `timed` assert a wall-clock budget (the fine-tune's 60 s): they run after the parallel
# part, alone on the box, so the heavy scenario tests' load cannot make them miss it. Only the files that hold
# them are collected there (collecting the whole suite again costs ~12 s here); tests/test_suite_layout.py fails
# when a `timed` test lives in a file not listed here.
TIMED_TESTS := tests/test_finetune.py
# The install and the browser are independent: made side by side (a fresh machine waits for the slower,
# not for both).
test:
	@$(MAKE) --no-print-directory -j2 $(STAMP) browser
	@$(MAKE) --no-print-directory $(SKY_STAMP)
	$(PYC) $(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist worksteal --durations=10 -m "not timed"
	$(PYC) $(BIN)/python -m pytest -q -ra -m timed $(TIMED_TESTS)

# The edit loop (issue 44): every test not marked `slow`, i.e. every test that starts no server and no fleet
# of processes of its own (unit, property, importers, cost model, report rendering from a prepared warehouse),
# on two workers that share the session's Prefect test server and warm process. A new test is in it unless
# marked `slow`; one that starts a server of its own fails here, saying so (tests/pool_harness.py), and any
# over 20 s is named at the end (tests/conftest.py). `make test` still runs everything.
CHECK_WORKERS ?= 2
check: $(STAMP)
	COSTGAP_CHECK=1 $(PYC) $(BIN)/python -m pytest -q -ra -n $(CHECK_WORKERS) --dist worksteal --durations=5 -m "not slow and not timed"

bench: $(STAMP)
	$(PYC) $(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) $(SKY_VENV) site results costgap.duckdb
