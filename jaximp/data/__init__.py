"""The data layer: datasets and feature metadata, grids, the parameter table and the checks of
the validating edge. Imports nothing else of jaximp's (only :mod:`jaximp.kernels`)."""

from ._checks import (
    as_key,
    check_bool,
    check_choice,
    check_int,
    output_index,
    select_outputs,
)
from ._data import Dataset, Feature, as_dataset, is_text
from ._datasets import make_friedman1, make_linear
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
    GRID_STRATEGIES,
    PERCENTILES,
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
    Index,
    Int,
    Interval,
    Real,
    Replicates,
    renamed_keywords,
    validate_params,
)
from ._shapes import InputLayout, input_groups, input_map

__all__ = [
    "Choice",
    "Dataset",
    "Feature",
    "Flag",
    "GRID_STRATEGIES",
    "Index",
    "InputLayout",
    "Int",
    "Interval",
    "PERCENTILES",
    "Real",
    "Replicates",
    "SHARED",
    "as_dataset",
    "as_key",
    "check_bool",
    "check_choice",
    "check_int",
    "check_n_bootstrap",
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
