"""CatBoost models (``CatBoost``, ``CatBoostRegressor``, ``CatBoostClassifier``) read from
their JSON export (``save_model(..., format="json")``) into the shared form of
:mod:`._boosting`.

CatBoost's trees are oblivious: every node of a level splits on the same ``x > border``
(float32 rows and borders). A tree of depth ``D`` becomes a complete binary tree, level ``d``
splitting on the tree's split ``D - 1 - d`` (CatBoost's leaf index has split ``j`` as bit
``j``), so the leaves in order are CatBoost's. A NaN goes right only where the feature's
``nan_value_treatment`` is ``AsTrue`` (``nan_mode="Max"``). The raw score is
``scale * (sum of the leaf values) + bias`` (``scale_and_bias``); the leaf values are stored
scaled and the bias is ``init``. A multiclass tree (a vector per leaf) becomes one tree per
class. ``cover`` is the leaf weights (the training weight in each leaf) summed up the tree.
Categorical features (one-hot or CTR splits) and text or embedding features are refused.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from ._boosting import BoostedModel, refuse

__all__ = ["read_catboost"]

_IDENTITY = ("RMSE", "MAE", "Quantile", "MAPE", "Huber", "Expectile", "LogCosh", "Lq",
             "MultiRMSE", "YetiRank", "PairLogit", "QueryRMSE", "LogLinQuantile")


def _export(model) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path) as handle:
            return json.load(handle)


def _link(model, loss: str) -> str | None:
    kind = type(model).__name__
    if kind == "CatBoostClassifier":
        if loss in ("Logloss", "CrossEntropy"):
            return "sigmoid"
        return "softmax" if loss == "MultiClass" else None
    if kind == "CatBoostRegressor" and loss.startswith(("Poisson", "Tweedie")):
        return "exp"
    if kind == "CatBoostRegressor" and loss not in _IDENTITY:
        return None
    return "identity"  # CatBoost and CatBoostRanker predict the raw formula value


def _oblivious(tree: dict, columns: dict, nan_right: dict, K: int, scale: float) -> list:
    """One complete binary tree per class (heap layout) of one oblivious tree."""
    splits = tree.get("splits") or []
    D = len(splits)
    n_inner, n_leaves = 2 ** D - 1, 2 ** D
    n = n_inner + n_leaves
    nodes = np.arange(n)
    inner = nodes < n_inner
    level = np.floor(np.log2(nodes + 1)).astype(np.int64)
    feature = np.zeros(n, np.int64)
    threshold = np.zeros(n, np.float64)
    missing_left = np.zeros(n, bool)
    for d in range(D):
        split = splits[D - 1 - d]
        at = inner & (level == d)
        column = columns[int(split["float_feature_index"])]
        feature[at] = column
        threshold[at] = float(np.float32(split["border"]))
        missing_left[at] = not nan_right[column]
    left = np.where(inner, 2 * nodes + 1, nodes)
    right = np.where(inner, 2 * nodes + 2, nodes)
    weights = np.asarray(tree.get("leaf_weights", np.zeros(n_leaves)), np.float64)
    cover = np.zeros(n)
    cover[n_inner:] = weights
    for i in range(n_inner - 1, -1, -1):  # children after parents in the heap
        cover[i] = cover[2 * i + 1] + cover[2 * i + 2]
    values = np.asarray(tree["leaf_values"], np.float64).reshape(n_leaves, K) * scale
    out = []
    for k in range(K):
        value = np.zeros(n)
        value[n_inner:] = values[:, k]
        out.append({"feature": feature, "threshold": threshold, "left": left, "right": right,
                    "missing_left": missing_left, "value": value, "cover": cover,
                    "hessian": cover, "gain": np.zeros(n), "categories": {}, "depth": D})
    return out


def read_catboost(model) -> BoostedModel:
    """A CatBoost model in the shared form."""
    if not model.is_fitted():
        raise TypeError(f"expected a fitted {type(model).__name__}; got an unfitted one. Fix: "
                        "call fit(X, y) first.")
    from catboost import CatBoostError

    try:
        dump = _export(model)
    except CatBoostError as error:  # text or embedding features: no JSON export
        raise refuse(model, f"cannot be exported to JSON ({str(error).strip()})") from error
    info = dump.get("features_info", {})
    if info.get("categorical_features") or info.get("text_features") or info.get(
            "embedding_features") or dump.get("ctr_data"):
        raise refuse(model, "has categorical, text or embedding features (one-hot or CTR "
                            "splits)")
    if "oblivious_trees" not in dump:
        raise refuse(model, "has non-symmetric trees (grow_policy other than "
                            "'SymmetricTree')")
    params = dump.get("model_info", {}).get("params", {})
    loss = str(params.get("loss_function", {}).get("type", "RMSE"))
    link = _link(model, loss)
    if link is None:
        raise refuse(model, f"has the loss {loss!r}")
    float_features = info.get("float_features", [])
    columns = {int(f["feature_index"]): int(f["flat_feature_index"]) for f in float_features}
    nan_right = {int(f["flat_feature_index"]): f.get("nan_value_treatment") == "AsTrue"
                 for f in float_features}
    trees = dump["oblivious_trees"]
    for tree in trees:
        if any(s.get("split_type", "FloatFeature") != "FloatFeature" for s in tree["splits"]):
            raise refuse(model, "has one-hot or CTR splits on categorical features")
    scale, bias = dump.get("scale_and_bias", [1.0, [0.0]])
    bias = np.atleast_1d(np.asarray(bias, np.float64))
    K = len(trees[0]["leaf_values"]) // (2 ** len(trees[0]["splits"])) if trees else 1
    read, tree_class = [], []
    for tree in trees:
        read.extend(_oblivious(tree, columns, nan_right, K, float(scale)))
        tree_class.extend(range(K))
    if not read:
        raise refuse(model, "has no trees")
    names = tuple(str(f) for f in (model.feature_names_ or ())) or None
    n_features = max(columns.values()) + 1 if columns else len(names or ())
    classes = getattr(model, "classes_", None) if link in ("sigmoid", "softmax") else None
    return BoostedModel(
        library="catboost", trees=read, tree_class=np.asarray(tree_class),
        init=np.broadcast_to(bias, (K,)).astype(np.float64), link=link,
        n_features=max(n_features, len(names or ())), feature_names=names,
        objective=loss,
        classes=None if classes is None else tuple(np.asarray(classes).tolist()),
        two_columns=classes is not None and link == "sigmoid" and K == 1,
        float32_rows=True, name=type(model).__name__)
