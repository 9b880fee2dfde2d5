"""The declarative parameter tables: every listed option of every public function is refused
with the table's message before the model is called."""

import functools
import inspect
import pathlib
import re
import tempfile

import jax
import numpy as np
import pytest

import jaximp
import jaximp.engine._engine
from jaximp.data._params import (
    SHARED,
    Choice,
    Flag,
    Index,
    Int,
    Interval,
    Real,
    Replicates,
    validate_params,
)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = X @ np.array([1.0, -1.0, 0.5])


class CountingModel:
    """A linear model that counts how often it is called."""

    def __init__(self):
        self.calls = 0

    def __call__(self, A):
        self.calls += 1
        return A @ np.array([1.0, -1.0, 0.5])


def _fit(A, b):
    """A least-squares refit on the columns it is given (LOCO refits without one column)."""
    coef = np.linalg.lstsq(A, b, rcond=None)[0]
    return lambda rows: rows @ coef


# one valid call per public function that has a parameter table
def _tree():
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(max_depth=2).fit(X, Y)


@functools.cache
def _booster():
    lightgbm = pytest.importorskip("lightgbm")
    return lightgbm.LGBMRegressor(n_estimators=2, num_leaves=3, min_child_samples=5,
                                  verbose=-1).fit(X, Y)


def _weights():
    """A 3-2-1 network as its weight matrices (no biases)."""
    return [np.array([[1.0, -2.0], [0.5, 0.1], [0.0, 0.3]]), np.array([[1.0], [-1.0]])]


@functools.cache
def _importance():
    return jaximp.garson_importance(_weights())


@functools.cache
def _explanation():
    return jaximp.explain(CountingModel(), X, Y, methods=["permutation"], progress=False)


def _report_folder():
    return pathlib.Path(tempfile.mkdtemp()) / "report"


CALLS = {
    "permutation_importance": lambda f, model, **kw: f(model, X, Y, **kw),
    "average_loss": lambda f, model, **kw: f(model, X, Y, **kw),
    "conditional_importance": lambda f, model, **kw: f(model, X, Y, **kw),
    "sage_importance": lambda f, model, **kw: f(model, X, Y, **kw),
    "sobol_indices": lambda f, model, **kw: f(model, X, **kw),
    "tree_shap": lambda f, model, **kw: f(_tree(), X, **kw),  # a model with trees to read
    "integrated_gradients": lambda f, model, **kw: f(model, X, **kw),
    "expected_gradients": lambda f, model, **kw: f(model, X, **kw),
    "smoothgrad": lambda f, model, **kw: f(model, X, **kw),
    "saliency": lambda f, model, **kw: f(model, X, **kw),
    "permutation_attributions": lambda f, model, **kw: f(model, X, **kw),
    "ablation_attributions": lambda f, model, **kw: f(model, X, **kw),
    "input_x_gradient": lambda f, model, **kw: f(model, X, **kw),
    "dgsm": lambda f, model, **kw: f(model, X, **kw),
    "gradient_interactions": lambda f, model, **kw: f(model, X, **kw),
    "loco_importance": lambda f, model, **kw: f(model, X, Y, **({"fit": _fit} | kw)),
    "sensitivity_importance": lambda f, model, **kw: f(model, X, Y, **kw),
    "linear_importance": lambda f, model, **kw: f(X, Y, **kw),
    "filter_importance": lambda f, model, **kw: f(X, Y, **kw),
    "partial_dependence": lambda f, model, **kw: f(model, X, 0, **kw),
    "partial_dependence_all": lambda f, model, **kw: f(model, X, **kw),
    "pd_importance": lambda f, model, **kw: f(model, X, **kw),
    "pd_interaction": lambda f, model, **kw: f(model, X, **kw),
    "h_statistic": lambda f, model, **kw: f(model, X, **kw),
    "shapley_values": lambda f, model, **kw: f(model, X, **kw),
    "break_down": lambda f, model, **kw: f(model, X[:3], X, **kw),
    "partial_importance": lambda f, model, **kw: f(model, X, Y, 0, **kw),
    "explain": lambda f, model, **kw: f(model, X, Y, **kw),
    "ale": lambda f, model, **kw: f(model, X, 0, **kw),
    "ale_importance": lambda f, model, **kw: f(model, X, **kw),
    "ale_interaction": lambda f, model, **kw: f(model, X, **kw),
    "decorrelation_importance": lambda f, model, **kw: f(X, Y, **kw),
    "shapley_interactions": lambda f, model, **kw: f(model, X[:2], X, **kw),
    "evaluate": lambda f, model, **kw: f(
        jaximp.as_predictor(CountingModel(), n_features=3), X,
        jaximp.at_values(np.eye(3, dtype=bool), [0], np.zeros((1, 3)), [0]),
        jaximp.Mean(np.ones((1, len(X)))), **kw),
    "predict_rows": lambda f, model, **kw: f(jaximp.as_predictor(CountingModel(), n_features=3),
                                             X, **kw),
    "trends": lambda f, model, **kw: f(model, X, Y, **(
        {"shapley": X[:, :, None], "methods": ["pearson", "shapley_pearson"]} | kw)),
    "impurity_importance": lambda f, model, **kw: f(_tree(), **kw),
    "tree_partial_dependence": lambda f, model, **kw: f(_tree(), X, 0, **kw),
    "transversal_rates": lambda f, model, **kw: f(_tree(), **kw),
    "tree_predictor": lambda f, model, **kw: f(_tree(), **kw),
    "booster_importance": lambda f, model, **kw: f(_booster(), **kw),
    "garson_importance": lambda f, model, **kw: f(_weights(), **kw),
    "olden_importance": lambda f, model, **kw: f(_weights(), **kw),
    "gedeon_importance": lambda f, model, **kw: f(_weights(), **kw),
    "extract_weights": lambda f, model, **kw: f(_weights(), **kw),
    "from_neuralnettools": lambda f, model, **kw: f(np.ones(11), [3, 2, 1], **kw),
    "fit_mlp": lambda f, model, **kw: f(X, Y, **({"hidden": (2,), "steps": 1} | kw)),
    "as_predictor": lambda f, model, **kw: f(model, **({"n_features": 3} | kw)),
    "combine_outputs": lambda f, model, **kw: f(model, **({"n_features": 3} | kw)),
    "plot_importances": lambda f, model, **kw: f([_importance()], **kw),
    "make_friedman1": lambda f, model, **kw: f(**({"n": 5} | kw)),
    "make_linear": lambda f, model, **kw: f(**({"n": 5} | kw)),
    "as_dataset": lambda f, model, **kw: f(X, **kw),
    "input_groups": lambda f, model, **kw: f((4, 4, 3), **({"axis": -1} | kw)),
    "input_map": lambda f, model, **kw: f(np.arange(3.0), (3,), **kw),
    "mquantiles": lambda f, model, **kw: f(X[:, 0], [0.1, 0.5], **kw),
    "write_report": lambda f, model, **kw: f(_explanation(), _report_folder(), **kw),
}

