"""Edge handling shared by the model-based methods: data + model in, validated pair out."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import os
import re
import types
import weakref

import jax
import numpy as np
import pandas as pd

from ..data import (
    SHARED,
    Dataset,
    InputLayout,
    Recent,
    as_dataset,
    as_pandas,
    is_text,
    is_text_array,
    pandas_numbers,
    replicate_weights,
    row_weights,
    text_as_category,
    user_stacklevel,
    warn_misaligned,
)
from ..engine import check_collapse_columns, key_bits, resolve_budget
from ..models import Predictor, as_predictor, probe_rows
from ..results import with_input_layout

__all__ = ["background_dataset", "bootstrap_weights", "cached_stage", "column_means",
           "column_medians", "digest", "keep_layout", "labels_shared_with", "prepare",
           "prepare_explained", "read_only_copy", "recorded_runs", "repeated_call_key",
           "rows_dataset", "rows_of", "warm_call", "warm_function", "warn_unresolved_values",
           "weightings_digest"]

_STAGES_KEPT = 16
# an Explainer keeps the bootstrap weightings of its last few calls, up to this size each
_KEPT_BOOTSTRAP_BYTES = 8 << 20
_BOOTSTRAPS_KEPT = 4
# a plan made for bootstrap weightings is kept with them up to this size (weightings_digest)
_KEPT_WEIGHTINGS_BYTES = 1 << 20
# digest(): the bytes and digests of a few small arrays, by object id (a reused id is
# harmless: its bytes are compared)
_DIGESTS = Recent()
_DIGESTS_KEPT = 8
_DIGESTS_BYTES = 1 << 20
# digest(): the digests of the copies read_only_copy made (an Explainer's targets), by object;
# hashing 8 MB of targets took 4 ms of every warm call. Only those: a caller's array marked
# read-only may still change through a view or have its flag set back
_READ_ONLY_DIGESTS: dict = {}
# a plain function called again on the same small array reuses its validated, pinned dataset
# (grids, plans and device copies kept): up to this many arrays of at most this many bytes,
# found by their digest. Comparing 800 kB (10,000 x 10 float64) with the bytes kept by
# digest() costs about 0.02 ms, against about 1 ms of validating, gridding and sending it, and
# the permutations an Explainer draws once; the bound keeps what the arrays hold on to (bytes,
# device copies, drawn tables) to tens of MB
_RECENT_DATA = Recent()
_RECENT_DATA_KEPT = 4
_RECENT_DATA_BYTES = 1 << 20
# the Predictor of a plain (or jitted) function, per function and everything it is built
# from; most recently used first out, as the wrappers' own cache (stable_apply)
_PLAIN_PREDICTORS = Recent()
_PLAIN_PREDICTORS_KEPT = 64
_PLAIN_FUNCTIONS = (types.FunctionType, type(jax.jit(lambda X: X)))
# warm_call(): the set-ups of the last few plain calls on small arrays (each holds its dataset)
_PLAIN_CALLS = Recent()
_PLAIN_CALLS_KEPT = _RECENT_DATA_KEPT
# warm_call(): where the runs it hands out are recorded (recorded_runs), if anywhere
_RECORDED_RUNS: contextvars.ContextVar = contextvars.ContextVar("recorded_runs", default=None)


def prepare(
    model,
    X,
    *,
    feature_names=None,
    categorical=None,
    groups=None,
    sample_weight=None,
    variables=None,
    output_names=None,
    memory_budget=None,
    progress=None,
    allow_missing: bool = False,
    reuse: bool = False,
) -> tuple[Dataset, Predictor]:
    """Validate the data and the engine options, wrap the model, and check the model against
    the data's width: everything a method checks before evaluating the model.

    ``allow_missing``: NaN in X is passed to a host model (scikit-learn and other models with
    ``predict``, which may handle missing values) and to boosting libraries' trees read into
    arrays (which route them as the library does); any other JAX model is refused it.
    ``reuse``: a small NumPy float array equal, byte for byte, to one of the last few given
    with the same options gives the same pinned dataset (reading at once), so a method whose
    cached stages are keyed on everything they read (partial dependence, permutation
    importance, the H-statistic) skips its setup when called again on the same data."""
    resolve_budget(memory_budget)
    SHARED["progress"].check("progress", progress)
    options = dict(feature_names=feature_names, categorical=categorical, groups=groups,
                   sample_weight=sample_weight, allow_missing=allow_missing)
    # only a model wrapped into the same Predictor again: the stages kept on the data hold it
    reuse = reuse and (isinstance(model, Predictor) or (type(model) in _PLAIN_FUNCTIONS
                                                        and not hasattr(model, "predict")))
    key = _recent_data_key(X, **options) if reuse else None
    if key is None:
        dataset = as_dataset(X, **options)
    else:
        dataset = _recent_dataset(key, X, **options)
    predictor = _plain_predictor(model, dataset, output_names) if variables is None else None
    if predictor is None:
        predictor = as_predictor(
            model, variables=variables, n_features=dataset.n_columns,
            output_names=output_names, input_shape=dataset.input_shape,
            sample=probe_rows(dataset.source if dataset.source is not None else dataset.X)
            if hasattr(model, "predict") else None,
        )
    if predictor.n_features is not None and dataset.n_columns != predictor.n_features:
        raise ValueError(f"the model {predictor.name} reads {predictor.n_features} columns; X "
                         f"has {dataset.n_columns}. Fix: pass the columns the model was fitted "
                         "on, in the fitted order.")
    if (predictor.recode is not None and isinstance(dataset.source, pd.DataFrame)
            and predictor.recode(dataset.source, dataset.X) is not dataset.X):
        raise ValueError(
            f"X's category columns hold other levels, or another order, than the ones "
            f"{predictor.name} was fitted on, and its arrays read category codes. Pass the "
            "model itself (jaximp then maps the levels as the library does), or give X's "
            "columns the training categories (X[c].cat.set_categories(...)).")
    check_rows(predictor, dataset)
    if (allow_missing and not (predictor.host or predictor.handles_missing)
            and dataset.has_missing):
        rows, cols = np.nonzero(np.isnan(dataset.X))
        raise ValueError(
            f"X contains {rows.size} NaN values (first at row {rows[0]}, column "
            f"{dataset.column_names[cols[0]]!r}), and the JAX model {predictor.name} cannot "
            "take missing values; impute or drop them first. (Host models that handle them, "
            "such as scikit-learn's HistGradientBoosting or a Pipeline with an imputer, get "
            "the NaN as they are.)"
        )
    return dataset, predictor


def check_rows(predictor: Predictor, dataset: Dataset) -> None:
    """The model's own check of the rows it will see (:attr:`Predictor.check_rows`: a
    warning where float32 splits send rows another way than the library), on host rows."""
    if predictor.check_rows is not None and dataset.on_host:
        predictor.check_rows(dataset.X, dataset.column_names)


def warn_unresolved_values(predictor: Predictor, dataset: Dataset) -> None:
    """Warn (a PrecisionWarning naming the feature) where a column's values are too finely
    spread for the model's dtype to tell apart (timestamps in float32): a method that puts
    the data's own values into the model's rows then explains rounding. Once per dataset
    and dtype, so a warm call reads nothing."""
    level = user_stacklevel() + 3  # the user's line, from inside memo's call
    dataset.memo(("values checked in", str(predictor.dtype)), lambda: check_collapse_columns(
        dataset.column_names, dataset.resident_X, range(dataset.n_columns), predictor.dtype,
        "values", stacklevel=level))


def background_dataset(background, dataset: Dataset, weight=None, categorical=None,
                       groups=None, allow_missing: bool = False, predictor=None) -> Dataset:
    """The rows that stand in for absent features (Shapley values, SAGE), validated against
    ``dataset``: the same columns and, for DataFrames, the same categories (so that their
    codes agree), and checked by ``predictor`` (:func:`check_rows`). A Dataset is used as it
    is, with its own weights."""
    if isinstance(background, Dataset):
        if weight is not None:
            raise ValueError("background is a Dataset, which carries its own weights; pass "
                             "background_weight=None.")
        bg = background
    else:
        names = None if isinstance(background, pd.DataFrame) else dataset.column_names
        example = tuple(np.shape(background)[1:])
        allowed = [(dataset.n_columns,)] + ([] if dataset.input_shape is None
                                            else [tuple(dataset.input_shape)])
        if not isinstance(background, pd.DataFrame) and example not in allowed:
            shape = "" if dataset.input_shape is None else (
                f" (or examples of X's shape {tuple(dataset.input_shape)})")
            raise ValueError(
                f"background must have the {dataset.n_columns} columns of X{shape}; got "
                f"shape {np.shape(background)}.")
        warn_misaligned(weight, background, "background_weight", "background")
        weight = None if weight is None else pandas_numbers(weight)  # checked: by position
        framed, array = _framed(background, dataset)
        coded, text_levels = _text_coded_as_x(framed, dataset, _labelled_source(dataset))
        try:
            bg = as_dataset(coded, feature_names=names, categorical=categorical,
                            groups=groups, sample_weight=weight, allow_missing=allow_missing)
        except (ValueError, TypeError) as error:  # named as the user passed them
            message = str(error)
            renamed = re.sub(r"^X ", "background ", message).replace(
                "sample_weight", "background_weight")
            if renamed == message:
                raise
            raise type(error)(renamed) from None
        bg = _user_source(bg, framed, array, text_levels)
    if bg.column_names != dataset.column_names:
        raise ValueError(f"background must have the columns of X, {list(dataset.column_names)};"
                         f" got {list(bg.column_names)}.")
    if isinstance(dataset.source, pd.DataFrame) and isinstance(bg.source, pd.DataFrame):
        for i, name in enumerate(dataset.column_names):
            ours, theirs = dataset.source.iloc[:, i].dtype, bg.source.iloc[:, i].dtype
            if not isinstance(ours, pd.CategoricalDtype):
                continue
            # codes agree where the background's labels are X's categories, in their order
            labels = _source_levels(bg, bg.source, i) or ()
            if list(labels) != list(ours.categories):
                extra = [v for v in labels if v not in set(ours.categories)]
                got = f"labels X's lacks, {extra}," if extra else _dtype_name(theirs)
                raise ValueError(
                    f"background column {name!r} must have the same categories as X's, so "
                    f"that their codes agree; got {got} for {_dtype_name(ours)}. Give both "
                    "the categories of both: levels = "
                    "X[name].cat.categories.union(background[name].unique()), then "
                    "X[name].cat.set_categories(levels) and "
                    "background[name].astype(X[name].dtype).")
    if predictor is not None:
        check_rows(predictor, bg)
    return bg


def rows_dataset(rows, dataset: Dataset, categorical=None, groups=None, *,
                 names: tuple[str, str] = ("rows", "the Explainer's data")) -> Dataset:
    """New rows to explain (an Explainer's call; held-out rows), as a Dataset with
    ``dataset``'s columns, groups and categorical columns, each text or category column
    coded with ``dataset``'s labels (its rows, the background, hold codes of those labels);
    labels it lacks are refused. ``names``: the rows' and the data's in the messages."""
    what, of = names
    framed, array = _framed(rows, dataset)
    frame = isinstance(framed, pd.DataFrame)
    source = _labelled_source(dataset)  # made once: an array of text is framed anew each time
    rows, text_levels = _text_coded_as_x(framed, dataset, source)
    shape = tuple(np.shape(rows)[1:])
    if not frame and shape not in ((dataset.n_columns,), dataset.input_shape):
        raise ValueError(
            f"{what} must have the {dataset.n_columns} columns of {of}"
            + (f" (examples of shape {dataset.input_shape})" if dataset.input_shape else "")
            + f"; got rows of shape {shape}.")
    explained = as_dataset(rows, feature_names=None if frame else dataset.column_names,
                           categorical=categorical, groups=groups, allow_missing=True)
    explained = _user_source(explained, framed, array, text_levels)
    if explained.column_names != dataset.column_names:
        raise ValueError(
            f"{what} must have the columns of {of} {list(dataset.column_names)}; "
            f"got {list(explained.column_names)}.")
    for i, name in enumerate(dataset.column_names if source is not None else ()):
        ours = _source_levels(dataset, source, i)
        theirs = _column_levels(rows, i) if frame else None
        if ours is not None and theirs != ours:  # a grouped column's too: codes must agree
            got = list(theirs) if theirs else "numbers" if frame else (
                f"{what} of type {type(rows).__name__}, whose columns carry no labels; pass a "
                "DataFrame with the data's columns")
            raise ValueError(f"column {name!r} of {what} must hold the labels of {of} "
                             f"{list(ours)}; got {got}.")
    return explained


def _source_levels(dataset: Dataset, source: pd.DataFrame, i: int) -> tuple | None:
    """The labels coding column ``i`` of the dataset's own data ``source``: those it was
    coded with (:attr:`Dataset.text_levels`), else :func:`_column_levels`, read once per
    dataset (an Explainer's calls with new rows do not scan X's text columns again)."""
    if dataset.text_levels is not None and dataset.text_levels[i] is not None:
        return dataset.text_levels[i]
    return dataset.memo(("column levels", i), lambda: _column_levels(source, i))


def _column_levels(frame: pd.DataFrame, i: int) -> tuple | None:
    """The labels whose positions code column ``i`` (its categories, or its sorted text
    values, as :func:`jaximp.as_dataset` codes them), or None for a column of numbers."""
    column = frame.iloc[:, i]
    if is_text(column):
        column = text_as_category(column)
    return tuple(column.cat.categories) if isinstance(column.dtype, pd.CategoricalDtype) \
        else None


def _framed(data, dataset: Dataset):
    """``data`` (rows to explain or a background) as a DataFrame where its labels need
    coding as ``dataset``'s: a polars frame through pandas, and an array of text (when
    ``dataset`` came from one) as an object DataFrame of its columns, returned with the
    array (the source a host model is given); anything else as it is, with None."""
    data = as_pandas(data)
    if is_text_array(data) and is_text_array(dataset.source):
        return pd.DataFrame(data, columns=list(dataset.column_names), dtype=object), data
    return data, None


def _labelled_source(dataset: Dataset) -> pd.DataFrame | None:
    """The dataset's own data as a DataFrame where it can hold labels (a DataFrame, or an
    array of text as an object DataFrame), else None."""
    if isinstance(dataset.source, pd.DataFrame):
        return dataset.source
    if is_text_array(dataset.source):
        return pd.DataFrame(dataset.source, columns=list(dataset.column_names), dtype=object)
    return None


def prepare_explained(model, X, background, **options):
    """:func:`prepare` of rows explained against a ``background`` (Shapley values, SAGE):
    for a JAX model, which sees text as codes, the text columns of both are coded on the
    labels of both (:func:`labels_shared_with`). The dataset, the predictor and the
    background to use."""
    dataset, predictor = prepare(model, X, **options)
    if not predictor.host:
        shared, background = labels_shared_with(X, background, options.get("feature_names"))
        if shared is not X:
            options.pop("reuse", None)
            dataset, predictor = prepare(model, shared, **options)
    return dataset, predictor, background


def labels_shared_with(X, background, feature_names=None):
    """``X`` and ``background`` with each text column they both hold made categories of the
    sorted labels of both, where their labels differ: a JAX model then sees one code per
    label on both sides, those the data as a whole would get (coded alone, rows of a few
    labels would number them afresh). DataFrames (pandas or polars) match columns by name,
    arrays of text by position (named ``feature_names``). Anything else: both as they are.

    Examples
    --------
    >>> X, bg = labels_shared_with(pd.DataFrame({"c": ["red", "red"]}),
    ...                            pd.DataFrame({"c": ["blue", "green"]}))
    >>> list(X["c"].cat.categories), list(bg["c"].cat.codes)
    (['blue', 'green', 'red'], [0, 1])
    """
    given = X, background
    X, background = as_pandas(X), as_pandas(background)
    if is_text_array(X) and is_text_array(background):  # columns by position
        names = [f"x{i}" for i in range(X.shape[1])] if feature_names is None else [
            str(name) for name in feature_names]
        X = pd.DataFrame(X, columns=names, dtype=object)
        background = pd.DataFrame(background, columns=names[:background.shape[1]],
                                  dtype=object)
    if not (isinstance(X, pd.DataFrame) and isinstance(background, pd.DataFrame)):
        return given
    changed = False
    for name in X.columns:
        if name not in background.columns or not (is_text(X[name])
                                                   and is_text(background[name])):
            continue
        ours, theirs = set(X[name].dropna()), set(background[name].dropna())
        if ours != theirs:
            if not changed:
                X, background, changed = X.copy(), background.copy(), True
            labels = sorted(ours | theirs)
            X[name] = pd.Categorical(X[name].astype(object), categories=labels)
            background[name] = pd.Categorical(background[name].astype(object),
                                              categories=labels)
    return (X, background) if changed else given


def _text_coded_as_x(background, dataset: Dataset,
                     source: pd.DataFrame | None) -> tuple[object, dict[int, tuple]]:
    """The background (a DataFrame; anything else is returned as it is) with the columns that
    are text or categories in X's own data (``source``, framed by :func:`_labelled_source`)
    as categories that start with X's levels, in X's order, so that a code names the same
    label on both sides (each side alone codes its own labels); labels X lacks come after
    them. Returned with the labels of the columns that were text, by position."""
    if not isinstance(background, pd.DataFrame) or source is None:
        return background, {}
    coded, text_levels = background, {}
    for i, name in enumerate(dataset.column_names):
        ours = _source_levels(dataset, source, i)  # a grouped column's too
        if i >= background.shape[1] or str(background.columns[i]) != name or ours is None:
            continue
        column = background.iloc[:, i]
        if not (is_text(column) or isinstance(column.dtype, pd.CategoricalDtype)):
            continue
        ours, known = list(ours), set(ours)
        extra = sorted({v for v in column.dropna().astype(object) if v not in known}, key=str)
        if coded is background:
            coded = background.copy()
        coded.isetitem(i, pd.Categorical(column.astype(object), categories=ours + extra))
        if is_text(column):
            text_levels[i] = tuple(ours + extra)
    return coded, text_levels


def _user_source(coded: Dataset, framed, array, text_levels: dict[int, tuple]) -> Dataset:
    """``coded`` (rows coded by :func:`_text_coded_as_x`) with the data a host model gets:
    the user's array of text (``array``), or the frame with its text columns as given,
    decoded with the labels they were coded with (category columns stay coded as X's)."""
    if not text_levels:
        return coded if array is None else dataclasses.replace(coded, source=array)
    if array is not None:
        source = array
    else:
        source = coded.source.copy()
        for i in text_levels:
            source.isetitem(i, framed.iloc[:, i])
    levels = tuple(text_levels.get(i) for i in range(coded.n_columns))
    return dataclasses.replace(coded, source=source, text_levels=levels)


def _dtype_name(dtype) -> str:
    if isinstance(dtype, pd.CategoricalDtype):
        return f"categories {list(dtype.categories)}"
    return str(dtype)


def _reusable(X, categorical, groups) -> bool:
    """A small 2-D NumPy float array described without categories or groups: the data a
    plain call keeps (:func:`_recent_data_key`, :func:`warm_call`)."""
    return (type(X) is np.ndarray and X.dtype.kind == "f" and X.ndim == 2
            and X.nbytes <= _RECENT_DATA_BYTES and categorical is None and groups is None)


def _recent_data_key(X, *, feature_names, categorical, groups, sample_weight, allow_missing):
    """What identifies a small 2-D NumPy float array and its options (digests of their bytes),
    or None where the data is not reused (other types, large arrays, unhashable options)."""
    if not _reusable(X, categorical, groups):
        return None
    weights = None
    if sample_weight is not None:
        weights = np.asarray(sample_weight)
        if weights.dtype.kind not in "biuf" or weights.nbytes > _RECENT_DATA_BYTES:
            return None
        weights = digest(weights)
    names = None
    if feature_names is not None:
        names = tuple(feature_names) if isinstance(feature_names, (list, tuple)) else None
        if names is None or not all(isinstance(name, str) for name in names):
            return None
    return (digest(X), names, weights, bool(allow_missing))


def _recent_dataset(key, X: np.ndarray, **options) -> Dataset:
    """The dataset of ``key`` (from :func:`_recent_data_key`), validated and pinned the
    first time: built from a read-only copy of ``X``, so that no later change to the
    caller's array reaches it."""
    def make():
        return as_dataset(read_only_copy(X), **options).pin(defer_reads=False)

    return _RECENT_DATA.get(key, make, keep=_RECENT_DATA_KEPT)


def _plain_predictor(model, dataset: Dataset, output_names) -> Predictor | None:
    """The Predictor of a plain or jitted function, built once per function, width, example
    shape, output names and float mode (as_predictor builds the same wrapper and probe from
    them alone); None for any other model (a module's or pytree's arrays may change)."""
    if type(model) not in _PLAIN_FUNCTIONS or hasattr(model, "predict"):
        return None
    try:
        names = None if output_names is None else tuple(str(name) for name in output_names)
    except TypeError:
        return None
    key = (model, dataset.n_columns, dataset.input_shape, names,
           jax.dtypes.canonicalize_dtype(np.float64).str)  # the float mode: its dtype
    return _PLAIN_PREDICTORS.get(
        key, lambda: as_predictor(model, n_features=key[1], output_names=output_names,
                                  input_shape=dataset.input_shape),
        keep=_PLAIN_PREDICTORS_KEPT)


def keep_layout(info, dataset: Dataset, features=None):
    """``info`` (a dict or typed details) holding ``info["input_layout"]``, where each of
    ``features`` (default: all of the dataset's; the result's features, in its order) lies
    in an example, when X had more than two axes; ``info`` unchanged for a table. Called
    where a method builds a per-feature result, so that it paints itself (``image()``)."""
    return with_input_layout(info, InputLayout.of(dataset, features))


def cached_stage(dataset: Dataset, key: tuple, build, *, uncached: bool = False):
    """``build()``: a method's plan and reducer for its options ``key``, kept on an
    Explainer's (pinned) dataset, so that a repeated call reuses them, and with them the
    engine's device arrays and compiled chunk. ``key`` must name everything ``build`` reads
    besides the dataset; options that are not hashable (explicit arrays) build anew."""
    if uncached or not dataset.pinned:
        return build()
    try:
        hash(key)
    except TypeError:
        return build()
    return dataset.recent("method stages", key, build, _STAGES_KEPT)


def rows_of(dataset: Dataset, rows) -> Dataset:
    """The data restricted to ``rows`` (indices, in order): an Explainer's data keeps its
    subsets (pinned), so that repeated calls reuse their device copies and launches."""
    rows = np.asarray(rows)
    if rows.size == dataset.n_rows and np.array_equal(rows, np.arange(dataset.n_rows)):
        return dataset

    def subset():
        taken = dataset.take(rows)
        return taken.pin() if dataset.pinned else taken

    return cached_stage(dataset, ("rows", digest(rows)), subset)


def bootstrap_weights(dataset: Dataset, n_bootstrap: int, key) -> tuple[np.ndarray, np.ndarray]:
    """``replicate_weights`` of the data's own case weights: (1 + r, n) weightings and the
    (r, n) counts. An Explainer's (pinned) data keeps them per replicate count and key (up to
    8 MB, read-only), so that a repeated call draws nothing again."""
    make = functools.partial(replicate_weights, row_weights(dataset), n_bootstrap, key)
    if (not dataset.pinned or n_bootstrap == 0
            or 8 * (1 + n_bootstrap) * dataset.n_rows > _KEPT_BOOTSTRAP_BYTES):
        return make()

    def kept():
        weightings, counts = make()
        weightings.flags.writeable = counts.flags.writeable = False
        return weightings, counts

    return dataset.recent("bootstrap weights", (n_bootstrap, tuple(key_bits(key))), kept,
                          _BOOTSTRAPS_KEPT)


def weightings_digest(weightings: np.ndarray) -> bytes | None:
    """The key by which a method keeps a plan made for bootstrap weightings (replicates x
    rows): their digest, or None past 1 MB, where hashing them on every call costs about as
    much as making the plan anew (about 1 ms per MB); such a plan is not kept."""
    return digest(weightings) if weightings.nbytes <= _KEPT_WEIGHTINGS_BYTES else None


def digest(array) -> bytes | None:
    """A short digest of an array's contents (None for None), for :func:`cached_stage` keys.

    The digests of the last few small arrays are kept with their bytes, by array object: a
    call repeated on the same data or targets compares their bytes (2 us for 80 kB) instead
    of hashing them (tens of us).
    """
    if array is None:
        return None
    kept = _READ_ONLY_DIGESTS.get(id(array))
    if kept is not None and kept[0]() is array and not array.flags.writeable:
        if kept[1] is None:  # a read_only_copy, hashed when first asked
            kept[1] = _sha((array.dtype.str, array.shape, array.tobytes()))
        return kept[1]
    array = np.ascontiguousarray(array)
    content = (array.dtype.str, array.shape, array.tobytes())
    if array.nbytes <= _DIGESTS_BYTES:
        known, value = _DIGESTS.get(id(array), lambda: (content, _sha(content)),
                                    keep=_DIGESTS_KEPT)
        if known == content:
            return value
    return _sha(content)  # large, or changed since it was kept


def read_only_copy(array: np.ndarray) -> np.ndarray:
    """A read-only copy of ``array`` that owns its data: its contents cannot change, so
    :func:`digest` hashes it once."""
    copy = np.array(array, copy=True, order="C")
    copy.flags.writeable = False
    forget = functools.partial(_READ_ONLY_DIGESTS.pop, id(copy), None)
    _READ_ONLY_DIGESTS[id(copy)] = [weakref.ref(copy, lambda _: forget()), None]
    return copy


def _sha(content: tuple) -> bytes:
    dtype, shape, data = content
    return hashlib.sha256(f"{dtype}{shape}".encode() + data).digest()[:16]


def warm_call(method: str, set_up, model, X, y, options: dict):
    """``set_up(model, X, y, **options)``: a method's validated and planned call, a function
    that evaluates it. The call is set up once per model, data, targets and options (compared
    with their types: ``1`` is not ``True``) and kept, so that a repeated call skips its
    validation and setup; each run still evaluates anew. It is kept on an Explainer's (pinned)
    dataset with its Predictor, and for a plain call on a small NumPy array (the data
    :func:`prepare` reuses) with a plain function or a Predictor, among the last few such
    calls. Options that draw (a Generator, ``random_state=None``), arrays among the options
    and targets that are not numeric arrays set up each call."""
    key = _warm_key(method, model, X, y, options)

    def make():  # kept: made from copies of the arrays its key read the bytes of
        return set_up(model, X, None if y is None else read_only_copy(y),
                      **_owned_arrays(options))

    if key is None:
        run = set_up(model, X, y, **options)
    elif isinstance(X, Dataset):
        run = X.recent("warm calls", key, make, _STAGES_KEPT)
    else:
        run = _PLAIN_CALLS.get(key, make, keep=_PLAIN_CALLS_KEPT)
    recorded = _RECORDED_RUNS.get()
    if recorded is not None:  # a run made for this call alone is not to be repeated
        recorded.append(None if key is None else run)
    return run


def warm_function(function):
    """Mark a method whose result is ``warm_call(...)()`` (nothing done after the run): an
    Explainer may keep the run its first call made (:func:`recorded_runs`) and repeat the
    call as ``run()``."""
    function.__jaximp_warm__ = True
    return function


@contextlib.contextmanager
def recorded_runs():
    """A list of the runs :func:`warm_call` hands out inside the block (None for one set up
    for that call alone): an Explainer keeps the run of a bound call of a
    :func:`warm_function` that made exactly one, so that the call repeated with the same
    options skips the function's validation and set-up look-up (12 us of a 48 us warm
    permutation importance on CPU)."""
    runs: list = []
    token = _RECORDED_RUNS.set(runs)
    try:
        yield runs
    finally:
        _RECORDED_RUNS.reset(token)


def repeated_call_key(function, args: tuple, options: dict, *defaults) -> tuple | None:
    """What a bound call of ``function`` on an Explainer's data is repeated by: the function,
    its arguments (arrays by their contents), the options given, the Explainer's
    ``defaults`` (its Predictor, by identity, among them) and the default budget (None where
    something is not hashable)."""
    try:
        key = (function, tuple(digest(arg) if isinstance(arg, np.ndarray) else _typed(arg)
                               for arg in args),
               _typed(options), _typed(defaults), os.environ.get("JAXIMP_MEMORY_BUDGET"))
        hash(key)
    except TypeError:
        return None
    return key


def _warm_key(method: str, model, X, y, options: dict) -> tuple | None:
    """What a warm call is kept by (None where it is not kept): everything it reads."""
    if isinstance(X, Dataset) and X.pinned and isinstance(model, Predictor):
        data = ()  # kept on the dataset itself
    elif (_reusable(X, options.get("categorical"), options.get("groups"))
          and options.get("variables") is None and options.get("sample_weight") is None
          and (isinstance(model, Predictor) or (type(model) in _PLAIN_FUNCTIONS
                                               and not hasattr(model, "predict")))):
        data = (digest(X),)  # a plain call on data that prepare() reuses
    else:
        return None
    if type(options.get("random_state", 0)) is not int:  # a draw or an array: set up anew
        return None
    if y is not None and not (type(y) is np.ndarray and y.dtype.kind in "biuf"):
        return None
    try:
        # and what a set-up reads besides its arguments: the float mode and the default budget
        key = (method, model, *data, digest(y), _typed(options, arrays=True),
               jax.config.jax_enable_x64,
               os.environ.get("JAXIMP_MEMORY_BUDGET"))
        hash(key)
    except TypeError:  # an array or another unhashable option
        return None
    return key


_SCALARS = frozenset({int, float, bool, str, type(None)})


def _typed(value, arrays: bool = False):
    """``value`` with the type of each part (so that equal values of other types, ``1`` and
    ``True`` or ``1.0``, differ); lists, tuples and dicts part by part. Where ``arrays`` (a
    call's options, one level down), a small numeric array (a background, a feature mask)
    by its dtype, shape and bytes (:func:`digest`), so that a plain Shapley call repeated on
    the same background is set up once: the kept set-up gets a copy of it
    (:func:`_owned_arrays`), so that a later change to the caller's array cannot reach it."""
    if type(value) is dict and _SCALARS.issuperset(map(type, value.values())):
        # a call's options are mostly plain scalars: their types side by side
        return dict, tuple(value.items()), tuple(map(type, value.values()))
    if isinstance(value, (list, tuple)):
        return type(value), tuple(_typed(part) for part in value)
    if isinstance(value, dict):
        # arrays only one level down: a kept set-up gets copies of those (_owned_arrays)
        return dict, tuple((name, _typed(part, arrays and isinstance(part, np.ndarray)))
                           for name, part in value.items())
    if isinstance(value, np.ndarray):
        if not (arrays and type(value) is np.ndarray and value.dtype.kind in "biuf"
                and value.nbytes <= _DIGESTS_BYTES):
            raise TypeError("only small numeric arrays among the options are kept")
        return np.ndarray, digest(value)  # the dtype and shape are part of the digest
    return type(value), value


def _owned_arrays(options: dict) -> dict:
    """``options`` with read-only copies of its arrays: what a kept set-up is made from."""
    return {name: read_only_copy(value) if isinstance(value, np.ndarray) else value
            for name, value in options.items()}


def column_medians(values: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Per column, the (weighted) median of the values present: the value at which the
    cumulative weight passes half the total, or the mean of the two values around it where
    it reaches half exactly, so that equal weights give ``np.nanmedian``'s median."""
    if weights is None:
        return np.nanmedian(values, axis=0)
    out = []
    for col in values.T:
        present = ~np.isnan(col)
        col, w = col[present], weights[present]
        order = np.argsort(col, kind="stable")
        col, cumulative = col[order], np.cumsum(w[order])
        half = 0.5 * cumulative[-1]
        # half reached "exactly" up to the sums' rounding (ten weights of 0.1 reach it as
        # 0.5 against a half of 0.49999999999999994)
        tolerance = 1e-12 * cumulative[-1]
        lower = min(np.searchsorted(cumulative, half - tolerance), col.size - 1)
        exact = abs(cumulative[lower] - half) <= tolerance
        upper = np.searchsorted(cumulative, cumulative[lower], side="right")  # next weight
        out.append(0.5 * (col[lower] + col[min(upper, col.size - 1)]) if exact else col[lower])
    return np.asarray(out)


def column_means(values: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Per column, the (weighted) mean of the values present."""
    present = ~np.isnan(values)
    w = present * (1.0 if weights is None else weights[:, None])  # (n, k)
    return (np.where(present, values, 0.0) * w).sum(axis=0) / w.sum(axis=0)
