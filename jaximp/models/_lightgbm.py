"""LightGBM models (``Booster``, ``LGBMRegressor``, ``LGBMClassifier``, ``LGBMRanker``) read
from ``dump_model()`` into the shared form of :mod:`._boosting`.

LightGBM's rules (``Tree::NumericalDecision`` / ``CategoricalDecision``), reproduced: rows are
float64; a numeric split sends ``x <= threshold`` left; with ``missing_type`` "NaN" a NaN
follows ``default_left``, with "Zero" a NaN or a value of magnitude at most 1e-35 follows
``default_left``, with "None" a NaN is read as 0.0; a categorical split (``==``) sends the
categories of its set (``"1||4||7"``) left and every other category right, a NaN or negative
value too. The raw score is the sum of the leaf values over the trees of each class (the
first tree holds the average LightGBM boosts from; the iteration range is the dump's, i.e.
``best_iteration`` when early stopping set one, as ``predict`` uses), divided by the number
of iterations in random-forest mode (``average_output``; its raw score, ``raw_score=True``,
is the undivided sum). ``cover`` is ``internal_count`` /
``leaf_count``, the counts LightGBM's TreeSHAP weighs by. Linear trees are refused.
"""

from __future__ import annotations

import numpy as np

from ._boosting import BoostedModel, level_keys, refuse, tree_depths

__all__ = ["read_lightgbm"]

_IDENTITY = ("regression", "regression_l2", "l2", "mse", "mean_squared_error", "rmse",
             "regression_l1", "l1", "mae", "huber", "fair", "quantile", "mape",
             "lambdarank", "rank_xendcg", "custom", "none")
_EXP = ("poisson", "gamma", "tweedie")


def _link(objective: str) -> tuple[str, float] | None:
    """(link, sigmoid scale) of LightGBM's objective string, None if unsupported."""
    words = objective.split()
    if not words:
        return "identity", 1.0
    name, options = words[0], dict(w.split(":", 1) for w in words[1:] if ":" in w)
    if "sqrt" in words[1:]:
        return None  # regression with reg_sqrt: predict squares the score
    if name in _IDENTITY:
        return "identity", 1.0
    if name in _EXP:
        return "exp", 1.0
    if name == "binary":
        return "sigmoid", float(options.get("sigmoid", 1.0))
    if name in ("cross_entropy", "xentropy"):
        return "sigmoid", 1.0
    if name in ("multiclass", "softmax"):
        return "softmax", 1.0
    return None


def _read_tree(root: dict, scale: float) -> dict:
    """Pre-order node arrays of one dumped tree."""
    nodes: list[dict] = []
    left, right = [], []

    def visit(node: dict) -> int:
        i = len(nodes)
        nodes.append(node)
        left.append(i)
        right.append(i)
        if "split_feature" in node:
            left[i] = visit(node["left_child"])
            right[i] = visit(node["right_child"])
        elif "leaf_coeff" in node or "leaf_features" in node:
            raise ValueError("linear tree")
        return i

    visit(root)
    n = len(nodes)
    out = {k: np.zeros(n) for k in ("threshold", "value", "cover", "hessian", "gain")}
    feature = np.zeros(n, np.int64)
    missing_left = np.zeros(n, bool)
    zero_missing = np.zeros(n, bool)
    categories = {}
    for i, node in enumerate(nodes):
        if "split_feature" not in node:
            out["value"][i] = float(node["leaf_value"]) * scale
            out["cover"][i] = float(node.get("leaf_count", 0))
            out["hessian"][i] = float(node.get("leaf_weight", 0.0))
            continue
        feature[i] = int(node["split_feature"])
        out["cover"][i] = float(node.get("internal_count", 0))
        out["hessian"][i] = float(node.get("internal_weight", 0.0))
        out["gain"][i] = float(node.get("split_gain", 0.0))
        if node["decision_type"] == "==":
            categories[i] = np.array([int(c) for c in str(node["threshold"]).split("||")],
                                     np.int64)
            continue  # NaN and other categories go right: missing_left stays False
        threshold = float(node["threshold"])
        out["threshold"][i] = threshold
        kind = node.get("missing_type", "None")
        if kind == "NaN":
            missing_left[i] = bool(node["default_left"])
        elif kind == "Zero":
            missing_left[i] = bool(node["default_left"])
            zero_missing[i] = True
        else:  # "None": NaN is read as 0.0 and compared
            missing_left[i] = 0.0 <= threshold
    left_a, right_a = np.asarray(left), np.asarray(right)
    return {"feature": feature, "threshold": out["threshold"], "left": left_a,
            "right": right_a, "missing_left": missing_left, "zero_missing": zero_missing,
            "value": out["value"], "cover": out["cover"], "hessian": out["hessian"],
            "gain": out["gain"], "categories": categories,
            "depth": tree_depths(left_a, right_a)}


def read_lightgbm(model) -> BoostedModel:
    """A LightGBM model (Booster or scikit-learn wrapper) in the shared form."""
    booster = model.booster_ if hasattr(model, "booster_") else model
    if not hasattr(booster, "dump_model"):  # a wrapper before fit has no booster_
        raise TypeError(f"expected a fitted {type(model).__name__}; got an unfitted one. Fix: "
                        "call fit(X, y) first.")
    dump = booster.dump_model()
    objective = str(dump.get("objective", ""))
    link = _link(objective)
    if link is None:
        raise refuse(model, f"has the objective {objective!r}")
    K = int(dump.get("num_tree_per_iteration", 1))
    infos = dump["tree_info"]
    if not infos:
        raise refuse(model, "has no trees")
    scale = 1.0 / (len(infos) // K) if dump.get("average_output") else 1.0
    try:
        trees = [_read_tree(info["tree_structure"], scale) for info in infos]
    except ValueError:
        raise refuse(model, "has linear trees (linear_tree=True)") from None
    names = tuple(dump.get("feature_names") or ()) or None
    infos_f = dump.get("feature_infos", {})
    cat_columns = [j for j, name in enumerate(names or ())
                   if infos_f.get(name, {}).get("values")]
    pandas_levels = dump.get("pandas_categorical") or None
    categories = {j: None for j in cat_columns}
    if pandas_levels and len(pandas_levels) == len(cat_columns):
        categories = {j: level_keys(levels)
                      for j, levels in zip(cat_columns, pandas_levels)}
    classes = getattr(model, "classes_", None) if booster is not model else None
    return BoostedModel(
        library="lightgbm", trees=trees, tree_class=np.arange(len(trees)) % K,
        init=np.zeros(K), link=link[0], link_scale=link[1],
        n_features=int(dump.get("max_feature_idx", -1)) + 1, feature_names=names,
        objective=objective,
        classes=None if classes is None else tuple(np.asarray(classes).tolist()),
        two_columns=classes is not None and link[0] == "sigmoid" and K == 1,
        set_goes_left=True, outside_left=False, float32_rows=False,
        categories=categories, name=type(model).__name__, margin_scale=1.0 / scale)