#: functions whose ``output`` is one output, not the shared rule's list of them, and their
#: message for an index out of range
ONE_OUTPUT = {
    "trends": r"output must be an index below 1 \(the Shapley values' outputs\); got 5\.",
    "transversal_rates": r"output index 5 is out of range for a model with 1 outputs\.",
    "plot_importances": r"output must be an index below 1 or an output name; got 5\.",
}


def _tabled():
    return {name: getattr(jaximp, name) for name in jaximp.__all__
            if hasattr(getattr(jaximp, name), "__jaximp_params__")}


# public functions without options to check: the plan builders take arrays, checked against
# each other when the plan is built, and default_memory_budget takes nothing
UNTABLED = {"at_values", "at_coded_values", "at_drawn_rows", "at_permuted_rows",
            "default_memory_budget"}


def test_every_public_function_declares_its_options():
    functions = {name for name in jaximp.__all__
                 if inspect.isfunction(getattr(jaximp, name))
                 or hasattr(getattr(jaximp, name), "__jaximp_params__")}
    assert functions - set(_tabled()) == UNTABLED


def test_every_tabled_function_is_exercised():
    assert set(_tabled()) == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bad_options_are_refused_before_any_model_call(name):
    function = _tabled()[name]
    for parameter, rule in function.__jaximp_params__.items():
        model = CountingModel()
        bad = rule.bad_value()
        with pytest.raises((ValueError, TypeError)) as err:
            CALLS[name](function, model, **{parameter: bad})
        assert str(err.value).startswith(f"{parameter} must be {rule.expected()}"), err.value
        assert f"got {bad!r}" in str(err.value)
        assert model.calls == 0


