"""Time the Garson, Olden and Gedeon kernels, jitted, against a float64 NumPy reference.

Default size: 1,000 inputs x 4,096 hidden units x 10 outputs (one hidden layer); ``--layers``
adds hidden layers of the same width. Before timing anything, every kernel's result is checked
against the NumPy reference; the run stops if one differs. Times are medians over ``--repeats``
calls, blocking on the device result; the speed-up column is a ratio measured in this run.

    python benchmarks/weights.py
    python benchmarks/weights.py --inputs 1000 --hidden 4096 --outputs 10 --layers 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jaximp.kernels._weights import garson, gedeon, olden

# ------------------------------------------------------------------ float64 NumPy references


def np_shares(w: np.ndarray) -> np.ndarray:
    a = np.abs(w)
    total = a.sum(axis=0, keepdims=True)
    return np.divide(a, total, out=np.zeros_like(a), where=total > 0)


def np_olden(ws: list[np.ndarray]) -> np.ndarray:
    return np.linalg.multi_dot(ws) if len(ws) > 1 else ws[0]


def np_garson(ws: list[np.ndarray]) -> np.ndarray:
    paths = np.abs(ws[0])
    for w in ws[1:-1]:
        paths = paths @ np.abs(w)
    return np_shares(np_shares(paths) @ (ws[-1] != 0).astype(np.float64))


def np_gedeon(ws: list[np.ndarray]) -> np.ndarray:
    return (np_shares(ws[0]) @ np_shares(ws[1])).mean(axis=1)


KERNELS = {
    "garson": (garson, np_garson),
    "olden": (olden, np_olden),
    "gedeon": (gedeon, np_gedeon),
}


def median_ms(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=1000)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--outputs", type=int, default=10)
    parser.add_argument("--layers", type=int, default=1, help="number of hidden layers")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    sizes = [args.inputs, *([args.hidden] * args.layers), args.outputs]
    rng = np.random.default_rng(args.seed)
    ws64 = [rng.normal(scale=a**-0.5, size=(a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
    ws = tuple(jax.device_put(jnp.asarray(w, jnp.float32)) for w in ws64)

    print(f"network {' x '.join(map(str, sizes))}; device {jax.devices()[0]}; "
          f"median of {args.repeats} calls")
    rows = []
    for name, (kernel, reference) in KERNELS.items():
        jitted = jax.jit(kernel)
        expected = reference(ws64)
        got = np.asarray(jitted(ws).block_until_ready(), dtype=np.float64)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=f"{name} differs from the NumPy reference")
        jax_ms = median_ms(lambda: jitted(ws).block_until_ready(), args.repeats)
        numpy_ms = median_ms(lambda: reference(ws64), max(3, args.repeats // 4))
        error = np.abs(got - expected).max() / scale
        rows.append((name, str(got.shape), jax_ms, numpy_ms, numpy_ms / jax_ms, error))

    header = ("kernel", "result", "jax jit ms", "numpy f64 ms", "speed-up", "max rel err")
    print(f"{header[0]:<8} {header[1]:>10} {header[2]:>11} {header[3]:>13} {header[4]:>9} "
          f"{header[5]:>12}")
    for name, shape, jax_ms, numpy_ms, ratio, error in rows:
        print(f"{name:<8} {shape:>10} {jax_ms:>11.3f} {numpy_ms:>13.3f} {ratio:>8.1f}x "
              f"{error:>12.1e}")


if __name__ == "__main__":
    main()
