"""The methods: one module per method family, each a plan, a reducer and a result over the
engine (or a pure kernel, for the weight and filter methods), sharing the setup of
:mod:`._setup` and the losses of :mod:`._loss`. Imports every layer below; the user layer
(``explain``, reports, the command line) imports it."""

from ._ale import AccumulatedLocalEffects, ale, ale_importance, ale_interaction
from ._average_loss import average_loss
from ._break_down import break_down
from ._booster_importance import booster_importance
from ._conditional import ConditionalImportance, conditional_importance
from ._decorrelation import decorrelation_importance
from ._filters import filter_importance
from ._gradient_interactions import IntegratedHessians, dgsm, gradient_interactions
from ._gradients import (
    Attributions,
    expected_gradients,
    input_x_gradient,
    integrated_gradients,
    saliency,
    smoothgrad,
)
from ._hstat import h_statistic
from ._hstat_result import HStatistic
from ._linear import linear_importance
from ._loco import loco_importance
from ._loss import LOSSES, check_target
from ._nn_weights import (
    NeuralNetToolsWeights,
    extract_weights,
    from_neuralnettools,
    garson_importance,
    gedeon_importance,
    olden_importance,
)
from ._partial_importance import PartialImportance, partial_importance
from ._pd import (
    PartialDependence,
    PartialDependences,
    partial_dependence,
    partial_dependence_all,
    planned_pd,
)
from ._pd_importance import pd_importance, pd_interaction
from ._pd_measures import MEASURE_RULE, importance_from_pds, interaction_from_pds
from ._permutation import permutation_importance
from ._perturbation_attributions import ablation_attributions, permutation_attributions
from ._sage import SageImportance, sage_importance
from ._sensitivity import sensitivity_importance
from ._setup import (background_dataset, bootstrap_weights, prepare, read_only_copy,
                     recorded_runs, repeated_call_key, rows_dataset)
from ._shapley import (
    ShapleyInteractions,
    ShapleyValues,
    shapley_interactions,
    shapley_values,
)
from ._sobol import SobolIndices, sobol_indices
from ._tree_stats import (
    TransversalRates,
    impurity_importance,
    transversal_rates,
    tree_partial_dependence,
)
from ._tree_shap import tree_shap
from ._trends import Trends, trends

__all__ = [
    "LOSSES",
    "MEASURE_RULE",
    "AccumulatedLocalEffects",
    "Attributions",
    "ConditionalImportance",
    "HStatistic",
    "IntegratedHessians",
    "NeuralNetToolsWeights",
    "PartialDependence",
    "PartialDependences",
    "PartialImportance",
    "SageImportance",
    "ShapleyInteractions",
    "ShapleyValues",
    "SobolIndices",
    "TransversalRates",
    "Trends",
    "ablation_attributions",
    "ale",
    "ale_importance",
    "ale_interaction",
    "average_loss",
    "break_down",
    "background_dataset",
    "bootstrap_weights",
    "booster_importance",
    "check_target",
    "conditional_importance",
    "decorrelation_importance",
    "dgsm",
    "expected_gradients",
    "extract_weights",
    "filter_importance",
    "from_neuralnettools",
    "garson_importance",
    "gedeon_importance",
    "gradient_interactions",
    "h_statistic",
    "importance_from_pds",
    "impurity_importance",
    "input_x_gradient",
    "integrated_gradients",
    "interaction_from_pds",
    "linear_importance",
    "loco_importance",
    "olden_importance",
    "partial_dependence",
    "partial_dependence_all",
    "partial_importance",
    "pd_importance",
    "pd_interaction",
    "permutation_attributions",
    "permutation_importance",
    "planned_pd",
    "prepare",
    "read_only_copy",
    "recorded_runs",
    "repeated_call_key",
    "rows_dataset",
    "sage_importance",
    "saliency",
    "sensitivity_importance",
    "shapley_interactions",
    "shapley_values",
    "smoothgrad",
    "sobol_indices",
    "transversal_rates",
    "tree_partial_dependence",
    "tree_shap",
    "trends",
]
