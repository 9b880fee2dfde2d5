"""Connection-weight importance of dense neural networks: Garson, Olden and Gedeon.

These methods read a trained network's weight matrices and never evaluate the model. The
functions here find the dense layers of a Flax (nnx or linen) or Equinox model, of a plain list
of matrices, or of R's NeuralNetTools weight vector, validate them, run the pure kernels of
:mod:`jaximp.kernels._weights` under ``jax.jit`` and return :class:`FeatureImportance` results.

References
----------
Garson, G. D. (1991). Interpreting neural-network connection weights. AI Expert 6(4), 46-51.
Goh, A. T. C. (1995). Back-propagation neural networks for modeling complex systems.
Artificial Intelligence in Engineering 9(3), 143-151.
Olden, J. D., Joy, M. K. & Death, R. G. (2004). An accurate comparison of methods for quantifying
variable importance in artificial neural networks using simulated data. Ecological Modelling
178(3), 389-397.
Gedeon, T. D. (1997). Data mining of inputs: analysing magnitude and functional measures.
International Journal of Neural Systems 8(2), 209-218.
Beck, M. W. (2018). NeuralNetTools: Visualization and analysis tools for neural networks.
Journal of Statistical Software 85(11).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaximp.kernels._weights import garson as _garson_kernel
from jaximp.kernels._weights import gedeon_shares as _gedeon_shares_kernel
from jaximp.kernels._weights import olden as _olden_kernel

from ..data import Choice, validate_params
from ..models import MLP
from ..results import FeatureImportance, WeightDetails

__all__ = [
    "NeuralNetToolsWeights",
    "extract_weights",
    "from_neuralnettools",
    "garson_importance",
    "gedeon_importance",
    "olden_importance",
]

def _in_float64(kernel):
    """``kernel`` jitted and run in float64 on the weights (whatever the process's mode): the
    products are small, and R's NeuralNetTools computes in double precision (float32 put
    Olden's values 7e-6 off, relatively, on random networks)."""
    jitted = jax.jit(kernel)

    def run(weights):
        with jax.enable_x64(True):
            return np.asarray(jitted(tuple(jnp.asarray(w, jnp.float64) for w in weights)))

    return run


_garson_float64 = _in_float64(_garson_kernel)
_olden_float64 = _in_float64(_olden_kernel)
_gedeon_shares_float64 = _in_float64(_gedeon_shares_kernel)

_MODEL_KINDS = (
    "a Flax nnx Module, a (linen module, variables) tuple, a linen params dict, an Equinox "
    "module, a list of (W, b) tuples, W matrices or {'kernel', 'bias'} dicts, a jaximp.MLP, "
    "or NeuralNetToolsWeights"
)

Layer = tuple[Any, Any]  # (W of shape (fan_in, fan_out), b of shape (fan_out,) or None)


# --------------------------------------------------------------------------------------------
# NeuralNetTools' flat weight vector
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NeuralNetToolsWeights:
    """A network given as R NeuralNetTools' weight vector and layer sizes.

    Pass it as ``model`` to any function of this module; :func:`from_neuralnettools` turns the
    same two arguments into a list of ``(W, b)`` matrices.

    Attributes
    ----------
    weights : sequence of float
        All weights, node by node: each hidden node of the first hidden layer, then of the next
        layer, ..., then each output node; every node's bias first, then its incoming weights
        (``hidden 1 1: b, x1, ..., xp; hidden 1 2: b, x1, ...; out 1: b, h1, ..., hH``).
    struct : sequence of int
        Layer sizes from inputs to outputs, e.g. ``(2, 2, 1)``, as NeuralNetTools' ``struct``.
    """

    weights: Sequence[float]
    struct: Sequence[int]


@validate_params()
def from_neuralnettools(weights: Sequence[float], struct: Sequence[int]) -> list[Layer]:
    """Read R NeuralNetTools' weight vector into ``(W, b)`` pairs, ``W`` as (fan_in, fan_out).

    Parameters
    ----------
    weights : sequence of float, length ``sum((struct[l] + 1) * struct[l + 1])``
        All weights node by node, each node's bias first, then its incoming weights in the
        order of the previous layer's units (the ``wts_in`` of ``NeuralNetTools::garson``).
    struct : sequence of int
        Layer sizes from inputs to outputs, at least two entries, e.g. ``(2, 2, 1)``.

    Returns
    -------
    list of (ndarray, ndarray)
        One ``(W, b)`` pair per layer, float64, ``W`` of shape (fan_in, fan_out).

    Examples
    --------
    >>> layers = from_neuralnettools(
    ...     [13.12, 1.49, 0.16, -0.11, -0.19, -0.16, 0.56, -0.52, 0.81], struct=(2, 2, 1))
    >>> layers[0][0]
    array([[ 1.49, -0.19],
           [ 0.16, -0.16]])
    >>> layers[0][1]
    array([13.12, -0.11])
    """
    sizes = _check_struct(struct)
    flat = np.asarray(weights, dtype=np.float64)
    if flat.ndim != 1:
        raise ValueError(
            f"weights must be a 1-D vector of NeuralNetTools weights; got shape {flat.shape}."
        )
    needed = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    if flat.size != needed:
        terms = " + ".join(f"({a}+1)*{b}" for a, b in zip(sizes[:-1], sizes[1:]))
        raise ValueError(
            f"weights must have {needed} values for struct {sizes} ({terms}, a bias and the "
            f"incoming weights of every node); got {flat.size}."
        )
    layers = []
    start = 0
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        stop = start + (fan_in + 1) * fan_out
        block = flat[start:stop].reshape(fan_out, fan_in + 1)  # one row per node: b, w_1..w_in
        layers.append((np.ascontiguousarray(block[:, 1:].T), block[:, 0].copy()))
        start = stop
    return layers


def _check_struct(struct: Any) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in struct)
        exact = all(float(s) == int(s) for s in struct)
    except (TypeError, ValueError):
        raise ValueError(
            f"struct must be a sequence of layer sizes such as (2, 2, 1); got {struct!r}."
        ) from None
    if len(sizes) < 2 or not exact or min(sizes) < 1:
        raise ValueError(
            "struct must list at least two positive integer layer sizes, inputs first and "
            f"outputs last, such as (2, 2, 1); got {struct!r}."
        )
    return sizes


