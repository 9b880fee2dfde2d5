PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# test processes: most of the suite's time is single-threaded XLA compilation
TEST_WORKERS ?= 2

.PHONY: demo test bench bench-gpu docs notebooks clean

# pip byte-compiles every installed module in one process (35 s of a 52 s install); instead
# the modules are compiled on every core, leaving out the parts no run imports (packages'
# own test suites, torch's compiler and export stacks): 11 s
SKIP_BYTECODE := '/(tests?|testing|_inductor|_dynamo|onnx|distributed|_export|export|benchmarks?)/'
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e ".[test,sklearn]"
	$(PY) -m compileall -q -j 0 -x $(SKIP_BYTECODE) \
		"$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null
	touch $@

demo: $(VENV)/.installed
	$(PY) -m jaximp demo --out jaximp-report

test: $(VENV)/.installed
	$(PY) -m pytest -q -n $(TEST_WORKERS)

bench: $(VENV)/.installed
	$(PY) benchmarks/pd.py
	$(PY) benchmarks/pfi.py
	$(PY) benchmarks/hstat.py
	$(PY) benchmarks/loco.py
	$(PY) benchmarks/weights.py
	$(PY) benchmarks/pd_memory.py
	$(PY) benchmarks/memory.py
	$(PY) benchmarks/overhead.py
	$(PY) benchmarks/trees.py
	$(PY) benchmarks/tree_shap.py
	$(PY) benchmarks/sage.py
	$(PY) benchmarks/conditional.py
	$(PY) benchmarks/gradients.py

# the GPU side by side (benchmarks/gpu.py): jaximp, the floor, scikit-learn, shap and captum
bench-gpu: $(VENV)/.installed
	$(PY) benchmarks/gpu.py $(if $(OUT),--json $(OUT)/gpu.jsonl,)

$(VENV)/.docs-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $@

# HTML documentation in build/docs/html; warnings are errors
docs: $(VENV)/.docs-installed
	$(PY) -m sphinx -W --keep-going -b html docs build/docs/html

$(VENV)/.notebooks-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[notebooks]"
	touch $@

# run every notebook in notebooks/ at full size and store its outputs in place
notebooks: $(VENV)/.notebooks-installed
	$(PY) notebooks/run.py

clean:
	rm -rf $(VENV) jaximp-report build *.egg-info
