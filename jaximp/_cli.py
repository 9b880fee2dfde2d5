"""The ``jaximp`` command: explain a model on data and write a report."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.util
import inspect
import os
import pathlib
import shlex
import sys
import time

import numpy as np

from ._version import __version__
from .data import make_friedman1
from .models import fit_mlp

__all__ = ["main"]

_DESCRIPTION = "jaximp explains a fitted model: which features matter, and which act together."
_EPILOG = 'Run "jaximp COMMAND --help" to see the options of a command.'

_EXPLAIN_DESCRIPTION = """\
Explain your model on your data with several methods at once, and write a report folder:
report.html (one self-contained page), report.md with PNG figures, and the raw numbers as
CSV and JSON files."""

_EXPLAIN_EPILOG = """\
the model:
  --model names one object in a Python file (FILE.py:NAME) or in a module you can import
  (MODULE:NAME). It is either the model itself: a function that takes a 2-D array of the
  feature columns and returns predictions, a Flax or Equinox module, or an object with a
  predict method (scikit-learn); or a function with no arguments that returns the model.
  jaximp runs that file or module (as Python's import does) and uses only the object named.

the data:
  Every column except the target is a feature, in the file's order; text columns become
  categorical features. Parquet files need the pyarrow package.

methods (default: pd_importance pd_interaction h_statistic permutation sensitivity, with
garson and olden for networks whose weights jaximp can read, and loco when --fit is given):
  pd_importance   how far each feature's partial dependence is from flat
  pd_interaction  how much the partial dependence of a pair is not additive
  h_statistic     Friedman's H: the share of the prediction's variance due to interactions
  permutation     how much the loss grows when a feature's values are shuffled
  loco            how much the loss grows when the model is refitted without a feature
  sensitivity     how much the prediction moves when a feature is redrawn (Huh and Lee)
  garson, olden   importance read from a neural network's weights

examples:
  jaximp explain --model model.py:model --data train.csv --target price --out report
  jaximp explain --model mypackage.models:build --data data.parquet --target y \\
      --out report --methods pd_importance permutation --seed 1"""


class _UsageError(Exception):
    """A problem with the user's input, shown as one line without a traceback."""


@contextlib.contextmanager
def _on_path(folder: str):
    """``folder`` first on ``sys.path`` while the user's code is imported."""
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)


def _load_object(spec: str, option: str):
    """The object named by ``FILE.py:NAME`` or ``MODULE:NAME`` (NAME may be dotted)."""
    source, _, name = spec.rpartition(":")
    if not source or not name:
        raise _UsageError(f"{option} must be FILE.py:NAME or MODULE:NAME, e.g. model.py:model; "
                          f"got {spec!r}.")
    if source.endswith(".py") or os.sep in source or "/" in source:
        path = pathlib.Path(source)
        if not path.is_file():
            raise _UsageError(f"{option}: file {source!r} not found.")
        module_name = f"_jaximp_user_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(loader_spec)
        try:
            with _on_path(str(path.resolve().parent)):
                loader_spec.loader.exec_module(module)
        except Exception as error:  # noqa: BLE001 - the user's code, reported in one line
            raise _UsageError(f"{option}: running {source!r} failed: "
                              f"{type(error).__name__}: {error}") from None
    else:
        try:
            with _on_path(os.getcwd()):
                module = importlib.import_module(source)
        except ModuleNotFoundError as error:
            raise _UsageError(f"{option}: cannot import module {source!r} ({error}); run from "
                              "the folder that holds it or give FILE.py:NAME.") from None
        except Exception as error:  # noqa: BLE001
            raise _UsageError(f"{option}: importing {source!r} failed: "
                              f"{type(error).__name__}: {error}") from None
    target = module
    for part in name.split("."):
        if not hasattr(target, part):
            raise _UsageError(f"{option}: {source!r} has no {name!r}.")
        target = getattr(target, part)
    return target


def _is_factory(obj) -> bool:
    """A class, or a function that needs no arguments (a model needs at least X)."""
    if not callable(obj) or (hasattr(obj, "predict") and not isinstance(obj, type)):
        return False
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return not required


