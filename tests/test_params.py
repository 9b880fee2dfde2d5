"""The declarative parameter tables: every listed option of every public function is refused
with the table's message before the model is called."""

import numpy as np
import pytest

import jaximp
from jaximp.data._params import Choice, Flag, Int, Real, Replicates, validate_params

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
CALLS = {
    "permutation_importance": lambda f, model, **kw: f(model, X, Y, **kw),
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
