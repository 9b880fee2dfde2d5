"""XGBoost models (``Booster``, ``XGBRegressor``, ``XGBClassifier``, ``XGBRanker``,
``XGBRF*``) read from their JSON (``save_raw("json")``) into the shared form of
:mod:`._boosting`.

XGBoost's rules, reproduced: a numeric split sends ``x < split_condition`` left (float32 rows
and conditions; stored as ``x <= the float32 just below``), NaN follows ``default_left``; a
categorical split sends the listed categories right and every other category left (a
negative or out-of-range category too, NaN by ``default_left``); the margin is
``ProbToMargin(base_score) + sum of the leaf values`` of the trees in the prediction's
iteration range (the scikit-learn wrappers use ``best_iteration`` after early stopping, a
``Booster`` all trees), DART trees weighted by ``weight_drop``; ``cover`` is ``sum_hessian``.
"""

from __future__ import annotations

import itertools
import json

import numpy as np

from ._boosting import BoostedModel, below_float32, level_keys, refuse, tree_depths

__all__ = ["read_xgboost"]

#: objective -> (inverse link of predict, base_score -> margin)
_OBJECTIVES = {
    "reg:squarederror": ("identity", "identity"),
    "reg:squaredlogerror": ("identity", "identity"),
    "reg:pseudohubererror": ("identity", "identity"),
    "reg:absoluteerror": ("identity", "identity"),
    "reg:quantileerror": ("identity", "identity"),
    "reg:linear": ("identity", "identity"),
    "binary:logitraw": ("identity", "identity"),  # base_score is a margin already
    "rank:pairwise": ("identity", "identity"),
    "rank:ndcg": ("identity", "identity"),
    "rank:map": ("identity", "identity"),
    "reg:logistic": ("sigmoid", "logit"),
    "binary:logistic": ("sigmoid", "logit"),
    "multi:softprob": ("softmax", "identity"),
    "multi:softmax": ("argmax", "identity"),  # the class index; the wrappers' proba: softmax
    "binary:hinge": ("hinge", "identity"),  # 1 where the margin is positive, else 0
    "count:poisson": ("exp", "log"),
    "reg:gamma": ("exp", "log"),
    "reg:tweedie": ("exp", "log"),
}


def _floats(text) -> np.ndarray:
    """``"[1E0,2E0]"`` or ``"1E0"`` (XGBoost's base_score) as float64."""
    text = str(text).strip().strip("[]")
    return np.array([float(v) for v in text.split(",") if v.strip()], np.float64)


def _margin(base: np.ndarray, transform: str) -> np.ndarray:
    base32 = base.astype(np.float32).astype(np.float64)
    if transform == "logit":
        return np.log(base32 / (1.0 - base32))
    if transform == "log":
        return np.log(base32)
    return base32


def _read_tree(tree: dict, weight: float) -> dict:
    left = np.asarray(tree["left_children"], np.int64)
    right = np.asarray(tree["right_children"], np.int64)
    n = len(left)
    if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise ValueError("vector leaves")
    leaf = left == -1
    nodes = np.arange(n)
    cond = np.asarray(tree["split_conditions"], np.float32)
    below = below_float32(cond)  # x < c  <=>  x <= the float32 below c
    split_type = np.asarray(tree.get("split_type", [0] * n), np.int64)
    categories = {}
    segments, sizes = tree.get("categories_segments", []), tree.get("categories_sizes", [])
    cats = np.asarray(tree.get("categories", []), np.int64)
    for node, start, size in zip(tree.get("categories_nodes", []), segments, sizes):
        categories[int(node)] = cats[int(start):int(start) + int(size)]
    for node in nodes[(split_type == 1) & ~leaf]:
        categories.setdefault(int(node), np.zeros(0, np.int64))
    left = np.where(leaf, nodes, left)
    right = np.where(leaf, nodes, right)
    return {
        "feature": np.where(leaf, 0, np.asarray(tree["split_indices"], np.int64)),
        "threshold": np.where(leaf | (split_type == 1), 0.0, below.astype(np.float64)),
        "left": left, "right": right,
        "missing_left": np.asarray(tree["default_left"], bool) & ~leaf,
        "value": np.where(leaf, cond.astype(np.float64) * weight, 0.0),
        "cover": np.asarray(tree["sum_hessian"], np.float64),
        "hessian": np.asarray(tree["sum_hessian"], np.float64),
        "gain": np.where(leaf, 0.0, np.asarray(tree["loss_changes"], np.float64)),
        "categories": categories,
        "depth": tree_depths(left, right),
    }


