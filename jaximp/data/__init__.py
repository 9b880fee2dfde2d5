"""The data layer: datasets and feature metadata, grids, the parameter table and the checks of
the validating edge. Imports nothing else of jaximp's (only :mod:`jaximp.kernels`)."""

from ._checks import (
    PositiveClass,
    as_key,
    check_bool,
    check_choice,
    check_int,
    default_output,
    output_index,
    select_outputs,
)
from ._data import Dataset, Feature, as_dataset, is_text
from ._datasets import make_friedman1, make_linear
from ._deferred import Deferred, ReadsDeferred
from ._edge import (
    check_n_bootstrap,
    mean_abs_over_rows,
    numeric_matrix,
    replicate_weights,
    resolve_feature_sets,
    resolve_pairs,
    row_weights,
    summaries,
)
from ._grid import (
    feature_grid,
    mquantiles,
    product_grid_index,
    resolve_grid,
    validate_grid_options,
)
from ._params import (
    SHARED,
    Choice,
    Flag,
    Int,
    Real,
    Replicates,
    renamed_keywords,
    validate_params,
)
from ._shapes import InputLayout, input_groups, input_map

__all__ = [
    "Choice",
    "Dataset",
    "Deferred",
    "Feature",
    "Flag",
    "InputLayout",
    "Int",
    "PositiveClass",
    "Real",
    "ReadsDeferred",
    "Replicates",
    "SHARED",
    "as_dataset",
    "as_key",
    "check_bool",
    "check_choice",
    "check_int",
    "check_n_bootstrap",
    "default_output",
    "feature_grid",
    "input_groups",
    "input_map",
    "is_text",
    "make_friedman1",
    "make_linear",
    "mean_abs_over_rows",
    "mquantiles",
    "numeric_matrix",
    "output_index",
    "product_grid_index",
    "renamed_keywords",
    "replicate_weights",
    "resolve_feature_sets",
    "resolve_grid",
    "resolve_pairs",
    "row_weights",
    "select_outputs",
    "summaries",
    "validate_grid_options",
    "validate_params",
]