def test_rule_messages():
    cases = [
        (Int(2), 1, ValueError, "n must be an int >= 2; got 1."),
        (Int(1, none=True), 2.0, ValueError, "n must be an int >= 1 or None; got 2.0."),
        (Int(0), True, ValueError, "n must be an int >= 0; got True."),
        (Real(0), -1.0, ValueError, "n must be a finite number >= 0; got -1.0."),
        (Real(0, closed="neither"), 0.0, ValueError, "n must be a finite number > 0; got 0.0."),
        (Real(0, 1, "right"), 0, ValueError, "n must be a number in (0, 1]; got 0."),
        (Choice("a", "b", fix="Use 'a'."), "c", ValueError,
         "n must be one of ('a', 'b'); got 'c'. Use 'a'."),
        (Flag(), 1, TypeError, "n must be True or False; got 1."),
        (Replicates(), 1, ValueError, "n must be 0 (no bootstrap) or an int >= 2; got 1."),
        (Choice("a", also="explicit values"), "b", ValueError,
         "n must be one of ('a',) or explicit values; got 'b'."),
        (Index(), 1.0, TypeError, "n must be an int index; got 1.0."),
        (Index(names=True, none=True), True, TypeError,
         "n must be an int index or a name or None; got True."),
        (Interval(0, 1), (0.5, 0.5), ValueError,
         "n must be a pair (low, high) with 0 <= low < high <= 1; got (0.5, 0.5)."),
        (Interval(0, 1), "ab", ValueError,
         "n must be a pair (low, high) with 0 <= low < high <= 1; got 'ab'."),
        (Interval(0, 1), 0.5, ValueError,
         "n must be a pair (low, high) with 0 <= low < high <= 1; got 0.5."),
    ]
    for rule, value, error, message in cases:
        with pytest.raises(error) as err:
            rule.check("n", value)
        assert str(err.value) == message
    for rule, good in [(Int(2), np.int64(2)), (Int(1, none=True), None), (Real(0, 1), 1),
                       (Real(0), np.float32(0.5)), (Choice("a"), "a"), (Flag(), np.bool_(True)),
                       (Choice("a", also="values"), [1.0, 2.0]), (Index(), np.int32(-1)),
                       (Index(names=True), "y"), (Interval(0, 1), np.array([0.0, 1.0]))]:
        rule.check("n", good)


def test_decorator_checks_positional_and_keyword_arguments_and_names():
    @validate_params(k=Int(1))
    def f(a, k=1):
        return a * k

    assert f(2, 3) == 6 and f(2, k=np.int32(2)) == 4
    with pytest.raises(ValueError, match=r"^k must be an int >= 1; got 0\.$"):
        f(2, 0)
    with pytest.raises(TypeError, match=r"f has no parameters \['q'\]"):
        validate_params(q=Int(1))(f.__wrapped__)

    @validate_params(k=Int(1), m=Int(2))
    def g(a, k=1, *args, m=2):
        return a * k * m + len(args)

    assert g(1) == 2 and g(1, 2, 0, 0) == 6 and g(1, k=3, m=3) == 9
    for call in (lambda: g(1, 0), lambda: g(1, k=0), lambda: g(1, 2, 0, m=1)):
        with pytest.raises(ValueError, match=r"^[km] must be an int >= [12]"):
            call()


def test_shared_keywords_have_one_rule_everywhere():
    """memory_budget, progress, random_state and output are declared once (SHARED) and
    every function with the parameter checks it with that same rule, except the functions
    that take a single output (their own Index rule)."""
    for name, function in _tabled().items():
        parameters = inspect.signature(function).parameters
        for keyword, rule in SHARED.items():
            if keyword == "output" and name in ONE_OUTPUT:
                assert isinstance(function.__jaximp_params__[keyword], Index), name
            elif keyword in parameters:
                assert function.__jaximp_params__[keyword] is rule, (name, keyword)


def _evaluations_refused(monkeypatch):
    def no_evaluation(*args, **kwargs):
        raise AssertionError("the model was evaluated before the bad option was refused")

    monkeypatch.setattr(jaximp.engine._engine, "_jax_run", no_evaluation)
    monkeypatch.setattr(jaximp.engine._engine, "_run_host", no_evaluation)


@pytest.mark.parametrize("name", sorted(n for n, f in _tabled().items()
                                        if "output" in inspect.signature(f).parameters
                                        and n not in ONE_OUTPUT))
@pytest.mark.parametrize("output, message", [
    (5, "output index 5 is out of range for a model with 1 outputs"),
    ("nope", r"output must be one of \['y'\]; got 'nope'"),
    (1.5, r"output must be an output index or name, a non-empty list of them or None; got 1.5"),
])
def test_a_bad_output_is_refused_before_any_evaluation(name, output, message, monkeypatch):
    _evaluations_refused(monkeypatch)
    with pytest.raises((ValueError, TypeError), match=message):
        CALLS[name](_tabled()[name], CountingModel(), output=output)