# --------------------------------------------------------------------------------------------
# Weight extraction
# --------------------------------------------------------------------------------------------


@validate_params()
def extract_weights(model: Any) -> list[Layer]:
    """The dense layers of a network as ``(W, b)`` pairs in forward order, ``W`` (fan_in, fan_out).

    Parameters
    ----------
    model : network
        One of:

        - a Flax ``nnx.Module``: its ``nnx.Linear`` layers in attribute order (the order the
          attributes were assigned in ``__init__``), looking inside sub-modules, ``nnx.List``,
          ``nnx.Dict``, ``nnx.Sequential`` and plain lists, tuples and dicts;
        - a Flax linen ``(module, variables)`` tuple, or a linen variables or params dict: every
          sub-dict holding a 2-D ``kernel`` is a dense layer, read in insertion order, with
          auto-named siblings put in numeric order (``Dense_2`` before ``Dense_10``);
        - an Equinox module such as ``eqx.nn.MLP``: its ``eqx.nn.Linear`` layers in field order
          (Equinox stores ``weight`` as (out, in); it is transposed here, and a stacked
          ``MLP(..., scan=True)`` is unstacked);
        - a list of ``(W, b)`` tuples (``b`` may be ``None``) or of plain ``W`` matrices, each of
          shape (fan_in, fan_out) so that a layer computes ``x @ W + b``;
        - a list of linen-style ``{"kernel": W, "bias": b}`` dicts;
        - a fitted :class:`jaximp.MLP` (its weights act on standardized inputs; an input dropped
          by its ``input_mask`` gets zero weights);
        - :class:`NeuralNetToolsWeights`.

        Only dense layers are read: normalization, dropout and activations are skipped, and a
        layer object that appears twice is read once.

    Returns
    -------
    list of (Array, Array or None)
        ``W`` of shape (fan_in, fan_out) and ``b`` of shape (fan_out,) or ``None``; the shapes
        chain from the ``p`` inputs to the ``o`` outputs.

    Raises
    ------
    TypeError
        If ``model`` is none of the kinds above.
    ValueError
        If no dense layer is found, a matrix is not 2-D, a bias does not match, the shapes do
        not chain, or a weight is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> layers = extract_weights([np.ones((3, 4)), (np.ones((4, 2)), np.zeros(2))])
    >>> [(w.shape, None if b is None else b.shape) for w, b in layers]
    [((3, 4), None), ((4, 2), (2,))]
    """
    if isinstance(model, MLP):
        layers = list(model.weights())
        w, b = layers[0]  # an input dropped by input_mask (LOCO refits) has no weights
        layers[0] = (jnp.asarray(w) * jnp.asarray(model.input_mask)[:, None], b)
        raw = [(w, b, f"layer {i}") for i, (w, b) in enumerate(layers)]
        return _validated(raw, "weights", _MATRIX_HINT)
    if isinstance(model, NeuralNetToolsWeights):
        raw = [(w, b, f"layer {i}") for i, (w, b) in enumerate(
            from_neuralnettools(model.weights, model.struct))]
        return _validated(raw, "weights", _MATRIX_HINT)
    linen = sys.modules.get("flax.linen")
    if (
        linen is not None
        and isinstance(model, tuple)
        and len(model) == 2
        and isinstance(model[0], linen.Module)
    ):
        return _from_linen(model[1])
    if isinstance(model, Mapping) and not _is_module(model):  # nnx.Dict is a module
        return _from_linen(model)
    if isinstance(model, (list, tuple)) and not _has_modules(model):
        return _from_list(model)
    if _is_module(model) or isinstance(model, (list, tuple)):
        found: list[tuple[Any, Any, str]] = []
        _walk(model, "model", found, set())
        if not found:
            raise ValueError(
                f"model has no dense layers: found no nnx.Linear or eqx.nn.Linear inside "
                f"{type(model).__name__}. Pass a list of (W, b) matrices instead."
            )
        hint = (
            "the layers were read in attribute order; pass extract_weights-style "
            "[(W, b), ...] in forward order if the model applies them in another order."
        )
        return _validated(found, "the dense layers of model", hint)
    raise TypeError(f"model must be {_MODEL_KINDS}; got {type(model).__name__}.")