def _load_model(spec: str):
    model = _load_object(spec, "--model")
    if _is_factory(model):
        try:
            model = model()
        except Exception as error:  # noqa: BLE001
            raise _UsageError(f"--model: calling {spec}() to build the model failed: "
                              f"{type(error).__name__}: {error}") from None
    return model


def _load_data(path: str):
    import pandas as pd

    file = pathlib.Path(path)
    if not file.is_file():
        raise _UsageError(f"--data: file {path!r} not found.")
    suffix = file.suffix.lower()
    try:
        if suffix == ".csv":
            return pd.read_csv(file)
        if suffix == ".txt":  # commas, tabs or semicolons, found from the file itself
            return pd.read_csv(file, sep=None, engine="python")
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(file)
    except ImportError as error:
        raise _UsageError(f"--data: reading Parquet needs pyarrow (pip install pyarrow): "
                          f"{error}") from None
    except Exception as error:  # noqa: BLE001 - a malformed file, reported in one line
        raise _UsageError(f"--data: cannot read {path!r}: {type(error).__name__}: "
                          f"{error}") from None
    raise _UsageError(f"--data must be a .csv (or .txt) or .parquet file; got {path!r}.")


def _split(frame, path: str, target: str, features):
    """Features (text columns as categories) and the numeric target."""
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    if target not in columns:
        raise _UsageError(f"--target: column {target!r} is not in {path!r}; its columns are "
                          f"{columns}.")
    for name in features or ():
        if name not in columns or name == target:
            raise _UsageError(f"--features: column {name!r} is not a feature column of "
                              f"{path!r}; choose from {[c for c in columns if c != target]}.")
    y = frame[target]
    if y.isna().any():
        raise _UsageError(f"--target: column {target!r} has {int(y.isna().sum())} missing "
                          "values; drop those rows first.")
    X = frame.drop(columns=[target])
    for column in X.columns:
        if not (pd.api.types.is_numeric_dtype(X[column])
                or isinstance(X[column].dtype, pd.CategoricalDtype)):
            X[column] = X[column].astype("category")
    # numbers stay numbers; class labels (text) stay labels, scored as a classifier's
    return X, (y.to_numpy(np.float64) if pd.api.types.is_numeric_dtype(y) else y.to_numpy())


def _probe(model, X, path: str, spec: str) -> None:
    """Check the data, then call the model on its first rows, so that bad data or a model
    that cannot run fails clearly before any long work."""
    from .data import as_dataset
    from .engine import predict_rows
    from .methods import prepare

    try:
        holes = np.isnan(as_dataset(X, allow_missing=True).X).any(axis=1)
    except (ValueError, TypeError) as error:
        raise _UsageError(f"--data: {path!r}: {error}") from None
    complete = X[~holes] if not holes.all() else X
    try:
        dataset, predictor = prepare(model, complete.iloc[: min(len(complete), 8)])
        predict_rows(predictor, dataset)
    except Exception as error:  # noqa: BLE001 - the user's model, reported in one line
        raise _UsageError(
            f"--model: the model from {spec} cannot be called on the data's first rows "
            f"({X.shape[1]} feature columns): {type(error).__name__}: {error}") from None
    if holes.any() and not (predictor.host or predictor.handles_missing):
        raise _UsageError(
            f"--data: {path!r} has missing values (NaN) in {int(holes.sum())} rows, and the "
            f"model from {spec} runs in JAX, which cannot take them: impute or drop them "
            "first, or explain a model that handles them (scikit-learn's HistGradientBoosting, "
            "a Pipeline with an imputer, a boosting library's model).")


def _command(argv) -> str:
    return "jaximp " + shlex.join(argv)


