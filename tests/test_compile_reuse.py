"""Models as pytrees: a second model of the same architecture compiles nothing new."""

import contextlib
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _linear_fit import fit_lstsq

import jaximp
from jaximp.engine._engine import predict_rows
from jaximp.models._model import as_predictor


class _CompileLog(logging.Handler):
    """Collects JAX's compile log lines ("Compiling ..." / "Finished XLA compilation ...")."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.count = 0

    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Compiling ") or "Finished XLA compilation" in message:
            self.count += 1


@contextlib.contextmanager
def count_compiles():
    """Yields a handler whose ``count`` is the number of compile log lines in the block."""
    handler = _CompileLog()
    logger = logging.getLogger("jax")  # parent of jax._src.dispatch and ...interpreters.pxla
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture(scope="module")
def two_mlps():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    m1 = jaximp.fit_mlp(X, X[:, 0] - X[:, 1], hidden=(8,), steps=50, random_state=0)
    m2 = jaximp.fit_mlp(X * 2 + 1, np.sin(X[:, 2]), hidden=(8,), steps=50, random_state=1)
    return X, m1, m2


def test_counter_counts_compiles():
    with count_compiles() as log:
        jax.jit(lambda x: x * 3.0 + 1.0)(jnp.arange(7.0))
    assert log.count >= 1


def test_same_architecture_shares_apply_and_params_are_arguments(two_mlps):
    X, m1, m2 = two_mlps
    p1, p2 = as_predictor(m1, n_features=3), as_predictor(m2, n_features=3)
    assert p1.apply is p2.apply
    assert len(p1.params) == len(jax.tree_util.tree_leaves(m1))
    np.testing.assert_allclose(np.asarray(p2(X))[:, 0], np.asarray(m2(X)), rtol=1e-6)
    # another architecture gets another apply
    other = jaximp.fit_mlp(X, X[:, 0], hidden=(4, 4), steps=5)
    assert as_predictor(other, n_features=3).apply is not p1.apply


def test_second_model_partial_dependence_compiles_nothing(two_mlps):
    X, m1, m2 = two_mlps
    with count_compiles() as first:
        pd1 = jaximp.partial_dependence(m1, X, "x0")
    with count_compiles() as second:
        pd2 = jaximp.partial_dependence(m2, X, "x0")
    assert first.count >= 1  # the counter sees the first model's compilations
    assert second.count == 0
    assert not np.allclose(pd1.average, pd2.average)  # the second model's own parameters


def test_second_model_predict_rows_compiles_nothing(two_mlps):
    X, _, _ = two_mlps
    # an architecture no other test uses, so that the first call compiles
    m1 = jaximp.fit_mlp(X, X[:, 0], hidden=(6,), steps=20, random_state=0)
    m2 = jaximp.fit_mlp(X, X[:, 1] ** 2, hidden=(6,), steps=20, random_state=1)
    with count_compiles() as first:
        out1 = predict_rows(as_predictor(m1, n_features=3), X)
    with count_compiles() as second:
        out2 = predict_rows(as_predictor(m2, n_features=3), X)
    assert first.count >= 1 and second.count == 0
    np.testing.assert_allclose(out1[:, 0], np.asarray(m1(X)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out2[:, 0], np.asarray(m2(X)), rtol=1e-5, atol=1e-6)


def test_second_traceable_loco_run_compiles_nothing():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    y1, y2 = X @ np.array([1.0, 2.0, 0.0]), X @ np.array([0.0, 1.0, -1.0])
    with count_compiles() as first:
        r1 = jaximp.loco_importance(None, X, y1, fit=fit_lstsq, traceable_fit=True)
    with count_compiles() as second:
        r2 = jaximp.loco_importance(None, X, y2, fit=fit_lstsq, traceable_fit=True)
    assert first.count >= 1 and second.count == 0
    assert r1.top(1) == ["x1"] and r2.importances_mean[0, 0] < 1e-4


def test_chunks_after_the_first_and_a_new_n_in_the_bucket_compile_nothing():
    """Many chunks cost the compiles of one; a new n that shares the row bucket reuses them."""
    W = np.random.default_rng(3).normal(size=(4, 16)).astype(np.float32)

    def model(X):
        return jnp.tanh(X @ W).sum(axis=1)

    X = np.random.default_rng(4).normal(size=(1000, 4))
    y = np.asarray(model(X))
    run = lambda data, **kw: jaximp.permutation_importance(  # noqa: E731
        model, data, y[: len(data)], n_repeats=40, **kw)
    run(X, memory_budget=1 << 16)  # warm: compiles everything once
    with count_compiles() as log:
        chunked = run(X, memory_budget=1 << 16, random_state=1)  # many chunks, a new key
    assert log.count == 0
    with count_compiles() as log:
        run(X[:990], memory_budget=1 << 16)  # 990 rows: the same 1024-row bucket
    assert log.count == 0
    whole = run(X, random_state=1)
    np.testing.assert_allclose(chunked.importances, whole.importances, rtol=1e-5, atol=1e-7)