_MATRIX_HINT = (
    "pass matrices in (fan_in, fan_out) orientation (x @ W), in forward order; transpose "
    "(out, in) matrices such as PyTorch's."
)


def _is_module(obj: Any) -> bool:
    nnx = sys.modules.get("flax.nnx")
    eqx = sys.modules.get("equinox")
    return (nnx is not None and isinstance(obj, nnx.Module)) or (
        eqx is not None and isinstance(obj, eqx.Module)
    )


def _has_modules(items: Sequence[Any]) -> bool:
    return any(_is_module(item) for item in items)


def _from_list(items: Sequence[Any]) -> list[Layer]:
    if len(items) == 0:
        raise ValueError(
            "weights must be a non-empty list of (W, b) tuples or W matrices; got an empty list."
        )
    raw = []
    for index, item in enumerate(items):
        if isinstance(item, Mapping) and "kernel" in item:
            w, b = item["kernel"], item.get("bias")
        elif (
            isinstance(item, (tuple, list))
            and len(item) == 2
            and (item[1] is None or np.ndim(item[0]) == 2)
        ):
            w, b = item
        else:
            w, b = item, None
        raw.append((w, b, f"layer {index}"))
    return _validated(raw, "weights", _MATRIX_HINT)


def _walk(obj: Any, path: str, found: list, seen: set) -> None:
    """Depth-first search for dense layers in attribute / field / element order."""
    if id(obj) in seen:
        return
    nnx = sys.modules.get("flax.nnx")
    eqx = sys.modules.get("equinox")
    if nnx is not None and isinstance(obj, nnx.Linear):
        seen.add(id(obj))
        found.append((_variable(obj.kernel), _variable(obj.bias), path))
        return
    if eqx is not None and isinstance(obj, eqx.nn.Linear):
        seen.add(id(obj))
        w, b = obj.weight, obj.bias
        if jnp.ndim(w) == 3:  # eqx.nn.MLP(scan=True) stacks its hidden layers
            for k in range(w.shape[0]):
                found.append((w[k].T, None if b is None else b[k], f"{path}[{k}]"))
        else:
            found.append((jnp.transpose(w) if jnp.ndim(w) == 2 else w, b, path))
        return
    if nnx is not None and isinstance(obj, nnx.Module):
        seen.add(id(obj))
        if isinstance(obj, Mapping):
            children = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
        elif isinstance(obj, Sequence):
            children = [(f"{path}[{k}]", v) for k, v in enumerate(obj)]
        else:
            children = [
                (f"{path}.{k}", v) for k, v in vars(obj).items() if not k.startswith("_pytree__")
            ]
    elif eqx is not None and isinstance(obj, eqx.Module):
        seen.add(id(obj))
        children = [
            (f"{path}.{f.name}", getattr(obj, f.name, None)) for f in dataclasses.fields(obj)
        ]
    elif isinstance(obj, (list, tuple)):
        children = [(f"{path}[{k}]", v) for k, v in enumerate(obj)]
    elif isinstance(obj, Mapping):
        children = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    else:
        return
    for child_path, child in children:
        _walk(child, child_path, found, seen)