def _levels(model_json: dict, types: list) -> dict:
    """Training category levels of each categorical column (``level_keys`` form), None where
    the JSON does not keep them (older XGBoost)."""
    out = {j: None for j, kind in enumerate(types) if kind == "c"}
    encodings = (model_json.get("cats") or {}).get("enc") or []
    for j in out:
        if j >= len(encodings):
            continue
        enc = encodings[j]
        values, offsets = enc.get("values") or [], enc.get("offsets") or []
        if "type" in enc:  # numbers
            out[j] = level_keys(values)
        elif offsets and values:  # utf-8 strings, concatenated
            data = bytes(values)
            out[j] = [data[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets)]
    return out


def _iteration_end(model, booster) -> int | None:
    """The end of the iteration range ``predict`` uses: the wrappers' best iteration."""
    if booster is model:
        return None
    try:
        return int(model.best_iteration) + 1
    except (AttributeError, ValueError, TypeError):
        return None


def read_xgboost(model, all_trees: bool = False) -> BoostedModel:
    """An XGBoost model (Booster or scikit-learn wrapper) in the shared form."""
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    missing = getattr(model, "missing", np.nan)
    if missing is not None and not np.isnan(missing):
        raise refuse(model, f"treats the value {missing} as missing (missing={missing})")
    learner = json.loads(bytes(booster.save_raw("json")))["learner"]
    gbm = learner["gradient_booster"]
    if gbm["name"] == "gblinear":
        raise refuse(model, "is a linear booster (booster='gblinear'), not trees")
    weights = None
    if gbm["name"] == "dart":
        weights = np.asarray(gbm.get("weight_drop", []), np.float64)
        gbm = gbm["gbtree"]
    objective = learner["objective"]["name"]
    if objective not in _OBJECTIVES:
        raise refuse(model, f"has the objective {objective!r} (supported: "
                            f"{', '.join(_OBJECTIVES)})")
    link, transform = _OBJECTIVES[objective]
    classes = getattr(model, "classes_", None) if booster is not model else None
    if link == "argmax" and classes is not None:  # XGBClassifier's predict_proba
        link = "softmax"
    params = learner["learner_model_param"]
    K = max(int(params.get("num_class", 0)), int(params.get("num_target", 1)), 1)
    base = _floats(params["base_score"])
    base = np.broadcast_to(base, (K,)) if base.size in (1, K) else base[:K]
    trees = gbm["model"]["trees"]
    tree_class = np.asarray(gbm["model"]["tree_info"], np.int64)
    indptr = gbm["model"].get("iteration_indptr")
    end = None if all_trees else _iteration_end(model, booster)
    if end is not None and indptr is not None and end < len(indptr):
        trees, tree_class = trees[:indptr[end]], tree_class[:indptr[end]]
    if not trees:
        raise refuse(model, "has no trees")
    if weights is None or len(weights) < len(trees):
        weights = np.ones(len(trees))
    try:
        read = [_read_tree(tree, float(w)) for tree, w in zip(trees, weights)]
    except ValueError:
        raise refuse(model, "has trees with vector leaves (multi_strategy='multi_output_tree')"
                     ) from None
    names = learner.get("feature_names") or None
    types = learner.get("feature_types") or []
    n_features = int(params["num_feature"])
    return BoostedModel(
        library="xgboost", trees=read, tree_class=tree_class, init=_margin(np.asarray(base),
                                                                         transform),
        link=link, n_features=n_features,
        feature_names=tuple(names) if names else None, objective=objective,
        classes=None if classes is None else tuple(np.asarray(classes).tolist()),
        # a binary wrapper's predict_proba is (1 - p, p) whatever p is (logitraw's margin too)
        two_columns=classes is not None and K == 1,
        set_goes_left=False, outside_left=True, float32_rows=True,
        categories=_levels(gbm["model"], types),
        name=type(model).__name__)
