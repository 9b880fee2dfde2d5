"""The model layer: adapters that turn anything that predicts into a pure ``predict(X)``
(JAX and Flax/Equinox models, host models such as scikit-learn's, fitted trees read into
node arrays) and the MLP. Imports only the data layer and :mod:`jaximp.kernels`."""

from ._boosting import boosting_library, check_columns, stored_names, training_codes
from ._dlpack import DLPackModel
from ._host import HostData, call_host, probe_rows
from ._mlp import (
    ACTIVATIONS,
    MLP,
    fit_mlp,
    fit_mlp_options,
    init_mlp_params,
    standardization,
    train_mlp_params,
)
from ._model import (as_2d_output, as_predictor, combine_outputs, gradient_predictor,
                     predicts_class_labels, probability_classifier, response_predictor)
from ._predictor import Predictor, stable_apply
from ._trees import (
    read_boosted,
    read_trees,
    split_goes_left,
    tree_float_dtype,
    tree_predictor,
)

__all__ = [
    "ACTIVATIONS",
    "DLPackModel",
    "HostData",
    "MLP",
    "Predictor",
    "as_2d_output",
    "as_predictor",
    "boosting_library",
    "call_host",
    "check_columns",
    "combine_outputs",
    "fit_mlp",
    "fit_mlp_options",
    "gradient_predictor",
    "init_mlp_params",
    "predicts_class_labels",
    "probability_classifier",
    "response_predictor",
    "probe_rows",
    "read_boosted",
    "read_trees",
    "split_goes_left",
    "stable_apply",
    "stored_names",
    "standardization",
    "train_mlp_params",
    "tree_float_dtype",
    "training_codes",
    "tree_predictor",
]