def _variable(var: Any) -> Any:
    """The array inside an nnx Variable (``None`` stays ``None``)."""
    if var is None:
        return None
    if hasattr(var, "get_value"):
        return var.get_value()
    return var.value


_AUTO_NAME = re.compile(r"^(.*)_(\d+)$")


def _ordered_keys(mapping: Mapping) -> list:
    """Insertion order, except that auto-named siblings (``Dense_0``, ``Dense_1``, ...) are put
    in numeric order within the slots they occupy (undoes alphabetical sorting of ``Dense_10``)."""
    keys = list(mapping.keys())
    by_prefix: dict[str, list[int]] = {}
    for position, key in enumerate(keys):
        match = _AUTO_NAME.match(key) if isinstance(key, str) else None
        if match:
            by_prefix.setdefault(match.group(1), []).append(position)
    ordered = list(keys)
    for positions in by_prefix.values():
        members = sorted((keys[p] for p in positions), key=lambda k: int(_AUTO_NAME.match(k)[2]))
        for position, key in zip(positions, members):
            ordered[position] = key
    return ordered


def _from_linen(variables: Mapping) -> list[Layer]:
    if not isinstance(variables, Mapping):
        raise TypeError(
            "model as a (linen module, variables) tuple needs the variables dict returned by "
            f"module.init(...); got {type(variables).__name__}."
        )
    params = variables.get("params", variables)
    found: list[tuple[Any, Any, str]] = []

    def walk(node: Mapping, path: str) -> None:
        kernel = node.get("kernel")
        if kernel is not None and not isinstance(kernel, Mapping):
            found.append((kernel, node.get("bias"), path))
            return
        for key in _ordered_keys(node):
            value = node[key]
            if isinstance(value, Mapping):
                walk(value, f"{path}/{key}" if path else str(key))

    walk(params, "")
    if not found:
        raise ValueError(
            "model has no dense layers: the linen params hold no sub-dict with a 'kernel' "
            f"(top-level keys: {list(params.keys())}). Pass a list of (W, b) matrices instead."
        )
    hint = (
        "the layers were read in the order Dense_0, Dense_1, ...; pass extract_weights-style "
        "[(W, b), ...] in forward order if the model applies them in another order."
    )
    return _validated(found, "the dense layers of model", hint)