@pytest.mark.parametrize("name, out_of_range", sorted(ONE_OUTPUT.items()))
def test_a_single_output_is_one_index_or_name(name, out_of_range, monkeypatch):
    """trends, transversal_rates and plot_importances read one output: a list or a bool is
    refused by the table, an index out of range by the data, before any evaluation."""
    _evaluations_refused(monkeypatch)
    function = _tabled()[name]
    for output in ([0], True):
        refused = rf"^output must be an int index.*; got {re.escape(repr(output))}"
        with pytest.raises(TypeError, match=refused):
            CALLS[name](function, CountingModel(), output=output)
    with pytest.raises(ValueError, match=out_of_range):
        CALLS[name](function, CountingModel(), output=5)


def test_random_state_none_draws_from_numpys_global_state_everywhere():
    """None means NumPy's global random state in every function (as scikit-learn), so two
    calls differ unless that state is seeded; an int seed is reproducible."""
    background = X[:12]
    calls = {
        "shapley_values": lambda rs: jaximp.shapley_values(
            CountingModel(), X[:2], background=X, background_size=12, random_state=rs).values,
        "permutation_importance": lambda rs: jaximp.permutation_importance(
            CountingModel(), X, Y, random_state=rs).importances,
    }
    for name, call in calls.items():
        np.random.seed(3)
        first = call(None)
        np.random.seed(3)
        np.testing.assert_array_equal(call(None), first, err_msg=name)
        assert not np.array_equal(call(None), first), name  # the global state moved on
        np.testing.assert_array_equal(call(0), call(0), err_msg=name)
    assert background.shape == (12, 3)


SHARED_DOCS = {
    "memory_budget": """memory_budget : int, optional
    Bytes the whole call may use beyond its result and the data (default
    :func:`jaximp.default_memory_budget`); a result that cannot fit is refused before any
    model evaluation.""",
    "progress": """progress : bool, optional
    A progress line on stderr (default: in an interactive terminal, for calls of more than
    one chunk, or with ``JAXIMP_PROGRESS=1``; process 0 only).""",
    "random_state": "random_state : int, JAX PRNG key, NumPy RandomState or Generator, or None, "
                    "default 0",
}


def _parameter_entries(doc: str) -> dict[str, str]:
    """numpydoc Parameters entries: each name -> its whole entry (a shared entry under
    every name it lists)."""
    doc = inspect.cleandoc(doc or "")
    section = re.search(r"Parameters\n-+\n(.*?)(?:\n\n[A-Z][a-z]+\n-+\n|\Z)", doc, re.S)
    entries, current = {}, []
    for line in (section.group(1) if section else "").splitlines():
        if line and not line.startswith(" "):
            current = [n.strip() for n in line.split(" : ")[0].split(",")]
            for n in current:
                entries[n] = line
        else:
            for n in current:
                entries[n] += "\n" + line
    return {n: e.rstrip() for n, e in entries.items()}


def test_shared_keywords_have_one_docstring():
    """Every public function documents memory_budget and progress with the one text (or
    refers to a function that does), and random_state with the one type line."""
    offenders = []
    for name in jaximp.__all__:
        function = getattr(jaximp, name)
        if inspect.isclass(function) or not callable(function):
            continue
        entries = _parameter_entries(function.__doc__)
        for keyword, text in SHARED_DOCS.items():
            if keyword not in inspect.signature(function).parameters:
                continue
            entry = entries.get(keyword)
            if entry is None:
                if not re.search(r"Parameters as in :func:", function.__doc__ or ""):
                    offenders.append(f"{name}: no entry for {keyword}")
            elif " : " not in entry.splitlines()[0]:  # shared: "a, b, c\n    As in ..."
                if not re.search(r"As (in )?:func:", entry):
                    offenders.append(f"{name}: {keyword} is neither documented nor referred")
            elif keyword == "random_state":
                if entry.splitlines()[0] != text:
                    offenders.append(f"{name}: {entry.splitlines()[0]!r}")
            elif entry != text and not (name == "explain" and keyword == "progress"):
                offenders.append(f"{name}: {keyword} reads {entry!r}")
    assert not offenders, offenders


def test_an_int_seed_makes_its_key_in_the_float_mode_of_the_call():
    """An int random_state's key is kept per float mode, and a seed of 2**32 or more makes
    the same key in both (without x64 jax.random.key would keep its low 32 bits only): its
    high bits folded into the key of its low ones."""
    from jaximp.data._checks import as_key

    seed = 2**40 + 7
    data = lambda: np.asarray(jax.random.key_data(as_key(seed)))  # noqa: E731
    folded = np.asarray(jax.random.key_data(jax.random.fold_in(jax.random.key(7), 2**8)))
    without = data()
    np.testing.assert_array_equal(without, folded)
    with jax.enable_x64(True):
        np.testing.assert_array_equal(data(), without)
    np.testing.assert_array_equal(data(), without)
    assert not np.array_equal(without, np.asarray(jax.random.key_data(as_key(7))))
