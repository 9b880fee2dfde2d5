"""jaximp: variable importance and interaction measures for any JAX-callable model.

Every model-based method is a plan (what to replace, :func:`at_values` and friends) plus a
streaming reducer (what to keep, :class:`Mean`, :class:`LossSums`...) run by one evaluation
engine (:func:`evaluate`) that batches, chunks, shards and folds the model evaluations within
a memory budget.
"""

from ._ale import AccumulatedLocalEffects, ale, ale_importance, ale_interaction
from ._data import Dataset, Feature, as_dataset
from ._datasets import make_friedman1, make_linear
from ._details import Details
from ._engine import default_memory_budget, evaluate, predict_rows
from ._explain import Explanation, explain
from ._grid import mquantiles
from ._hstat import HStatistic, h_statistic
from ._loco import loco_importance
from ._mlp import MLP, fit_mlp
from ._nn_weights import (
    NeuralNetToolsWeights,
    extract_weights,
    from_neuralnettools,
    garson_importance,
    gedeon_importance,
    olden_importance,
)
from ._filters import filter_importance
from ._linear import linear_importance
from ._model import Predictor, as_predictor, combine_outputs
from ._pd import (
    PartialDependence, PartialDependences, partial_dependence, partial_dependence_all,
)
from ._pd_importance import pd_importance, pd_interaction
from ._partial_importance import PartialImportance, partial_importance
from ._permutation import LOSSES, permutation_importance
from ._plans import Plan, at_coded_values, at_drawn_rows, at_permuted_rows, at_values
from ._plots import plot_importances
from ._precision import PrecisionWarning
from ._reducers import GroupedMean, Itemwise, Keep, LossSums, Mean, Reducer, Spread, Stacked
from ._report import ReportSection, write_report
from ._results import FeatureImportance, FeatureInteraction
from ._sensitivity import sensitivity_importance
from ._shapley import ShapleyInteractions, ShapleyValues, shapley_interactions, shapley_values
from ._trees import (
    TransversalRates, impurity_importance, transversal_rates, tree_partial_dependence,
    tree_predictor,
)
from ._decorrelation import decorrelation_importance
from ._trends import Trends, trends

__version__ = "0.1.0"

__all__ = [
    "AccumulatedLocalEffects",
    "Dataset",
    "Details",
    "Explanation",
    "Feature",
    "FeatureImportance",
    "FeatureInteraction",
    "GroupedMean",
    "HStatistic",
    "Itemwise",
    "Keep",
    "LOSSES",
    "LossSums",
    "MLP",
    "Mean",
    "NeuralNetToolsWeights",
    "PartialDependence",
    "PartialDependences",
    "PartialImportance",
    "Plan",
    "PrecisionWarning",
    "Predictor",
    "Reducer",
    "ReportSection",
    "ShapleyInteractions",
    "ShapleyValues",
    "Spread",
    "Stacked",
    "TransversalRates",
    "Trends",
    "ale",
    "ale_importance",
    "ale_interaction",
    "as_dataset",
    "as_predictor",
    "at_coded_values",
    "at_drawn_rows",
    "at_permuted_rows",
    "at_values",
    "combine_outputs",
    "decorrelation_importance",
    "default_memory_budget",
    "evaluate",
    "explain",
    "extract_weights",
    "filter_importance",
    "fit_mlp",
    "from_neuralnettools",
    "garson_importance",
    "gedeon_importance",
    "h_statistic",
    "impurity_importance",
    "linear_importance",
    "loco_importance",
    "make_friedman1",
    "make_linear",
    "mquantiles",
    "olden_importance",
    "partial_dependence",
    "partial_dependence_all",
    "partial_importance",
    "pd_importance",
    "pd_interaction",
    "permutation_importance",
    "plot_importances",
    "predict_rows",
    "sensitivity_importance",
    "shapley_interactions",
    "shapley_values",
    "transversal_rates",
    "tree_partial_dependence",
    "tree_predictor",
    "trends",
    "write_report",
]