def _validated(raw: list[tuple[Any, Any, str]], subject: str, hint: str) -> list[Layer]:
    """Check 2-D matrices, matching biases, chaining shapes and finite values; the layers as
    NumPy arrays in their own floating dtype (a float64 source keeps its precision)."""
    layers: list[Layer] = []
    for index, (w, b, name) in enumerate(raw):
        w = np.asarray(w)
        if not np.issubdtype(w.dtype, np.floating):
            w = w.astype(np.float64)
        label = f"layer {index}" if name == f"layer {index}" else f"layer {index} ({name})"
        if w.ndim != 2:
            raise ValueError(
                f"{subject} must be 2-D matrices (fan_in, fan_out); {label} has shape "
                f"{tuple(w.shape)}. {hint[0].upper()}{hint[1:]}"
            )
        if index:
            previous = layers[-1][0].shape[1]
            if w.shape[0] != previous:
                listing = ""
                if subject != "weights":
                    shapes = ", ".join(f"{n}: {tuple(np.shape(m))}" for m, _, n in raw)
                    listing = f" Found, in order: {shapes}."
                requirement = (
                    "must be a list of 2-D matrices whose shapes chain"
                    if subject == "weights"
                    else "must chain"
                )
                raise ValueError(
                    f"{subject} {requirement} (fan_in, fan_out); {label} has shape "
                    f"{tuple(w.shape)} but layer {index - 1} outputs {previous} units.{listing} "
                    f"{hint[0].upper()}{hint[1:]}"
                )
        if not np.all(np.isfinite(w)):
            bad = int(np.sum(~np.isfinite(w)))
            raise ValueError(
                f"{subject} must be finite; {label} has {bad} NaN or infinite "
                f"entr{'y' if bad == 1 else 'ies'}."
            )
        if b is not None:
            b = np.asarray(b)
            if b.shape != (w.shape[1],):
                raise ValueError(
                    f"the bias of {label} must have shape ({w.shape[1]},) to match its weight "
                    f"matrix {tuple(w.shape)}; got {tuple(b.shape)}."
                )
        layers.append((w, b))
    return layers


# --------------------------------------------------------------------------------------------
# Names and groups
# --------------------------------------------------------------------------------------------


def _names(names: Any, count: int, parameter: str, default_prefix: str) -> tuple[str, ...]:
    if names is None:
        return tuple(f"{default_prefix}{i}" for i in range(count))
    if isinstance(names, str):
        names = [names]
    names = tuple(str(n) for n in names)
    if len(names) != count:
        unit = "input" if parameter == "feature_names" else "output"
        raise ValueError(
            f"{parameter} must have one name per {unit} of the network ({count}); "
            f"got {len(names)}."
        )
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"{parameter} must be unique; got duplicates {duplicates}.")
    return names