def run_explain(args, argv) -> pathlib.Path:
    """``jaximp explain``: load the model and data, explain, write the report."""
    from ._explain import explain
    from ._report import check_out, write_report

    check_out(args.out)
    frame = _load_data(args.data)
    X, y = _split(frame, args.data, args.target, args.features)
    model = _load_model(args.model)
    fit = _load_object(args.fit, "--fit") if args.fit else None
    _probe(model, X, args.data, args.model)
    try:
        output = None if args.output is None else [
            int(o) if o.lstrip("-").isdigit() else o for o in args.output]
        explanation = explain(model, X, y, methods=args.methods, features=args.features,
                              fit=fit, output=output, loss=args.loss,
                              grid_resolution=args.grid_resolution,
                              n_bootstrap=args.n_bootstrap, random_state=args.seed,
                              progress=not args.quiet)
    except (ValueError, TypeError) as error:  # jaximp's checks of the input, in one line
        raise _UsageError(str(error)) from None
    return write_report(
        explanation, args.out, title=args.title or f"jaximp report: {args.model}",
        command=_command(argv),
        data_description=f"`{args.data}`: {len(frame)} rows, {X.shape[1]} feature columns, "
                         f"target `{args.target}`.",
        model_description=f"`{args.model}`.")


def demo(out: str, n: int, steps: int, seed: int, command: str = "jaximp demo") -> pathlib.Path:
    """Fit MLPs on Friedman #1, explain them with every method, write the report ``out``."""

    from ._explain import explain
    from ._report import ReportSection, check_out, write_report

    def log(message: str) -> None:
        from .engine import is_main_process

        if is_main_process():
            print(message, flush=True)

    check_out(out)
    start = time.perf_counter()
    X, y = make_friedman1(n=n, noise=1.0, random_state=seed)
    X_test, y_test = make_friedman1(n=2000, noise=1.0, random_state=seed + 1)
    fit = functools.partial(fit_mlp, hidden=(64, 64), steps=steps, learning_rate=3e-3,
                            l2=2.0)
    model = fit(X, y, random_state=seed)

    def r2(net) -> float:
        residual = np.asarray(net(X_test.to_numpy())) - y_test
        return float(1 - np.mean(residual ** 2) / np.var(y_test))

    log(f"fitted MLP [10, 64, 64, 1] in {time.perf_counter() - start:.1f}s; held-out R^2 = "
        f"{r2(model):.3f}")
    explanation = explain(model, X, y, fit=fit, n_bootstrap=30, random_state=seed,
                          options={"h_statistic": {"n_max": 300},
                                   "permutation": {"n_repeats": 20}})
    for step, seconds in explanation.timings.items():
        log(f"{step}: {seconds:.1f}s")

    # Greenwell et al. (2018), Figure 4: weight-based methods on a small network.
    small = fit_mlp(X, y, hidden=(8,), activation="sigmoid", l2=0.01, steps=3000,
                           learning_rate=1e-2, random_state=seed)
    weights = explain(small, X, methods=["pd_importance", "garson", "olden"],
                      random_state=seed, progress=False)
    table = weights.importances()
    ranks = table.rank(ascending=False).astype(int).add_suffix("_rank")
    signal = {"x1", "x2", "x3", "x4", "x5"}
    notes = []
    for method in table.columns:
        wrong = [(a, b) for a in table.index if a not in signal for b in signal
                 if table.loc[a, method] > table.loc[b, method]]
        example = f", e.g. {', '.join(f'{a} > {b}' for a, b in wrong[:4])}" if wrong else ""
        notes.append(f"- {method}: a noise feature above a signal feature in {len(wrong)} "
                     f"pair{'' if len(wrong) == 1 else 's'}{example}")
    section = ReportSection(
        title="PD importance vs Garson vs Olden on a small network",
        text=(f"As in Greenwell et al. (2018), Figure 4: a network with 8 logistic hidden "
              f"units and weight decay 0.01 (held-out R^2 = {r2(small):.3f}). Olden's "
              "signed values are ranked by magnitude.\n\n" + "\n".join(sorted(notes))),
        tables=[("Importances and ranks",
                 table.join(ranks).reset_index(names="feature")),
                ("Kendall's tau-b between the rankings",
                 weights.agreement().reset_index(names="method"))],
        figures=[("small_network.png", weights.plot())])
    path = write_report(
        explanation, out, title="jaximp demo report", command=command,
        description="A ReLU network fitted to Friedman's first benchmark function, explained "
                    "by every method of jaximp.",
        data_description=(
            "Friedman #1: `y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 + e`, "
            f"n = {n}, noise sd 1; x6 to x10 are pure noise. Only x1 and x2 interact."),
        model_description=(
            f"ReLU MLP [10, 64, 64, 1] fitted with Optax ({steps} steps, weight decay 2); "
            f"held-out R^2 = {r2(model):.3f} on 2,000 new rows. LOCO refits it without each "
            "feature (10 refits as one vmapped training job)."),
        sections=[section])
    log(f"report written to {path / 'report.html'} in {time.perf_counter() - start:.1f}s")
    return path


