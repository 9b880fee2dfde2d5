"""A small multilayer perceptron trained with Optax, used by the demo, LOCO and the notebooks.

Parameters are a plain pytree (a list of ``{"kernel", "bias"}`` dicts), so that many fits
(e.g. the p refits of LOCO) can be run as one ``vmap``-ped training job. A fitted :class:`MLP`
is itself a pytree (its arrays are the leaves, the activation is static), so that adapters pass
its arrays to compiled code as arguments and fits of one architecture share compilations.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..data import Choice, Int, Real, as_key, validate_params

__all__ = ["MLP", "fit_mlp", "fit_mlp_options", "init_mlp_params", "mlp_forward",
           "standardization", "train_mlp_params"]


def init_mlp_params(key: jax.Array, sizes: Sequence[int]) -> list[dict]:
    """LeCun-normal kernels and zero biases for layer sizes ``[c, h1, ..., o]``."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        kernel = jax.random.normal(sub, (fan_in, fan_out)) / jnp.sqrt(fan_in)
        params.append({"kernel": kernel, "bias": jnp.zeros(fan_out)})
    return params


ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid}


def mlp_forward(params: list[dict], x: jax.Array, activation: str = "relu") -> jax.Array:
    """MLP on standardized inputs with hidden ``activation`` and a linear output: (n, c) -> (n, o)."""
    act = ACTIVATIONS[activation]
    for layer in params[:-1]:
        x = act(x @ layer["kernel"] + layer["bias"])
    return x @ params[-1]["kernel"] + params[-1]["bias"]


def train_mlp_params(params, x, y, input_mask, key, *, steps, learning_rate, weight_decay,
                     batch_size, activation="relu", l2=0.0):
    """Pure training loop (``lax.scan`` of AdamW steps); vmap-able over masks, keys, data.

    ``x`` and ``y`` are standardized; a 0 in ``input_mask`` (c,) drops that input exactly as if
    it were absent. The mask is applied to the rows of the first kernel rather than to ``x``
    (the same products), so that under ``vmap`` over masks ``x`` stays unbatched and the first
    layer of all fits, forward and backward, is one matrix product. ``l2`` adds ``l2 * sum(w ** 2) / n`` over all weights
    and biases to the mean squared error: R nnet's ``decay`` on the sum of squares.
    """
    optimizer = optax.adamw(learning_rate, weight_decay=weight_decay)
    n = x.shape[0]
    def loss_fn(p, xb, yb):
        first = {**p[0], "kernel": p[0]["kernel"] * input_mask[:, None]}
        mse = jnp.mean((mlp_forward([first, *p[1:]], xb, activation) - yb) ** 2)
        if l2:
            squares = sum(jnp.sum(leaf**2) for leaf in jax.tree_util.tree_leaves(p))
            mse = mse + l2 * squares / n
        return mse

    def step(carry, step_key):
        p, state = carry
        if batch_size is None or batch_size >= n:
            xb, yb = x, y
        else:
            idx = jax.random.choice(step_key, n, (batch_size,), replace=False)
            xb, yb = x[idx], y[idx]
        loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)
        updates, state = optimizer.update(grads, state, p)
        return (optax.apply_updates(p, updates), state), loss

    (params, _), losses = jax.lax.scan(
        step, (params, optimizer.init(params)), jax.random.split(key, steps)
    )
    return params, losses


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True, eq=False)
class MLP:
    """A fitted MLP: ``model(X)`` predicts on raw (unstandardized) inputs.

    A JAX pytree: the arrays below are its leaves and ``activation`` is static, so MLPs can be
    passed through ``jax.jit``, stacked with ``jax.tree_util.tree_map`` and ``vmap``-ped, and two
    MLPs of the same architecture share one compiled evaluation.

    Attributes
    ----------
    params : list of dict
        ``{"kernel": (fan_in, fan_out), "bias": (fan_out,)}`` per layer, on standardized data.
    x_mean, x_scale, y_mean, y_scale : arrays
        Standardization of inputs and targets, folded into :meth:`__call__`.
    input_mask : array of shape (c,)
        1 for used inputs, 0 for dropped ones (LOCO refits).
    losses : array of shape (steps,)
        Training loss per step (standardized scale).
    activation : {"relu", "tanh", "sigmoid"}
        Hidden-layer activation.
    """

    params: list
    x_mean: jax.Array
    x_scale: jax.Array
    y_mean: jax.Array
    y_scale: jax.Array
    input_mask: jax.Array
    losses: jax.Array
    # static: part of the tree structure, so a different activation is a different program
    activation: str = dataclasses.field(default="relu", metadata={"static": True})

    def __call__(self, X) -> jax.Array:
        if np.ndim(X) != 2 or np.shape(X)[1] != self.x_mean.shape[-1]:
            raise ValueError(f"the MLP takes rows of {self.x_mean.shape[-1]} columns, shape (n, "
                             f"{self.x_mean.shape[-1]}); got shape {np.shape(X)}.")
        z = (jnp.asarray(X, jnp.float32) - self.x_mean) / self.x_scale * self.input_mask
        out = mlp_forward(self.params, z, self.activation) * self.y_scale + self.y_mean
        return out[:, 0] if out.shape[1] == 1 else out

    def weights(self) -> list[tuple[jax.Array, jax.Array]]:
        """``[(W, b), ...]`` per layer, W of shape (fan_in, fan_out)."""
        return [(layer["kernel"], layer["bias"]) for layer in self.params]