def _group_matrix(
    groups: Mapping[str, Sequence[str | int]] | None, feature_names: tuple[str, ...]
) -> tuple[tuple[str, ...], np.ndarray | None, dict[str, tuple[str, ...]]]:
    """Indicator matrix (p, g) that sums grouped inputs; a group sits where its first member is."""
    if groups is None:
        return feature_names, None, {}
    if not isinstance(groups, Mapping):
        raise TypeError(
            "groups must be a dict mapping a group name to a list of feature names or column "
            f"indices, such as {{'color': ['c_red', 'c_blue']}}; got {type(groups).__name__}."
        )
    p = len(feature_names)
    owner: dict[int, str] = {}
    members_by_group: dict[str, tuple[str, ...]] = {}
    for group, members in groups.items():
        group = str(group)
        if isinstance(members, (str, int, np.integer)):
            members = [members]
        if len(members) == 0:
            raise ValueError(f"groups[{group!r}] must list at least one feature; got none.")
        columns = []
        for member in members:
            if isinstance(member, (int, np.integer)) and not isinstance(member, bool):
                if not -p <= member < p:
                    raise ValueError(
                        f"groups[{group!r}] refers to column {member}, but the network has "
                        f"{p} inputs (valid indices 0 to {p - 1})."
                    )
                column = int(member) % p
            elif member in feature_names:
                column = feature_names.index(member)
            else:
                raise ValueError(
                    f"groups[{group!r}] refers to unknown feature {member!r}; feature_names "
                    f"are {list(feature_names)}."
                )
            if column in owner:
                raise ValueError(
                    f"feature {feature_names[column]!r} is in groups {owner[column]!r} and "
                    f"{group!r}; each input may belong to one group only."
                )
            owner[column] = group
            columns.append(column)
        members_by_group[group] = tuple(feature_names[c] for c in columns)
    names: list[str] = []
    rows: list[list[int]] = []
    for column, name in enumerate(feature_names):
        if column in owner:
            group = owner[column]
            if group in names:
                continue
            names.append(group)
            rows.append([c for c in range(p) if owner.get(c) == group])
        else:
            if name in groups:
                raise ValueError(
                    f"groups name {name!r} is also the name of an ungrouped feature; choose "
                    "another group name."
                )
            names.append(name)
            rows.append([column])
    matrix = np.zeros((p, len(names)))
    for g, columns in enumerate(rows):
        matrix[columns, g] = 1.0
    return tuple(names), matrix, members_by_group


def _result(
    method: str,
    values: jax.Array,
    feature_names: tuple[str, ...],
    output_names: tuple[str, ...],
    groups: Mapping | None,
    info: dict[str, Any],
) -> FeatureImportance:
    """The importance result, with ``groups`` (name -> member columns) summed."""
    values = np.asarray(values, dtype=np.float64)
    names, matrix, members = _group_matrix(groups, feature_names)
    if matrix is not None:
        values = matrix.T @ values
        info = {**info, "groups": members}
    info = WeightDetails(**info)
    return FeatureImportance(
        method=method,
        feature_names=names,
        output_names=output_names,
        importances_mean=values,
        info=info,
    )


def _prepare(model: Any, feature_names: Any, output_names: Any, method: str, minimum: int):
    layers = extract_weights(model)
    if len(layers) < minimum:
        raise ValueError(
            f"{method} needs a network with at least one hidden layer (two weight matrices); "
            f"model has {len(layers)} weight matrix."
        )
    weights = tuple(w for w, _ in layers)
    sizes = (weights[0].shape[0], *(w.shape[1] for w in weights))
    features = _names(feature_names, sizes[0], "feature_names", "x")
    if output_names is None and sizes[-1] == 1:
        output_names = ("y",)
    outputs = _names(output_names, sizes[-1], "output_names", "y")
    return weights, sizes, features, outputs


# --------------------------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------------------------

_SHARED_PARAMETERS = """\
    model : network
        A Flax nnx Module, a (linen module, variables) tuple or linen params dict, an Equinox
        module, a list of ``(W, b)`` tuples or ``W`` matrices of shape (fan_in, fan_out), a
        :class:`jaximp.MLP`, or :class:`NeuralNetToolsWeights`; see :func:`extract_weights`.
    feature_names : sequence of str, optional
        One name per network input; default ``x0, x1, ...``.
    output_names : sequence of str, optional
        One name per network output; default ``y`` for one output, else ``y0, y1, ...``.
    groups : dict of str to list of (str or int), optional
        Inputs to report as one feature, e.g. the columns of a one-hot block:
        ``{"color": ["c_red", "c_blue"]}``, members given by feature name or column index.
        Their importances are summed; the group takes the place of its first member and the
        other inputs keep their own rows."""


