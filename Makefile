PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,sklearn]"
	touch $@

demo: $(VENV)/.installed
	$(PY) -m jaximp demo --out jaximp-report

test: $(VENV)/.installed
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) benchmarks/pd.py
	$(PY) benchmarks/pfi.py
	$(PY) benchmarks/hstat.py
	$(PY) benchmarks/loco.py
	$(PY) benchmarks/weights.py
	$(PY) benchmarks/pd_memory.py
	$(PY) benchmarks/memory.py

clean:
	rm -rf $(VENV) jaximp-report build *.egg-info
