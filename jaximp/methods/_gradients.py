"""Gradient attributions of differentiable (JAX) models: integrated gradients, expected
gradients, SmoothGrad, saliency and gradient x input.

Every method is one engine call with a *derived predictor*: a jitted function of a block of
rows whose outputs are the rows' attributions (``jax.vjp`` of the model, folded over the
integration steps, baselines or noise samples by ``lax.scan`` so that a block's memory is one
step's, so no ``jax.checkpoint`` is needed), kept per row by the engine
(:class:`~jaximp.engine.Keep`), which sizes the blocks from the compiled function's memory,
shards the rows and reports progress. Random draws (expected gradients' baselines and
interpolation points, SmoothGrad's noise) come from the key folded with the row number, carried
as two extra columns, so they do not depend on the chunking.

Conventions follow captum (Kokhlikyan et al. 2020): ``n_steps=50`` and Gauss-Legendre nodes
for integrated gradients (``method`` takes captum's names, with its nodes and weights), zero
baselines by default, ``abs=True`` for saliency, absolute noise standard deviations for
SmoothGrad. ``output`` may also be captum's per-row ``target``: an integer array with one
output index per row (e.g. each row's predicted class), carried as one more column, so each
row costs one pullback per step whatever the number of outputs.
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..data import (
    Choice,
    Dataset,
    Flag,
    Int,
    as_dataset,
    as_key,
    check_choice,
    select_outputs,
    user_stacklevel,
    validate_params,
)
from ..engine import Keep, at_values, evaluate
from ..models import Predictor, stable_apply
from ._attributions import (
    Attributions,
    build_attributions,
    completeness_gap,
    feature_membership,
    integer_columns,
    labelled_values,
    row_outputs,
    warn_incomplete,
)
from ._setup import column_means, column_medians, digest, prepare, warn_unresolved_values

__all__ = ["Attributions", "completeness_gap", "expected_gradients", "feature_membership",
           "input_x_gradient", "integrated_gradients", "saliency", "smoothgrad"]

METHODS = ("gausslegendre", "riemann_trapezoid", "riemann_left", "riemann_right",
           "riemann_middle")
_ROW_SPLIT = 4096  # the row number travels as two float columns, exact up to 2**36 rows
_ENGINE_ROWS_KEPT = 4  # an Explainer's extended rows (engine_rows) of its last calls


# ---------------------------------------------------------------------------------------------
# The edge: a JAX model, numeric continuous features.
# ---------------------------------------------------------------------------------------------


def gradient_setup(model, X, method_name: str, *, output, feature_names, groups, sample_weight,
                   variables, memory_budget, progress):
    """Validated data and model for a gradient method: refuses host models and categorical
    or integer inputs with the method to use instead. Returns the dataset, the predictor,
    the chosen outputs and the engine options."""
    dataset, predictor, out_idx, _, engine = attribution_setup(
        model, X, method_name, output=output, feature_names=feature_names, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress, per_row_output=False)
    return dataset, predictor, out_idx, engine


def attribution_setup(model, X, method_name: str, *, output, feature_names, groups,
                      sample_weight, variables, memory_budget, progress, per_row_output=True):
    """:func:`gradient_setup`, also taking ``output`` as one output index per row: returns
    the dataset, the predictor, the chosen outputs (empty for per-row ones), the per-row
    output indices (n,) or None, and the engine options."""
    source_kinds = integer_columns(X)
    dataset, predictor = prepare(
        model, X, feature_names=feature_names, groups=groups, sample_weight=sample_weight,
        variables=variables, memory_budget=memory_budget, progress=progress,
    )
    if predictor.host:
        raise TypeError(
            f"{method_name} differentiates the model with jax.grad, but {predictor.name} runs "
            "outside JAX (NumPy, scikit-learn, or torch through DLPack), where jax.grad cannot "
            "reach. Use a JAX model (a jitted function, Flax, Equinox or jaximp.MLP), or a "
            "model-agnostic method: "
            "jaximp.shapley_values for per-row attributions, jaximp.permutation_importance "
            "for a global importance."
        )
    if predictor.piecewise_constant:
        raise TypeError(
            f"{method_name} differentiates the model with jax.grad, but {predictor.name} is "
            "a tree model, piecewise constant: its gradient is 0 almost everywhere. Use "
            "jaximp.tree_shap or jaximp.shapley_values for per-row attributions, "
            "jaximp.permutation_importance for a global importance."
        )
    categorical = [f.name for f in dataset.features if f.is_categorical]
    if categorical or source_kinds:
        what = (f"categorical features {categorical}" if categorical
                else f"integer or boolean columns {source_kinds}")
        raise TypeError(
            f"{method_name} needs continuous inputs to differentiate along; got {what}. Use "
            "jaximp.shapley_values or jaximp.permutation_importance, which replace values "
            "instead of differentiating; or cast the columns to float if they are continuous "
            "quantities."
        )
    warn_unresolved_values(predictor, dataset)
    per_row = row_outputs(output, predictor.output_names, dataset.n_rows) if per_row_output \
        else None
    out_idx = [] if per_row is not None else select_outputs(predictor.output_names, output)
    engine = {"memory_budget": memory_budget, "progress": progress}
    return dataset, predictor, out_idx, per_row, engine


def quadrature(method: str, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``alpha`` in [0, 1] and weights of captum's approximation ``method``.

    ``"gausslegendre"``: Gauss-Legendre nodes mapped to [0, 1], weights summing to 1.
    ``"riemann_*"``: weights ``1/n``; ``"riemann_trapezoid"`` halves the two end weights, so
    that they sum to ``1 - 1/n`` (captum's convention, kept for agreement).

    Examples
    --------
    >>> alphas, weights = quadrature("riemann_right", 4)
    >>> alphas.tolist(), weights.tolist()
    ([0.25, 0.5, 0.75, 1.0], [0.25, 0.25, 0.25, 0.25])
    """
    check_choice(method, "method", METHODS)
    n = int(n_steps)
    if method == "gausslegendre":
        nodes, weights = np.polynomial.legendre.leggauss(n)
        return 0.5 * (1 + nodes), 0.5 * weights
    if n < 2:
        raise ValueError(f"n_steps must be >= 2 for method={method!r}; got {n}.")
    weights = np.full(n, 1.0 / n)
    if method == "riemann_trapezoid":
        weights[[0, -1]] /= 2
        return np.linspace(0, 1, n), weights
    if method == "riemann_left":
        return np.linspace(0, 1 - 1 / n, n), weights
    if method == "riemann_middle":
        return np.linspace(1 / (2 * n), 1 - 1 / (2 * n), n), weights
    return np.linspace(1 / n, 1, n), weights