@validate_params()
def garson_importance(
    model: Any,
    *,
    feature_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str | int]] | None = None,
) -> FeatureImportance:
    """Garson's relative importance of each input (Goh's form), for any depth and every output.

    One hidden layer (Garson 1991, Goh 1995), as R's ``NeuralNetTools::garson()``: each hidden
    unit ``h`` is split among the inputs in proportion to ``|w_ih v_ho|``, i.e.
    ``Q_ih = |w_ih| / sum_i' |w_i'h|`` (the output weight cancels), and the importance of input
    ``i`` is ``S_i / sum_i' S_i`` with ``S_i = sum_h Q_ih``. Results are non-negative and sum to 1
    for each output.

    Several hidden layers (jaximp's generalization; NeuralNetTools refuses them): Goh's product
    of absolute weights along the path input -> hidden unit becomes the sum, over every path from
    input ``i`` to unit ``k`` of the last hidden layer, of the product of the absolute weights
    along it: ``T = |W_1| |W_2| ... |W_{L-1}|``. Each unit ``k`` is split among the inputs in
    proportion to its column, ``Q_ik = T_ik / sum_i' T_i'k``, and, as in Goh's form, the output
    weights only decide which of those units feed output ``o``:
    ``S_io = sum of Q_ik over the units k with v_ko != 0``, normalized to sum 1 over the inputs.
    With one hidden layer ``T = |W_1|`` and this is exactly the formula above. Like the
    one-layer form it is unchanged by the rescaling that leaves a ReLU network's function
    unchanged (a hidden unit's incoming weights times ``c > 0``, its outgoing weights divided by
    ``c``); chaining per-unit normalized shares instead would not be.

    Per output: because the output weights cancel, every output gets the same importances,
    except where some output weights are exactly zero (a pruned connection). NeuralNetTools
    returns NaN when ``v_ho = 0``; jaximp leaves that hidden unit out for that output. A unit
    that no input reaches contributes nothing, and an output that no unit feeds gets all zeros.
    Biases and activations play no part.

    Parameters
    ----------
{shared}

    Returns
    -------
    FeatureImportance
        ``method="garson"``; ``importances_mean`` of shape (p, o), each column summing to 1
        (groups summed); ``info["layer_sizes"]`` lists the network's layer sizes.

    References
    ----------
    Garson, G. D. (1991). Interpreting neural-network connection weights. AI Expert 6(4), 46-51.
    Goh, A. T. C. (1995). Back-propagation neural networks for modeling complex systems.
    Artificial Intelligence in Engineering 9(3), 143-151.

    Examples
    --------
    The example of ``NeuralNetTools::garson``, a 2-2-1 network:

    >>> net = NeuralNetToolsWeights(
    ...     [13.12, 1.49, 0.16, -0.11, -0.19, -0.16, 0.56, -0.52, 0.81], struct=(2, 2, 1))
    >>> result = garson_importance(net, feature_names=["X1", "X2"])
    >>> result.importances_mean.round(5)
    array([[0.72294],
           [0.27706]])
    """
    weights, sizes, features, outputs = _prepare(
        model, feature_names, output_names, "garson", 2
    )
    values = _garson_float64(weights)
    return _result("garson", values, features, outputs, groups, {"layer_sizes": sizes})