@validate_params(steps=Int(1), learning_rate=Real(0, closed="neither"), weight_decay=Real(0),
                 l2=Real(0), activation=Choice(*ACTIVATIONS), batch_size=Int(1, none=True))
def fit_mlp(
    X,
    y,
    *,
    hidden: Sequence[int] = (64, 64),
    steps: int = 2000,
    learning_rate: float = 1e-2,
    weight_decay: float = 0.0,
    l2: float = 0.0,
    activation: str = "relu",
    batch_size: int | None = None,
    input_mask=None,
    random_state: int | jax.Array = 0,
) -> MLP:
    """Fit an MLP regressor with AdamW on standardized data.

    Parameters
    ----------
    X : array of shape (n, c) or DataFrame
    y : array of shape (n,) or (n, o)
    hidden : sequence of int, default (64, 64)
        Hidden layer widths.
    steps : int, default 2000
        Optimizer steps (full batch unless ``batch_size`` is set).
    learning_rate : float, default 1e-2
        AdamW step size (> 0).
    weight_decay : float, default 0.0
        Decoupled (AdamW) weight decay (>= 0).
    l2 : float, default 0.0
        Penalty ``l2 * sum(w ** 2)`` on the sum-of-squares scale, as R nnet's ``decay``.
    activation : {"relu", "tanh", "sigmoid"}, default "relu"
        Hidden-layer activation (nnet uses "sigmoid").
    batch_size : int, optional
        Minibatch size; default full batch.
    input_mask : array of shape (c,), optional
        0 drops an input (it is multiplied by 0 before the first layer).
    random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, default 0

    Returns
    -------
    MLP

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(64, 2))
    >>> model = fit_mlp(X, X[:, 0] - X[:, 1], hidden=(8,), steps=300)
    >>> float(np.mean((np.asarray(model(X)) - (X[:, 0] - X[:, 1])) ** 2)) < 0.05
    True
    """
    x = np.asarray(X, dtype=np.float32)
    target = np.asarray(y, dtype=np.float32)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"X must be a finite 2-D array; got shape {x.shape}.")
    n, c = x.shape
    if target.ndim not in (1, 2) or target.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) or ({n}, outputs), a row per row of X; got "
                         f"shape {target.shape}.")
    if not np.all(np.isfinite(target)):
        raise ValueError(f"y holds {int((~np.isfinite(target)).sum())} NaN or infinite values; "
                         "fit_mlp needs finite targets (drop or impute those rows).")
    target = target.reshape(n, -1)
    if input_mask is not None and np.shape(input_mask) != (c,):
        raise ValueError(f"input_mask must hold one value per column of X, shape ({c},); got "
                         f"shape {np.shape(input_mask)}.")
    _check_hidden(hidden)
    key = as_key(random_state)
    init_key, train_key = jax.random.split(key)
    x_mean, x_scale, varies = standardization(x)
    y_mean, y_scale, _ = standardization(target)
    mask = np.ones(x.shape[1], np.float32) if input_mask is None else np.asarray(
        input_mask, np.float32)
    mask = mask * varies
    sizes = [x.shape[1], *[int(h) for h in hidden], target.shape[1]]
    params = init_mlp_params(init_key, sizes)
    train = jax.jit(
        train_mlp_params,
        static_argnames=("steps", "learning_rate", "weight_decay", "batch_size", "activation",
                         "l2"),
    )
    params, losses = train(
        params, (x - x_mean) / x_scale, (target - y_mean) / y_scale, mask, train_key,
        steps=int(steps), learning_rate=float(learning_rate),
        weight_decay=float(weight_decay), batch_size=batch_size, activation=activation,
        l2=float(l2),
    )
    return MLP(params, jnp.asarray(x_mean), jnp.asarray(x_scale), jnp.asarray(y_mean),
               jnp.asarray(y_scale), jnp.asarray(mask), losses, activation)