def _parser():
    from ._explain import METHODS
    from .methods import LOSSES

    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="jaximp", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=formatter)
    parser.add_argument("--version", action="store_true",
                        help="print the versions of jaximp and JAX, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    run = sub.add_parser("demo", help="write an example report on built-in data",
                         description="Fit a neural network on Friedman's benchmark data, "
                         "explain it with every method and write a report folder.")
    run.add_argument("--out", default="jaximp-report",
                     help="report folder (default: jaximp-report)")
    run.add_argument("--n", type=int, default=500, help="rows of data (default: 500)")
    run.add_argument("--steps", type=int, default=1500,
                     help="training steps of the network (default: 1500)")
    run.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    ex = sub.add_parser("explain", help="explain your own model on your own data (CSV or "
                        "Parquet) and write a report",
                        description=_EXPLAIN_DESCRIPTION, epilog=_EXPLAIN_EPILOG,
                        formatter_class=formatter)
    ex.add_argument("--model", required=True, metavar="FILE.py:NAME|MODULE:NAME",
                    help="the model, or a function with no arguments that returns it")
    ex.add_argument("--data", required=True, metavar="FILE",
                    help="a .csv (or .txt, its separator found from the file) or .parquet "
                    "file holding the features and the target")
    ex.add_argument("--target", required=True, metavar="COLUMN",
                    help="the column the model predicts")
    ex.add_argument("--out", required=True, metavar="FOLDER",
                    help="report folder; an earlier report there is replaced")
    ex.add_argument("--methods", nargs="+", choices=METHODS, metavar="METHOD",
                    help="methods to run (see below)")
    ex.add_argument("--features", nargs="+", metavar="COLUMN",
                    help="features to score (default: every column but the target)")
    ex.add_argument("--fit", metavar="FILE.py:NAME|MODULE:NAME",
                    help="a function fit(X, y) returning a new model, for loco")
    ex.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    ex.add_argument("--grid-resolution", type=int, default=21, metavar="G",
                    help="grid points per feature for partial dependence (default: 21)")
    ex.add_argument("--n-bootstrap", type=int, default=0, metavar="R",
                    help="bootstrap replicates for intervals on PD methods and H (default: 0)")
    ex.add_argument("--output", nargs="+", metavar="OUTPUT",
                    help="model outputs to explain, by index or name (e.g. a class label); "
                    "default: every output, with the figures showing the positive class of "
                    "a binary classifier (the second output), else the first; --output 0 "
                    "shows class 0")
    ex.add_argument("--loss", choices=LOSSES, metavar="LOSS",
                    help=f"loss of permutation importance and LOCO, one of {', '.join(LOSSES)} "
                    "(default: accuracy for a classifier, else mse)")
    ex.add_argument("--quiet", action="store_true",
                    help="no progress bar on stderr (default: one bar over the methods)")
    ex.add_argument("--title", help="title of the report")
    return parser


def main(argv=None) -> int:
    """Run the ``jaximp`` command with ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        import jax

        print(f"jaximp {__version__} (JAX {jax.__version__})")
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    import matplotlib

    matplotlib.use("Agg")  # figures go to files; no display needed
    try:
        if args.command == "demo":
            demo(args.out, args.n, args.steps, args.seed, command=_command(argv))
        else:
            path = run_explain(args, argv)
            print(f"report written to {path / 'report.html'}")
    except (_UsageError, OSError) as error:
        message = str(error)
        if isinstance(error, OSError) and error.filename is not None:
            # an --out folder that cannot be made or written
            message = (f"cannot write {error.filename}: {error.strerror}. Pass an --out "
                       "folder you can write to.")
        elif isinstance(error, OSError) and not isinstance(error, FileExistsError):
            raise  # not the report's folder: the traceback says where
        print(f"jaximp: error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
