"""Shared helpers for the benchmarks: timing, machine description, the reference MLPs."""

from __future__ import annotations

import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np


def machine() -> str:
    device = jax.devices()[0]
    kind = getattr(device, "device_kind", device.platform)
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"JAX {jax.__version__} on {device.platform} ({kind}), {len(jax.devices())} device(s)")


def best_time(fn, repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls, each blocked until its results are ready."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best


def random_relu_mlp(sizes, seed=0):
    """Weights ``[(W, b), ...]`` (float32) of a ReLU MLP with scaled normal weights."""
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(size=(a, b)).astype(np.float32) * np.float32(np.sqrt(2.0 / a)),
         rng.normal(size=b).astype(np.float32) * np.float32(0.1))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def jax_mlp(layers):
    """The MLP as a pure JAX function of a batch, returning (n,)."""
    params = [(jnp.asarray(W), jnp.asarray(b)) for W, b in layers]

    def f(X):
        h = X
        for W, b in params[:-1]:
            h = jax.nn.relu(h @ W + b)
        W, b = params[-1]
        return (h @ W + b)[:, 0]

    return f


def sklearn_mlp(layers, n_features):
    """A scikit-learn MLPRegressor carrying exactly the same weights."""
    from sklearn.neural_network import MLPRegressor

    hidden = tuple(W.shape[1] for W, _ in layers[:-1])
    est = MLPRegressor(hidden_layer_sizes=hidden, max_iter=1)
    rng = np.random.default_rng(0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(rng.normal(size=(8, n_features)), rng.normal(size=8))
    est.coefs_ = [W.astype(np.float64) for W, _ in layers]
    est.intercepts_ = [b.astype(np.float64) for _, b in layers]
    return est


def matmul_flops(layers) -> int:
    """Multiply-adds times two for one row through the MLP."""
    return int(sum(2 * W.shape[0] * W.shape[1] for W, _ in layers))


def blocked_floor(f, X, total_rows: int, repeats: int = 3, blocks=(4096, 16384, 65536)):
    """Best time of a jitted predict over ``total_rows`` rows run as back-to-back calls on
    cache-sized blocks (best of ``blocks`` sizes): the model evaluations alone, evaluated the
    way jaximp's engine does on CPU, without materializing all rows at once.

    Returns (seconds, block rows).
    """
    predict = jax.jit(f)
    best = (float("inf"), None)
    for block in blocks:
        rows = min(block, total_rows)
        data = jnp.asarray(np.resize(np.asarray(X, np.float32), (rows, X.shape[1])))
        calls = -(-total_rows // rows)
        jax.block_until_ready(predict(data))
        t = best_time(lambda: [predict(data) for _ in range(calls)], repeats)
        best = min(best, (t, rows), key=lambda pair: pair[0])
    return best


def print_table(rows, header) -> None:
    """Rows (dicts) as a Markdown table with the ``header`` keys as columns."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [f"{row[k]:.4g}" if isinstance(row.get(k), float) else str(row.get(k, ""))
                 for k in header]
        print("| " + " | ".join(cells) + " |")
