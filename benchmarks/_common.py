"""Shared helpers for the benchmarks: timing, the floor, machine description, reference MLPs."""

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


def float32_rtol() -> float:
    """Relative tolerance of a float32 model's outputs against a float64 reference: float32
    rounding on CPU; on a GPU, JAX's default matmul precision rounds float32 operands to
    TF32 (a 10-bit mantissa), which leaves errors of a few 1e-4."""
    return 1e-4 if jax.default_backend() == "cpu" else 3e-3


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


def torch_twin(layers):
    """The MLP as a torch ``nn.Sequential`` with the same float32 weights, frozen."""
    import torch

    modules = []
    for k, (W, b) in enumerate(layers):
        linear = torch.nn.Linear(*W.shape)
        with torch.no_grad():
            linear.weight.copy_(torch.tensor(W.T))
            linear.bias.copy_(torch.tensor(b))
        modules += [linear] + ([torch.nn.ReLU()] if k < len(layers) - 1 else [])
    net = torch.nn.Sequential(*modules)
    for parameter in net.parameters():
        parameter.requires_grad_(False)
    return net


def matmul_flops(layers) -> int:
    """Multiply-adds times two for one row through the MLP."""
    return int(sum(2 * W.shape[0] * W.shape[1] for W, _ in layers))


def interleaved_best(fns: dict, repeats: int, rounds: dict | None = None) -> dict:
    """Best wall time of each zero-argument function over ``repeats`` rounds in which they are
    called in turn (so that load from other processes hits all of them alike), each call
    blocked until its results are ready. ``rounds`` caps the rounds of slow functions (by
    name); a function is called in the first rounds only."""
    rounds = rounds or {}
    best = {name: float("inf") for name in fns}
    for k in range(repeats):
        # every other round in reverse order: the call after another runs ~15% slower here
        for name, fn in (list(fns.items()) if k % 2 == 0 else list(fns.items())[::-1]):
            if k >= rounds.get(name, repeats):
                continue
            start = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def timed_against_floor_and_peers(ours, floor, peers: dict, repeats: int,
                                  rounds: dict | None = None) -> dict:
    """Best times of ``ours`` and ``floor`` called in turn (at least ``repeats`` rounds; up to
    200, about 2 s of them, for fast calls), then of ``ours`` and the peers (by name) called
    in turn; ``ours`` keeps its time from the first rounds. The floor rounds
    have no peer in them: a scikit-learn call leaves BLAS threads spinning that slowed the
    next JAX call by up to 1.7x on a 2-core machine."""
    # calls of a few ms vary most: the best of 50 rounds still moved by 10% between runs here;
    # give them up to 200 rounds or about 2 s
    start = time.perf_counter()
    jax.block_until_ready(ours())
    repeats = max(repeats, min(200, int(2.0 / max(time.perf_counter() - start, 1e-3))))
    times = interleaved_best({"ours": ours, "floor": floor}, repeats)
    if peers:
        with_peers = interleaved_best({"ours": ours, **peers}, repeats, rounds)
        times.update({name: with_peers[name] for name in peers})
    return times


_FLOOR_DATA_BYTES = 256 << 20


def scan_floor(f, X, total_rows: int, block: int = 16384):
    """The floor: the model evaluated on ``total_rows`` rows and nothing else.

    ONE jitted function runs ``jax.lax.scan`` over blocks of about ``block`` rows (the model's
    activations of a block stay in cache on CPU), carrying only the running sum of the
    predictions, so nothing big is kept. The blocks are prepared up front on the device as
    (blocks, rows, c), tiled from ``X`` (float32); past 256 MiB of them the scan cycles over
    the blocks it has. Step ``k`` reads block ``k`` with a dynamic index: no data is built
    inside the loop.

    Returns a compiled, warmed-up zero-argument callable (time it blocked until ready), with
    attributes ``rows`` (rows evaluated: ``total_rows`` rounded up to whole blocks),
    ``block`` (rows per block) and ``n_blocks``.
    """
    X32 = np.asarray(X, np.float32)
    c = X32.shape[1]
    n_blocks = max(1, -(-int(total_rows) // block))
    rows = -(-int(total_rows) // n_blocks)  # about ``block`` rows, n_blocks * rows >= total
    distinct = max(1, min(n_blocks, _FLOOR_DATA_BYTES // (rows * c * 4)))
    data = jax.device_put(np.resize(X32, (distinct, rows, c)))

    @jax.jit
    def run(data):
        def step(total, k):
            x = jax.lax.dynamic_index_in_dim(data, k % distinct, axis=0, keepdims=False)
            return total + jnp.sum(f(x), dtype=jnp.float32), None

        total, _ = jax.lax.scan(step, jnp.float32(0), jnp.arange(n_blocks, dtype=jnp.int32))
        return total

    jax.block_until_ready(run(data))

    def floor():
        return run(data)

    floor.rows, floor.block, floor.n_blocks = n_blocks * rows, rows, n_blocks
    return floor


def print_table(rows, header) -> None:
    """Rows (dicts) as a Markdown table with the ``header`` keys as columns."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [f"{row[k]:.4g}" if isinstance(row.get(k), float) else str(row.get(k, ""))
                 for k in header]
        print("| " + " | ".join(cells) + " |")
