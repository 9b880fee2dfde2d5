"""The evaluation engine: plans (what to replace), reducers (what to keep), the chunked,
batched and sharded evaluation within a memory budget, several processes, precision checks
and PRNG keys. Imports only the model and data layers and :mod:`jaximp.kernels`."""

from ._device_arrays import plan_source_row_blocks, plan_source_rows
from ._distributed import is_main_process
from ._engine import (
    ProgressMeter,
    check_result_fits,
    default_memory_budget,
    evaluate,
    predict_rows,
    resolve_budget,
)
from ._plans import (Plan, at_coded_values, at_data_rows, at_drawn_rows, at_permuted_rows,
                     at_values)
from ._precision import PrecisionWarning, check_collapse, check_collapse_columns
from ._reducers import (
    CLASS_LOSSES,
    ROW_LOSSES,
    TARGET_LOSSES,
    FoldedMean,
    GroupedMean,
    Itemwise,
    Keep,
    LossSums,
    Mean,
    Reducer,
    Spread,
    Stacked,
    check_prediction_range,
    target_terms,
)
from ._rng import fold_in, key_bits, rng_stream, sample_rows, splitmix64

__all__ = [
    "CLASS_LOSSES",
    "FoldedMean",
    "GroupedMean",
    "Itemwise",
    "Keep",
    "LossSums",
    "Mean",
    "Plan",
    "PrecisionWarning",
    "ProgressMeter",
    "ROW_LOSSES",
    "Reducer",
    "Spread",
    "Stacked",
    "TARGET_LOSSES",
    "at_coded_values",
    "at_data_rows",
    "at_drawn_rows",
    "at_permuted_rows",
    "at_values",
    "check_collapse",
    "check_collapse_columns",
    "check_prediction_range",
    "check_result_fits",
    "default_memory_budget",
    "evaluate",
    "fold_in",
    "is_main_process",
    "key_bits",
    "plan_source_row_blocks",
    "plan_source_rows",
    "predict_rows",
    "resolve_budget",
    "rng_stream",
    "sample_rows",
    "splitmix64",
    "target_terms",
]
