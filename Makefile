PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# test processes: most of the suite's time is single-threaded XLA compilation
TEST_WORKERS ?= 2
# a test whose worker process crashed (a segmentation fault inside jaxlib's XLA compiler,
# about one full run in two on the 2-core VM, each time in another small program) runs once
# more in a new worker; a test that fails is not run again
RERUN_CRASHED := --reruns 1 --only-rerun "crashed while running"

.PHONY: demo test bench bench-gpu gpu-check docs notebooks clean

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
	$(PY) -m pytest -q -n $(TEST_WORKERS) $(RERUN_CRASHED)

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

# On a GPU machine whose own Python already has JAX with CUDA, torch and scikit-learn (shap
# and captum beside them for their cases), offline: jaximp built into build/gpu-site, no venv;
# the side by side, where a warm call's time goes (at n = 10,000), the suite's tests of the
# engine, the Explainer and foreign models on the GPU (its float32 matmuls at full
# precision; several test processes share the GPU; every result line logged, so a run cut at
# its limit still names its failures) and the host overhead. Each step has a time limit
# (GPU_BENCH_S, GPU_PROFILE_S, GPU_SUITE_S, GPU_OVERHEAD_S seconds: 8.5 minutes in all,
# for a lent machine's short session) and the next runs whatever the last gave. OUT=dir
# keeps the JSON rows and the logs.
GPU_SITE := build/gpu-site
GPU_TESTS := tests/test_explainer.py tests/test_device_resident.py tests/test_device_edge_inputs.py \
	tests/test_torch.py tests/test_engine.py tests/test_engine_modes.py tests/test_memory_budget.py \
	tests/test_precision.py tests/test_permutation.py tests/test_pd.py tests/test_pd_importance.py \
	tests/test_hstat.py tests/test_shapley.py tests/test_gradients.py tests/test_attribution_perturbation.py \
	tests/test_ale.py tests/test_sage.py tests/test_sensitivity.py tests/test_conditional.py \
	tests/test_call_cache.py
GPU_OUT = $(or $(OUT),build/gpu-check)
GPU_ARGS ?=
GPU_BENCH_S ?= 180
GPU_PROFILE_S ?= 60
GPU_SUITE_S ?= 240
GPU_OVERHEAD_S ?= 30
GPU_RUN = PYTHONPATH=$(GPU_SITE):$$PYTHONPATH PYTHONUNBUFFERED=1 timeout
gpu-check: SHELL := /bin/bash
gpu-check:
	$(PYTHON) -m pip install --quiet --no-deps --no-build-isolation --upgrade --target $(GPU_SITE) .
	mkdir -p $(GPU_OUT)
	-$(GPU_RUN) $(GPU_BENCH_S) $(PYTHON) benchmarks/gpu.py $(GPU_ARGS) \
		--json $(GPU_OUT)/gpu.jsonl > $(GPU_OUT)/gpu.log 2>&1; grep "^#" $(GPU_OUT)/gpu.log
	-$(GPU_RUN) $(GPU_PROFILE_S) $(PYTHON) benchmarks/gpu_profile.py --cases pfi pd \
		--sizes $(if $(findstring --quick,$(GPU_ARGS)),1000,10000) --out $(GPU_OUT)/profile \
		> $(GPU_OUT)/profile.log 2>&1; grep "^# phases" $(GPU_OUT)/profile.log; \
		grep -A14 "^# device time" $(GPU_OUT)/profile.log
	-XLA_PYTHON_CLIENT_PREALLOCATE=false JAX_DEFAULT_MATMUL_PRECISION=highest \
		$(GPU_RUN) $(GPU_SUITE_S) $(PYTHON) -P -m pytest -v -n $(or $(GPU_WORKERS),8) -rfE \
		-p no:cacheprovider $(GPU_TESTS) > $(GPU_OUT)/suite.log 2>&1; \
		grep -E "FAILED|ERROR| passed| failed" $(GPU_OUT)/suite.log | sort -u | tail -30
	-$(GPU_RUN) $(GPU_OVERHEAD_S) $(PYTHON) benchmarks/overhead.py > $(GPU_OUT)/overhead.log 2>&1; \
		grep "^|" $(GPU_OUT)/overhead.log

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