@validate_params()
def olden_importance(
    model: Any,
    *,
    feature_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str | int]] | None = None,
) -> FeatureImportance:
    """Olden's connection-weight importance: the signed product of the weight matrices.

    ``importance = W_1 W_2 ... W_L`` (Olden, Joy & Death 2004): entry ``(i, o)`` sums, over every
    path from input ``i`` to output ``o``, the product of the raw weights along it. Biases are
    dropped. Works for any depth (a single matrix gives the matrix itself) and every output; as
    R's ``NeuralNetTools::olden()``. Values are signed and unnormalized, so their scale follows
    the weights'.

    Parameters
    ----------
{shared}

    Returns
    -------
    FeatureImportance
        ``method="olden"``; ``importances_mean`` of shape (p, o) (groups summed);
        ``info["layer_sizes"]`` lists the network's layer sizes.

    References
    ----------
    Olden, J. D., Joy, M. K. & Death, R. G. (2004). An accurate comparison of methods for
    quantifying variable importance in artificial neural networks using simulated data.
    Ecological Modelling 178(3), 389-397.

    Examples
    --------
    >>> net = NeuralNetToolsWeights(
    ...     [13.12, 1.49, 0.16, -0.11, -0.19, -0.16, 0.56, -0.52, 0.81], struct=(2, 2, 1))
    >>> olden_importance(net, feature_names=["X1", "X2"]).to_frame()
      feature output  importance
    0      X2      y     -0.2128
    1      X1      y     -0.9287
    """
    weights, sizes, features, outputs = _prepare(model, feature_names, output_names, "olden", 1)
    values = _olden_float64(weights)
    return _result("olden", values, features, outputs, groups, {"layer_sizes": sizes})


@validate_params(reduce=Choice("mean", "sum"))
def gedeon_importance(
    model: Any,
    *,
    feature_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    groups: Mapping[str, Sequence[str | int]] | None = None,
    reduce: str = "mean",
) -> FeatureImportance:
    """Gedeon's (1997) input importance, carried through the first two layers of weights.

    The share of input ``i`` in first-layer unit ``j`` is ``P_ij = |w_ij| / sum_i' |w_i'j|``; the
    share of unit ``j`` in second-layer unit ``k`` is ``P_jk`` likewise, and input ``i``'s share of
    unit ``k`` is ``Q_ik = sum_j P_ij P_jk``. Deeper layers are not read.

    - One hidden layer: the second layer is the output layer, so ``Q[:, o]`` is the importance
      for output ``o``: shape (p, o), each column summing to 1 (less where a hidden unit's
      incoming weights are all zero: its share of the output reaches no input).
    - Two or more hidden layers: the second layer is hidden and Gedeon's measure does not reach
      the outputs; the importance is ``Q`` averaged (``reduce="mean"``, summing to 1) or summed
      (``"sum"``, Gedeon's total) over the units of the second hidden layer, one column named
      ``"all"``: shape (p, 1).

    Parameters
    ----------
{shared}
    reduce : {"mean", "sum"}, default "mean"
        How to combine the units of the second hidden layer in networks with two or more hidden
        layers; unused with one hidden layer.

    Returns
    -------
    FeatureImportance
        ``method="gedeon"``; ``importances_mean`` of shape (p, o) or (p, 1) as above (groups
        summed); ``info`` holds ``layer_sizes``, ``units`` (``"outputs"`` or
        ``"second hidden layer"``) and ``reduce``.

    References
    ----------
    Gedeon, T. D. (1997). Data mining of inputs: analysing magnitude and functional measures.
    International Journal of Neural Systems 8(2), 209-218.

    Examples
    --------
    >>> import numpy as np
    >>> w1 = np.array([[1.0, 0.0], [1.0, 2.0]])
    >>> w2 = np.array([[1.0], [3.0]])
    >>> gedeon_importance([w1, w2]).importances_mean
    array([[0.125],
           [0.875]])
    """
    weights, sizes, features, outputs = _prepare(
        model, feature_names, output_names, "gedeon", 2
    )
    shares = _gedeon_shares_float64(weights[:2])
    if len(weights) == 2:
        values, units = shares, "outputs"
    else:
        combine = np.mean if reduce == "mean" else np.sum
        values, units, outputs = combine(shares, axis=1)[:, None], "second hidden layer", ("all",)
    info = {"layer_sizes": sizes, "units": units, "reduce": reduce}
    return _result("gedeon", values, features, outputs, groups, info)


for _function in (garson_importance, olden_importance, gedeon_importance):
    if _function.__doc__:  # absent under python -OO
        _function.__doc__ = _function.__doc__.replace("{shared}", _SHARED_PARAMETERS)
del _function