def standardization(x: np.ndarray, axis: int = 0):
    """Means and scales over ``axis`` of the columns of ``x``, and which columns vary (1.0)
    or not (0.0). A constant column gets scale 1, as scikit-learn's ``StandardScaler`` gives
    it (``std + 1e-8`` made any other value of it huge), and the fits drop it through their
    input mask: a column the data does not vary carries no information, and its untrained
    first-layer weights would otherwise show in weight-based importances."""
    varies = np.ptp(x, axis=axis) > 0  # not std > 0: float32's mean of 0.1s is not 0.1
    return (x.mean(axis), np.where(varies, x.std(axis) + 1e-8, 1.0).astype(np.float32),
            varies.astype(np.float32))


#: Arguments of :func:`fit_mlp` that a batched refit supplies itself.
_FIT_SUPPLIED = ("X", "y", "input_mask", "random_state")


def fit_mlp_options(fit, name: str, caller: str) -> dict | None:
    """All of :func:`fit_mlp`'s options when ``fit`` is it or a keyword partial of it (so
    ``caller`` can train its refits as one vmapped job), else None. ``name`` is the parameter
    that passed ``fit``, for the messages."""
    if fit is fit_mlp:
        options: dict = {}
    elif isinstance(fit, functools.partial) and fit.func is fit_mlp and not fit.args:
        options = dict(fit.keywords)
    else:
        return None
    clash = sorted(set(options) & set(_FIT_SUPPLIED))
    if clash:
        raise ValueError(
            f"{name}=partial(fit_mlp, ...) must not set {clash}: {caller} supplies the data, "
            "the input masks and the keys; pass the seed as random_state=... instead."
        )
    parameters = inspect.signature(fit_mlp).parameters
    defaults = {k: v.default for k, v in parameters.items() if k not in _FIT_SUPPLIED}
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(f"fit_mlp has no parameters {unknown}; got them in {name}=partial(...).")
    for option, rule in fit_mlp.__jaximp_params__.items():  # fit_mlp's own table, as a call
        if option in options:
            rule.check(option, options[option])
    options = {**defaults, **options}
    _check_hidden(options["hidden"])
    return options


def _check_hidden(hidden) -> None:
    if not isinstance(hidden, (list, tuple)) or any(
            isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 1 for h in hidden):
        raise ValueError(f"hidden must be a sequence of positive ints (one width per hidden "
                         f"layer), e.g. (64, 64); got {hidden!r}.")
