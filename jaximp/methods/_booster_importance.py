"""The boosting libraries' own feature importances (split counts, gain, cover), computed from
the trees jaximp reads, in the common vocabulary.

Definitions, per library (each equal to the library's own report):

- XGBoost (``Booster.get_score(importance_type=...)``, over all trees, the wrappers'
  ``best_iteration`` notwithstanding): ``weight`` the number of splits on the feature,
  ``total_gain`` the sum of their loss reductions (``loss_changes``), ``total_cover`` the sum
  of their covers (``sum_hessian``), ``gain`` and ``cover`` these sums divided by ``weight``;
- LightGBM (``Booster.feature_importance(importance_type)``, over the trees ``predict``
  uses): ``split`` the number of splits, ``gain`` the sum of their ``split_gain``;
- CatBoost (``get_feature_importance(type="PredictionValuesChange")``): for every pair of
  leaves of an oblivious tree that differ only in a split on the feature, with values
  ``v1, v2`` and training weights ``w1, w2`` (both positive),
  ``w1 (v1 - a)^2 + w2 (v2 - a)^2`` with ``a`` their weighted mean, summed over the pairs,
  the trees and the classes, then scaled to sum 100. ``LossFunctionChange`` needs data and
  ``Interaction`` pairs of features: neither is computed here.
"""

from __future__ import annotations

import numpy as np

from ..data import Choice, validate_params
from ..models import boosting_library, read_boosted
from ..results import FeatureImportance, TreeDetails

__all__ = ["booster_importance"]

_OWN_REPORT = {  # each library's own call for the importances
    "xgboost": "model.get_booster().get_score(importance_type=...)",
    "lightgbm": "model.booster_.feature_importance(importance_type=...) (a Booster: "
                "booster.feature_importance(...))",
    "catboost": "model.get_feature_importance(type='PredictionValuesChange')",
}
_TYPES = {
    "xgboost": ("gain", "weight", "cover", "total_gain", "total_cover"),
    "lightgbm": ("split", "gain"),
    "catboost": ("PredictionValuesChange",),
}