def resolve_baselines(baselines, dataset: Dataset, name: str = "baselines") -> np.ndarray:
    """Baselines (b, c) from None (zeros), a number (every column), "mean", "median" (of X's
    columns, weighted by the sample weights), (c,) or (b, c)."""
    X = dataset.X
    c = X.shape[1]
    if baselines is None:
        return np.zeros((1, c))
    if isinstance(baselines, (int, float, np.integer, np.floating)) and not isinstance(
            baselines, (bool, np.bool_)):  # one value for every column, as captum's scalar
        if not np.isfinite(baselines):
            raise ValueError(f"{name} contain NaN or infinite values; pass finite values.")
        return np.full((1, c), float(baselines))
    if isinstance(baselines, str):
        check_choice(baselines, name, ("mean", "median"))
        centre = column_means if baselines == "mean" else column_medians
        return centre(X, dataset.weights)[None]
    values = np.asarray(labelled_values(baselines, dataset, name), dtype=np.float64)
    shape = tuple(dataset.input_shape or (c,))
    if values.shape == shape or values.ndim == 1:  # one example
        values = values.reshape(1, -1)
    elif values.shape[1:] == shape:  # examples of X's shape
        values = values.reshape(values.shape[0], -1)
    if values.ndim != 2 or values.shape[1] != c or values.shape[0] == 0:
        examples = "" if dataset.input_shape is None else f" (or examples of shape {shape})"
        raise ValueError(
            f"{name} must be None, a number, 'mean', 'median', an array of shape ({c},) or "
            f"(b, {c})"
            f"{examples}; got shape {np.shape(baselines)}."
        )
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contain NaN or infinite values; pass finite values.")
    return values


