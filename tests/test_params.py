"""The declarative parameter tables: every listed option of every public function is refused
with the table's message before the model is called."""

import inspect
import re

import numpy as np
import pytest

import jaximp
import jaximp.engine._engine
from jaximp.data._params import (
    SHARED,
    Choice,
    Flag,
    Int,
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
    return CountingModel()


# one valid call per public function that has a parameter table
def _tree():
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(max_depth=2).fit(X, Y)


CALLS = {
    "permutation_importance": lambda f, model, **kw: f(model, X, Y, **kw),
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
}


def _tabled():
    return {name: getattr(jaximp, name) for name in jaximp.__all__
            if hasattr(getattr(jaximp, name), "__jaximp_params__")}


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
    ]
    for rule, value, error, message in cases:
        with pytest.raises(error) as err:
            rule.check("n", value)
        assert str(err.value) == message
    for rule, good in [(Int(2), np.int64(2)), (Int(1, none=True), None), (Real(0, 1), 1),
                       (Real(0), np.float32(0.5)), (Choice("a"), "a"), (Flag(), np.bool_(True))]:
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


def test_shared_keywords_have_one_rule_everywhere():
    """memory_budget, progress, random_state and output are declared once (SHARED) and
    every function with the parameter checks it with that same rule."""
    for name, function in _tabled().items():
        parameters = inspect.signature(function).parameters
        for keyword, rule in SHARED.items():
            if keyword in parameters:
                assert function.__jaximp_params__[keyword] is rule, (name, keyword)


def _evaluations_refused(monkeypatch):
    def no_evaluation(*args, **kwargs):
        raise AssertionError("the model was evaluated before the bad option was refused")

    monkeypatch.setattr(jaximp.engine._engine, "_run_jax", no_evaluation)
    monkeypatch.setattr(jaximp.engine._engine, "_run_host", no_evaluation)


@pytest.mark.parametrize("name", sorted(n for n, f in _tabled().items()
                                        if "output" in inspect.signature(f).parameters))
@pytest.mark.parametrize("output, message", [
    (5, "output index 5 is out of range for a model with 1 outputs"),
    ("nope", r"output must be one of \['y'\]; got 'nope'"),
    (1.5, r"output must be an output index or name, a non-empty list of them or None; got 1.5"),
])
def test_a_bad_output_is_refused_before_any_evaluation(name, output, message, monkeypatch):
    _evaluations_refused(monkeypatch)
    with pytest.raises((ValueError, TypeError), match=message):
        CALLS[name](_tabled()[name], CountingModel(), output=output)


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