def _split_sums(trees: list, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Number of splits, sum of gains and sum of covers per feature over all split nodes."""
    count, gain, cover = np.zeros(p), np.zeros(p), np.zeros(p)
    for tree in trees:
        split = tree["left"] != np.arange(len(tree["left"]))
        f = tree["feature"][split]
        np.add.at(count, f, 1.0)
        np.add.at(gain, f, tree["gain"][split])
        np.add.at(cover, f, tree["hessian"][split])
    return count, gain, cover


def _prediction_values_change(trees: list, p: int) -> np.ndarray:
    """CatBoost's PredictionValuesChange of heap-laid oblivious trees (one per class)."""
    effect = np.zeros(p)
    for tree in trees:
        D = int(tree["depth"])
        n_inner = 2 ** D - 1
        values, weights = tree["value"][n_inner:], tree["cover"][n_inner:]
        leaves = np.arange(2 ** D)
        for d in range(D):
            bit = 1 << (D - 1 - d)  # the leaf-index bit of the split at level d
            low = leaves[(leaves & bit) == 0]
            high = low | bit
            w1, w2 = weights[low], weights[high]
            v1, v2 = values[low], values[high]
            ok = (w1 > 0) & (w2 > 0)
            mean = np.where(ok, (v1 * w1 + v2 * w2) / np.where(ok, w1 + w2, 1.0), 0.0)
            change = np.where(ok, w1 * (v1 - mean) ** 2 + w2 * (v2 - mean) ** 2, 0.0)
            effect[tree["feature"][2 ** d - 1]] += change.sum()
    total = effect.sum()
    return effect * (100.0 / total) if total > 0 else effect


#: every library's kinds, each once, in the order of _TYPES
_ALL_TYPES = tuple(dict.fromkeys(kind for kinds in _TYPES.values() for kind in kinds))
_CATBOOST_NOTE = ("LossFunctionChange needs data and Interaction pairs: use "
                  "model.get_feature_importance")


@validate_params(importance_type=Choice(*_ALL_TYPES, none=True, fix=(
    "Each library has its own: " + "; ".join(
        f"{library} {', '.join(kinds)}" for library, kinds in _TYPES.items())
    + f" ({_CATBOOST_NOTE}).")))
def booster_importance(model, importance_type: str | None = None,
                       feature_names=None) -> FeatureImportance:
    """The feature importance an XGBoost, LightGBM or CatBoost model reports about itself.

    Computed from the trees that :func:`jaximp.tree_predictor` reads (see the module
    docstring for each definition), equal to the library's own numbers.

    Parameters
    ----------
    model : fitted XGBoost, LightGBM or CatBoost model
        A ``Booster`` or a scikit-learn wrapper; CatBoost without categorical features.
    importance_type : str, optional
        XGBoost: ``"gain"`` (default), ``"weight"``, ``"cover"``, ``"total_gain"``,
        ``"total_cover"``; LightGBM: ``"split"`` (default) or ``"gain"``; CatBoost:
        ``"PredictionValuesChange"`` (default, the only one computable from the trees).
    feature_names : sequence of str, optional
        Default: the model's feature names, else ``x0, x1, ...``.

    Returns
    -------
    FeatureImportance
        ``method="booster"``, ``importances_mean`` (p, 1), 0 for features without splits
        (which XGBoost's ``get_score`` leaves out); ``info``: ``estimator``, ``n_trees``
        and ``criterion`` (``"<library>:<importance_type>"``).

    Examples
    --------
    >>> import numpy as np, pytest
    >>> lgb = pytest.importorskip("lightgbm")  # an optional dependency
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> m = lgb.LGBMRegressor(n_estimators=5, num_leaves=4, verbose=-1).fit(X, X[:, 0])
    >>> imp = booster_importance(m, "split")
    >>> bool(np.array_equal(imp.importances_mean[:, 0], m.booster_.feature_importance("split")))
    True
    """
    library = boosting_library(model)
    if library is None:
        raise TypeError(
            f"booster_importance reads XGBoost, LightGBM and CatBoost models; got "
            f"{type(model).__name__}. Fix: jaximp.impurity_importance for scikit-learn's "
            "trees, or jaximp.permutation_importance for any model."
        )
    types = _TYPES[library]
    importance_type = types[0] if importance_type is None else importance_type
    if importance_type not in types:
        extra = f" ({_CATBOOST_NOTE})" if library == "catboost" else ""
        raise ValueError(
            f"importance_type for a {library} model must be one of {types}; got "
            f"{importance_type!r}{extra}."
        )
    try:
        boosted = read_boosted(model, all_trees=True)
    except TypeError as err:  # the readers' fix (a host predictor) does not apply here
        if "trees='host'" not in str(err):
            raise
        raise TypeError(f"{str(err).split(' Fix:')[0]} Fix: ask the library itself, "
                        f"{_OWN_REPORT[library]}.") from None
    p = boosted.n_features
    if feature_names is None:
        names = boosted.feature_names
        feature_names = tuple(names) if names and len(names) == p else tuple(
            f"x{j}" for j in range(p))
    feature_names = tuple(str(c) for c in feature_names)
    if len(feature_names) != p:
        raise ValueError(f"feature_names must have one name per feature ({p}); got "
                         f"{len(feature_names)}. Fix: pass {p} names or leave it None.")
    if library == "catboost":
        values = _prediction_values_change(boosted.trees, p)
    else:
        count, gain, cover = _split_sums(boosted.trees, p)
        per_split = {"gain": gain, "cover": cover} if library == "xgboost" else {}
        if importance_type in per_split:
            values = np.where(count > 0, per_split[importance_type] / np.maximum(count, 1), 0)
        else:
            values = {"weight": count, "split": count, "gain": gain, "total_gain": gain,
                      "total_cover": cover}[importance_type]
    return FeatureImportance(
        method="booster",
        feature_names=feature_names,
        output_names=("y",),
        importances_mean=np.asarray(values, np.float64)[:, None],
        info=TreeDetails(estimator=type(model).__name__, n_trees=len(boosted.trees),
                         criterion=f"{library}:{importance_type}"),
    )