def engine_rows(dataset: Dataset, with_row_numbers: bool, per_row=None, *more) -> Dataset:
    """The dataset the derived predictor is evaluated on: X, then the columns of ``more``
    (e.g. per-row baselines), two columns holding each row's number when the derived
    predictor draws random numbers per row, and last each row's output index (``per_row``).

    Rows kept on a device are extended there (never read back to the host); an Explainer's
    (pinned) data keeps the extended rows of its last few calls, pinned too, so that a
    repeated call sends nothing."""
    if not (with_row_numbers or more or per_row is not None):
        return dataset

    def make():
        rows = np.arange(dataset.n_rows)
        columns = [np.asarray(m, np.float64).reshape(dataset.n_rows, -1) for m in more]
        if with_row_numbers:
            columns += [rows[:, None] // _ROW_SPLIT, rows[:, None] % _ROW_SPLIT]
        if per_row is not None:
            columns.append(np.asarray(per_row).reshape(-1, 1))
        extra = np.column_stack(columns)
        if dataset.on_host or dataset.device_X is None:
            return as_dataset(np.column_stack([dataset.X, extra]))
        X = dataset.device_X
        return as_dataset(jnp.concatenate([X, jax.device_put(extra.astype(X.dtype),
                                                             X.sharding)], axis=1))

    if not dataset.pinned:
        return make()
    key = (with_row_numbers, digest(per_row), tuple(digest(m) for m in more))
    return dataset.recent("engine rows", key, lambda: make().pin(), _ENGINE_ROWS_KEPT)


def _device_background(dataset: Dataset, dtype):
    """Expected gradients' default background: the data's rows on the device in ``dtype``
    (the rows given there, or one copy of the host rows, kept for an Explainer's data)."""
    def make():
        rows = dataset.device_X if dataset.device_X is not None else dataset.X
        return jax.device_put(rows.astype(dtype))

    return dataset.memo(("rows on the device", np.dtype(dtype).str), make) if dataset.pinned \
        else make()


def run_derived(apply, params, n_outputs: int, predictor: Predictor, data: Dataset, reducer,
                label: str, engine: dict) -> np.ndarray:
    """The engine on a derived predictor (one item: the rows themselves)."""
    derived = dataclasses.replace(
        predictor, apply=apply, params=params, n_outputs=n_outputs,
        output_names=tuple(f"y{k}" for k in range(n_outputs)), name=f"{label} of {predictor.name}",
    )
    c = data.n_columns
    plan = at_values(np.zeros((1, c), bool), [0], np.zeros((1, c)), [0])
    try:
        return evaluate(derived, data, plan, reducer, label=label, **engine)
    except FloatingPointError:  # the engine's message speaks of predictions
        raise FloatingPointError(
            f"{label} of the model {predictor.name} is NaN or infinite: its predictions or "
            "gradients are not finite at some points the method evaluates (the rows of X and, "
            "for path methods, points towards the baselines), e.g. sqrt or log at 0.") from None


# ---------------------------------------------------------------------------------------------
# Kernels: one block of rows (m, c) in, per-row values out.
# ---------------------------------------------------------------------------------------------


def gradients(fn, Z):
    """Values (m, o) and per-row gradients (o, m, c) of a row-wise ``fn`` at ``Z`` (one vjp)."""
    value, pullback = jax.vjp(fn, Z)
    basis = jnp.eye(value.shape[1], dtype=value.dtype)
    grads = jax.vmap(lambda e: pullback(jnp.broadcast_to(e, value.shape))[0])(basis)
    return value, grads


def selected(predictor: Predictor, base, out_idx, row_output=None):
    """The model restricted to the chosen outputs, as a function of rows (m, c) -> (m, o);
    with ``row_output`` (m,) indices, row ``i``'s own output alone (m, 1)."""
    if row_output is not None:
        return lambda Z: jnp.take_along_axis(predictor.apply(base, Z), row_output[:, None], 1)
    columns = jnp.asarray(out_idx)
    return lambda Z: predictor.apply(base, Z)[:, columns]


def split_row_output(Z, per_row: bool):
    """A block's columns without the trailing output index, and the index (m,) int32 (None
    without per-row outputs)."""
    return (Z[:, :-1], Z[:, -1].astype(jnp.int32)) if per_row else (Z, None)


def _n_out(out_idx, per_row: bool) -> int:
    return 1 if per_row else len(out_idx)


def _pack(attributions, *columns):
    """(o, m, c) attributions and (m, o) columns -> (m, c*o + ...) outputs, compute dtype."""
    o, m, c = attributions.shape
    flat = jnp.transpose(attributions, (1, 2, 0)).reshape(m, c * o)
    return jnp.concatenate([flat, *columns], axis=1).astype(attributions.dtype)


def _row_keys(key_data, Z, c):
    """Each row's key: the method key folded with the row number (two trailing columns)."""
    rows = (Z[:, c].astype(jnp.int32) * _ROW_SPLIT + Z[:, c + 1].astype(jnp.int32))
    key = jax.random.wrap_key_data(key_data)
    return jax.vmap(lambda r: jax.random.fold_in(key, r))(rows)


def _noise_scale(stdev, c: int) -> np.ndarray:  # per column (c,), from a number or c of them
    fits = np.size(stdev) in (1, c) and np.ndim(stdev) <= 1
    sd = np.broadcast_to(np.asarray(stdev, np.float64), (c,)) if fits else None
    if sd is None or not np.all(np.isfinite(sd)) or np.any(sd < 0):
        raise ValueError(f"stdev must be a number >= 0 or an array of {c} of them; got "
                         f"{stdev!r:.60}.")
    return sd


def expected_draws(row_keys, n_samples: int, n_background: int):
    """Background indices (m, k) and interpolation points alpha ~ U(0, 1) (m, k) per row."""
    def one(key):
        k_index, k_alpha = jax.random.split(key)
        return (jax.random.randint(k_index, (n_samples,), 0, n_background),
                jax.random.uniform(k_alpha, (n_samples,)))

    return jax.vmap(one)(row_keys)


def _integrated_apply(predictor, out_idx, n_pairs, per_row, by_inputs=True):
    def make():
        def apply(params, Z):
            base, baselines, alphas, weights, which = params
            X, row_output = split_row_output(Z, per_row)
            fn = selected(predictor, base, out_idx, row_output)
            X = X.astype(baselines.dtype)

            def step(total, k):
                b = baselines[which[k]]
                delta = X - b
                _, g = gradients(fn, b + alphas[k] * delta)
                return total + weights[k] * (g * delta[None] if by_inputs else g), None

            o = _n_out(out_idx, per_row)
            total, _ = jax.lax.scan(step, jnp.zeros((o, *X.shape), X.dtype), jnp.arange(n_pairs))
            f_b = predictor.apply(base, baselines).mean(axis=0)  # (all outputs,)
            f_b = (f_b[row_output][:, None] if per_row
                   else jnp.broadcast_to(f_b[jnp.asarray(out_idx)], (X.shape[0], o)))
            return _pack(total, fn(X), f_b)

        return apply

    return stable_apply(("integrated-gradients", predictor.apply, tuple(out_idx), n_pairs,
                         per_row, by_inputs), make)


def _paired_apply(predictor, out_idx, c, n_steps, per_row, by_inputs=True):
    """Integrated gradients against per-row baselines: rows (m, 2c) hold x, then b."""
    def make():
        def apply(params, Z):
            base, alphas, weights = params
            Z, row_output = split_row_output(Z, per_row)
            fn = selected(predictor, base, out_idx, row_output)
            X, b = Z[:, :c].astype(alphas.dtype), Z[:, c:].astype(alphas.dtype)
            delta = X - b

            def step(total, k):
                _, g = gradients(fn, b + alphas[k] * delta)
                return total + weights[k] * g, None

            o = _n_out(out_idx, per_row)
            total, _ = jax.lax.scan(step, jnp.zeros((o, *X.shape), X.dtype), jnp.arange(n_steps))
            return _pack(total * delta[None] if by_inputs else total, fn(X), fn(b))

        return apply

    return stable_apply(("paired-integrated-gradients", predictor.apply, tuple(out_idx), c,
                         n_steps, per_row, by_inputs), make)


def _expected_apply(predictor, out_idx, c, n_samples, n_background, per_row, noisy=False):
    def make():
        def apply(params, Z):
            base, background, key_data = params[:3]
            Z, row_output = split_row_output(Z, per_row)
            fn = selected(predictor, base, out_idx, row_output)
            X = Z[:, :c].astype(background.dtype)
            keys = _row_keys(key_data, Z, c)
            index, alpha = expected_draws(keys, n_samples, n_background)
            if noisy:  # captum's GradientShap stdevs: x + e at each draw
                noise_keys = jax.vmap(lambda key: jax.random.split(
                    jax.random.fold_in(key, 1), n_samples))(keys)

            def step(carry, k):
                total, f_b = carry
                b = background[index[:, k]]  # (m, c): each row its own baseline
                x = X
                if noisy:
                    x = X + jax.vmap(lambda key: jax.random.normal(key, (c,), X.dtype))(
                        noise_keys[:, k]) * params[3]
                delta = x - b
                _, g = gradients(fn, b + alpha[:, k, None] * delta)
                return (total + g * delta[None], f_b + fn(b)), None

            o = _n_out(out_idx, per_row)
            init = (jnp.zeros((o, *X.shape), X.dtype), jnp.zeros((X.shape[0], o), X.dtype))
            (total, f_b), _ = jax.lax.scan(step, init, jnp.arange(n_samples))
            return _pack(total / n_samples, fn(X), f_b / n_samples)

        return apply

    key = ("expected-gradients", predictor.apply, tuple(out_idx), c, n_samples, n_background,
           per_row, noisy)
    return stable_apply(key, make)


def _smooth_apply(predictor, out_idx, c, n_samples, absolute, by_inputs, per_row,
                  nt_type="smoothgrad"):
    def make():
        def apply(params, Z):
            base, stdev, key_data = params
            Z, row_output = split_row_output(Z, per_row)
            fn = selected(predictor, base, out_idx, row_output)
            X = Z[:, :c].astype(stdev.dtype)
            keys = _row_keys(key_data, Z, c)
            noise_keys = jax.vmap(lambda key: jax.random.split(key, n_samples))(keys)

            def step(totals, k):
                noise = jax.vmap(lambda key: jax.random.normal(key, (c,), X.dtype))(
                    noise_keys[:, k]) * stdev  # (m, c)
                noisy = X + noise
                _, g = gradients(fn, noisy)
                g = jnp.abs(g) if absolute else g
                a = g * noisy[None] if by_inputs else g
                return (totals[0] + a, totals[1] + a * a), None

            o = _n_out(out_idx, per_row)
            zeros = jnp.zeros((o, *X.shape), X.dtype)
            (total, squares), _ = jax.lax.scan(step, (zeros, zeros), jnp.arange(n_samples))
            mean, mean_sq = total / n_samples, squares / n_samples
            reduced = {"smoothgrad": mean, "smoothgrad_sq": mean_sq,
                       "vargrad": mean_sq - mean * mean}[nt_type]
            return _pack(reduced, fn(X))

        return apply

    key = ("smoothgrad", predictor.apply, tuple(out_idx), c, n_samples, absolute, by_inputs,
           per_row, nt_type)
    return stable_apply(key, make)


def _local_apply(predictor, out_idx, kind, per_row):
    def make():
        def apply(params, Z):
            X, row_output = split_row_output(Z, per_row)
            fn = selected(predictor, params, out_idx, row_output)
            value, g = gradients(fn, X.astype(jnp.result_type(X, jnp.float32)))
            if kind == "abs":
                g = jnp.abs(g)
            elif kind == "input":
                g = g * X[None]
            return _pack(g, value)

        return apply

    return stable_apply(("local-gradient", predictor.apply, tuple(out_idx), kind, per_row),
                        make)


# ---------------------------------------------------------------------------------------------
# Public methods.
# ---------------------------------------------------------------------------------------------


@validate_params(n_steps=Int(1), method=Choice(*METHODS), paired_baselines=Flag(none=True),
                 multiply_by_inputs=Flag())
def integrated_gradients(
    model, X, *, baselines=None, n_steps: int = 50, method: str = "gausslegendre",
    paired_baselines: bool | None = None, multiply_by_inputs: bool = True, output=None,
    feature_names=None, groups=None,
    sample_weight=None, variables=None,
    memory_budget: int | None = None, progress: bool | None = None,
) -> Attributions:
    """Integrated gradients (Sundararajan et al. 2017):
    ``IG_j(x) = (x_j - b_j) * int_0^1 df/dx_j(b + alpha (x - b)) d alpha``.

    Parameters
    ----------
    model : JAX callable, Flax/Equinox module or jaximp.MLP
    X : array of shape (n, c) or DataFrame
        The rows to explain (continuous features).
    baselines : None, float, "mean", "median", array of shape (c,) or (b, c), default None
        None: zeros (captum's default); a number: that value in every column. ``"mean"``,
        ``"median"``: of X's columns, weighted by ``sample_weight``. Several baselines
        (b, c): each row's attributions are averaged over them (and ``f(baseline)`` is their
        mean prediction).
    paired_baselines : bool, optional
        True: baselines (n, c), row ``i``'s being row ``i`` (captum's reading of a tensor of
        the inputs' shape). False (default): every row against every baseline; unset with
        one baseline per row of X, it warns that captum pairs them.
    multiply_by_inputs : bool, default True
        False: the integrated gradient ``int_0^1 df/dx_j(b + alpha (x - b)) d alpha`` alone,
        without the factor ``x_j - b_j`` (captum's ``multiply_by_inputs=False``, its "local"
        attribution); completeness then does not hold and is not checked.
    n_steps : int, default 50
        Quadrature nodes per baseline (captum's default).
    method : {"gausslegendre", "riemann_trapezoid", "riemann_left", "riemann_right", \
"riemann_middle"}, default "gausslegendre"
        captum's approximations with its nodes and weights (:func:`quadrature`; captum's
        ``riemann_trapezoid`` weights sum to ``1 - 1/n_steps``).
    output : int, str, list or integer array of shape (n,), optional
        Model outputs to explain (default all). An integer array gives one output index per
        row (captum's ``target`` tensor, e.g. each row's predicted class): row ``i`` is
        explained for output ``output[i]`` alone, one gradient per step whatever the number
        of outputs; the result then has one output column, ``"output per row"``, and keeps
        the array as ``info["output_per_row"]`` (completeness and ``baseline_values`` follow
        each row's output).
    feature_names, groups, sample_weight, variables
        As in :func:`jaximp.permutation_importance`; a group's attribution is the sum of its
        columns'. Categorical features, integer columns and host models are refused.
    memory_budget, progress
        As in :func:`jaximp.permutation_importance`; the engine sizes the blocks of rows
        from the compiled gradient computation's memory.

    Returns
    -------
    Attributions
        ``info["completeness_gap"]``: the relative gap ``mean_i |sum_j IG_ij - (f(x_i) -
        f(b))| / mean_i |f(x_i) - f(b)|`` per output; a RuntimeWarning is raised when it
        exceeds 1% (raise ``n_steps``).

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> w = jnp.array([1.0, -2.0])
    >>> X = np.array([[1.0, 1.0], [2.0, 0.5]])
    >>> ig = integrated_gradients(lambda X: jnp.tanh(X @ w), X)
    >>> bool(np.allclose(ig.values.sum(axis=1)[:, 0], np.tanh(X @ np.array([1.0, -2.0])),
    ...                  atol=1e-5))
    True
    """
    dataset, predictor, out_idx, per_row, engine = attribution_setup(
        model, X, "integrated_gradients", output=output, feature_names=feature_names,
        groups=groups, sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress)
    base = resolve_baselines(baselines, dataset)
    alphas, weights = quadrature(method, n_steps)
    n, c = dataset.n_rows, dataset.n_columns
    o, by_row = _n_out(out_idx, per_row is not None), per_row is not None
    dtype = np.dtype(predictor.dtype)
    if paired_baselines is None and base.shape[0] == n > 1:
        warnings.warn(
            f"baselines has one row per row of X ({n}); each row is integrated against all "
            f"{n} of them, averaged, where captum pairs row i with baseline i. Pass "
            "paired_baselines=True for captum's pairing, or False for this average (and no "
            "warning).", UserWarning, stacklevel=user_stacklevel())
    if paired_baselines:
        if base.shape[0] != n:
            raise ValueError(f"paired_baselines=True needs baselines of shape ({n}, {c}), one "
                             f"per row of X; got {base.shape[0]} baseline row(s).")
        params = (predictor.params, alphas.astype(dtype), weights.astype(dtype))
        raw = run_derived(_paired_apply(predictor, out_idx, c, n_steps, by_row,
                                        multiply_by_inputs), params,
                          c * o + 2 * o, predictor, engine_rows(dataset, False, per_row, base),
                          Keep(), "integrated gradients", engine)[0]
    else:
        b = base.shape[0]
        # host arrays: the engine keeps them on the devices for an Explainer's repeats
        params = (predictor.params, np.asarray(base, dtype), np.tile(alphas, b).astype(dtype),
                  (np.tile(weights, b) / b).astype(dtype),
                  np.repeat(np.arange(b), n_steps).astype(np.int32))
        raw = run_derived(_integrated_apply(predictor, out_idx, b * n_steps, by_row,
                                            multiply_by_inputs), params,
                          c * o + 2 * o, predictor, engine_rows(dataset, False, per_row),
                          Keep(), "integrated gradients", engine)[0]
    result = build_attributions(raw, dataset, predictor, out_idx, "integrated_gradients",
                                {"n_steps": n_steps, "method": method, "baselines": base,
                                 "multiply_by_inputs": multiply_by_inputs},
                                with_baseline=True, per_row=per_row)
    if not multiply_by_inputs:  # gradients alone sum to no prediction difference
        del result.info["completeness_gap"]
        return result
    warn_incomplete(result, "Raise n_steps." if method == "gausslegendre" else
                    "Raise n_steps or use method='gausslegendre'.")
    return result


@validate_params(n_samples=Int(1))
def expected_gradients(
    model, X, background=None, *, n_samples: int = 200, stdev=0.0, random_state=0,
    output=None, feature_names=None, groups=None, sample_weight=None, variables=None,
    memory_budget: int | None = None, progress: bool | None = None,
) -> Attributions:
    """Expected gradients (Erion et al. 2021): integrated gradients averaged over baselines
    drawn from a background, ``E_{b ~ background, alpha ~ U(0, 1)}[(x - b) * grad f(b + alpha
    (x - b))]``, estimated with ``n_samples`` draws of ``(b, alpha)`` per row.

    Parameters
    ----------
    model : JAX callable, Flax/Equinox module or jaximp.MLP
    X : array of shape (n, c) or DataFrame
    background : array of shape (B, c) or (B, ...), DataFrame or Dataset, optional
        The rows (or examples of X's shape) baselines are drawn from, uniformly with
        replacement (default: X).
    n_samples : int, default 200
        Draws per row.
    stdev : float or array of shape (c,), default 0.0
        Gaussian noise added to the row at each draw, ``x + e``, ``e ~ N(0, stdev^2)``, as
        captum's ``GradientShap(stdevs=...)`` (0: none, the expected gradients of Erion et
        al.).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Row ``i``'s draws come from the key folded with ``i`` (:func:`expected_draws`), so
        they do not depend on the chunking or on the other rows; the noise from that key
        folded with 1, split into ``n_samples`` keys.
    output, feature_names, groups, sample_weight, variables, memory_budget, progress
        As in :func:`integrated_gradients`.

    Returns
    -------
    Attributions
        ``baseline_values``: each row's mean ``f(b)`` over its draws; completeness holds in
        expectation only, so ``info["completeness_gap"]`` is Monte-Carlo error (shrinking as
        ``1/sqrt(n_samples)``) and raises no warning.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> eg = expected_gradients(lambda X: X @ jnp.array([1.0, 2.0]), X, n_samples=10)
    >>> eg.values.shape
    (50, 2, 1)
    """
    dataset, predictor, out_idx, per_row, engine = attribution_setup(
        model, X, "expected_gradients", output=output, feature_names=feature_names,
        groups=groups, sample_weight=sample_weight, variables=variables,
        memory_budget=memory_budget, progress=progress)
    c = dataset.n_columns
    key = as_key(random_state)
    dtype = np.dtype(predictor.dtype)
    if isinstance(background, Dataset):  # an Explainer's data or background, on its device
        if background.n_columns != c:
            raise ValueError(f"background must have the {c} columns of X; got "
                             f"{background.n_columns}.")
        bg = _device_background(background, dtype)
    else:
        bg = (_device_background(dataset, dtype) if background is None
              else resolve_baselines(background, dataset, "background").astype(dtype))
    sd = _noise_scale(stdev, c)
    noisy = bool(np.any(sd > 0))
    params = (predictor.params, bg, jax.random.key_data(key)) + (
        (sd.astype(dtype),) if noisy else ())
    by_row = per_row is not None
    apply = _expected_apply(predictor, out_idx, c, n_samples, bg.shape[0], by_row, noisy)
    o = _n_out(out_idx, by_row)
    raw = run_derived(apply, params, c * o + 2 * o, predictor,
                      engine_rows(dataset, True, per_row), Keep(), "expected gradients",
                      engine)[0]
    return build_attributions(raw, dataset, predictor, out_idx, "expected_gradients",
                              {"n_samples": n_samples, "n_background": bg.shape[0],
                               "stdev": sd.copy()},
                              with_baseline=True, per_row=per_row)


_NOISE_TYPES = ("smoothgrad", "smoothgrad_sq", "vargrad")  # captum's NoiseTunnel nt_type


@validate_params(n_samples=Int(1), abs=Flag(), multiply_by_inputs=Flag(),
                 nt_type=Choice(*_NOISE_TYPES))
def smoothgrad(
    model, X, *, stdev=1.0, n_samples: int = 5, abs: bool = False,
    multiply_by_inputs: bool = False, nt_type: str = "smoothgrad", random_state=0,
    output=None, feature_names=None,
    groups=None, sample_weight=None, variables=None, memory_budget: int | None = None,
    progress: bool | None = None,
) -> Attributions:
    """SmoothGrad (Smilkov et al. 2017): the gradient averaged over Gaussian perturbations of
    each row, ``mean_k grad f(x + e_k)``, ``e_k ~ N(0, stdev^2)``.

    Parameters
    ----------
    stdev : float or array of shape (c,), default 1.0
        The noise's standard deviation in the data's units (absolute, as captum's
        ``NoiseTunnel(stdevs=...)``; Smilkov et al. state it as a fraction of the input's
        range: pass ``fraction * (X.max(0) - X.min(0))`` for theirs). Defaults as captum's.
    n_samples : int, default 5
        Noisy copies per row (captum's ``nt_samples``).
    abs : bool, default False
        Average ``|grad|`` (captum's ``NoiseTunnel(Saliency)`` with its default ``abs=True``).
    multiply_by_inputs : bool, default False
        Average ``(x + e_k) * grad f(x + e_k)`` (captum's ``NoiseTunnel(InputXGradient)``).
    nt_type : {"smoothgrad", "smoothgrad_sq", "vargrad"}, default "smoothgrad"
        What is taken over the noisy copies of each attribution ``a_k``, as captum's
        ``NoiseTunnel``: the mean, the mean of ``a_k^2`` (SmoothGrad-squared, Hooker et al.
        2019) or their variance ``mean(a_k^2) - mean(a_k)^2`` (VarGrad, Adebayo et al. 2018).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0
        Row ``i``'s noise comes from the key folded with ``i``.
    output, feature_names, groups, sample_weight, variables, memory_budget, progress
        As in :func:`integrated_gradients`.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> sg = smoothgrad(lambda X: X @ jnp.array([1.0, 2.0]), X, n_samples=3)
    >>> bool(np.allclose(sg.values[:, :, 0], [1.0, 2.0]))  # a linear model's gradient
    True
    """
    dataset, predictor, out_idx, per_row, engine = attribution_setup(
        model, X, "smoothgrad", output=output, feature_names=feature_names, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress)
    c = dataset.n_columns
    sd = _noise_scale(stdev, c)
    params = (predictor.params, sd.astype(predictor.dtype),
              jax.random.key_data(as_key(random_state)))
    by_row = per_row is not None
    apply = _smooth_apply(predictor, out_idx, c, n_samples, bool(abs), bool(multiply_by_inputs),
                          by_row, nt_type)
    o = _n_out(out_idx, by_row)
    raw = run_derived(apply, params, c * o + o, predictor, engine_rows(dataset, True, per_row),
                      Keep(), "smoothgrad", engine)[0]
    info = {"stdev": sd.copy(), "n_samples": n_samples, "abs": bool(abs),
            "multiply_by_inputs": bool(multiply_by_inputs), "nt_type": nt_type}
    return build_attributions(raw, dataset, predictor, out_idx, "smoothgrad", info,
                              with_baseline=False, per_row=per_row)


def _local(model, X, method, kind, output, feature_names, groups, sample_weight, variables,
           memory_budget, progress, info):
    dataset, predictor, out_idx, per_row, engine = attribution_setup(
        model, X, method, output=output, feature_names=feature_names, groups=groups,
        sample_weight=sample_weight, variables=variables, memory_budget=memory_budget,
        progress=progress)
    by_row = per_row is not None
    c, o = dataset.n_columns, _n_out(out_idx, by_row)
    raw = run_derived(_local_apply(predictor, out_idx, kind, by_row), predictor.params,
                      c * o + o, predictor, engine_rows(dataset, False, per_row), Keep(), method,
                      engine)[0]
    return build_attributions(raw, dataset, predictor, out_idx, method, info,
                              with_baseline=False, per_row=per_row)


@validate_params(abs=Flag())
def saliency(
    model, X, *, abs: bool = True, output=None, feature_names=None,
    groups=None, sample_weight=None, variables=None, memory_budget: int | None = None,
    progress: bool | None = None,
) -> Attributions:
    """Saliency (Simonyan et al. 2014): the gradient of the model at each row, in absolute
    value by default (captum's ``Saliency``, ``abs=True``).

    Parameters
    ----------
    abs : bool, default True
        ``|df/dx_j|`` (captum's default) or the signed gradient.
    output, feature_names, groups, sample_weight, variables, memory_budget, progress
        As in :func:`integrated_gradients`.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> s = saliency(lambda X: (X ** 2).sum(axis=1), np.array([[1.0, -2.0]]), abs=False)
    >>> s.values[0, :, 0].tolist()
    [2.0, -4.0]
    """
    kind = "abs" if abs else "plain"
    return _local(model, X, "saliency", kind, output, feature_names, groups, sample_weight,
                  variables, memory_budget, progress, {"abs": bool(abs)})


@validate_params()
def input_x_gradient(
    model, X, *, output=None, feature_names=None, groups=None, sample_weight=None,
    variables=None, memory_budget: int | None = None, progress: bool | None = None,
) -> Attributions:
    """Gradient x input (Shrikumar et al. 2016): ``x_j * df/dx_j`` at each row (captum's
    ``InputXGradient``); integrated gradients with a zero baseline and one step at
    ``alpha = 1``.

    Parameters
    ----------
    output, feature_names, groups, sample_weight, variables, memory_budget, progress
        As in :func:`integrated_gradients`.

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> a = input_x_gradient(lambda X: (X ** 2).sum(axis=1), np.array([[1.0, -2.0]]))
    >>> a.values[0, :, 0].tolist()
    [2.0, 8.0]
    """
    return _local(model, X, "input_x_gradient", "input", output, feature_names, groups,
                  sample_weight, variables, memory_budget, progress, {})


def expected_gradient_draws(n_rows: int, n_samples: int, n_background: int, random_state=0):
    """The background indices (n, k) and interpolation points (n, k) that
    :func:`expected_gradients` draws for rows ``0..n_rows-1`` with the same arguments."""
    key = as_key(random_state)
    rows = np.arange(n_rows)
    Z = jnp.asarray(np.column_stack([np.zeros(n_rows), rows // _ROW_SPLIT, rows % _ROW_SPLIT]),
                    jnp.float32)
    index, alpha = expected_draws(_row_keys(jax.random.key_data(key), Z, 1), n_samples,
                                  n_background)
    return np.asarray(index), np.asarray(alpha)

