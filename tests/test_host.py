"""Host batches in the user's own types (jaximp.models._host)."""

import numpy as np
import pandas as pd
import pytest

from jaximp.data._data import as_dataset
from jaximp.models._host import HostData, call_host, probe_rows


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 40
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.integers(0, 10, size=n),
            "c": pd.Categorical(rng.choice(["red", "green", "blue"], size=n),
                                categories=["blue", "green", "red"]),
            "d": rng.random(n) < 0.5,
            "e": rng.normal(size=n).astype(np.float32),
        },
        index=np.arange(100, 100 + n),  # a non-default index: batches get a fresh one
    )


def test_frame_round_trip_is_exact(frame):
    ds = as_dataset(frame)
    host = HostData(frame, ds)
    rows = np.array([5, 0, 39, 5, 17])
    got = host.batch(rows, ds.X[rows], range(ds.X.shape[1]))
    pd.testing.assert_frame_equal(got, frame.iloc[rows].reset_index(drop=True))
    # rows only, nothing replaced
    pd.testing.assert_frame_equal(host.batch(rows), frame.iloc[rows].reset_index(drop=True))


def test_frame_replaced_columns_are_decoded(frame):
    ds = as_dataset(frame)
    host = HostData(frame, ds)
    rows = np.array([3, 1, 2])
    values = np.zeros((3, 5))
    values[:, 1] = [7, 8, 9]  # integral: stays int
    values[:, 2] = [0, 2, 1]  # category codes
    values[:, 3] = [1, 0, 1]  # 0/1: stays bool
    got = host.batch(rows, values, [1, 2, 3])
    expected = frame.iloc[rows].reset_index(drop=True)
    expected["b"] = np.array([7, 8, 9], dtype=frame["b"].dtype)
    expected["c"] = pd.Categorical(["blue", "red", "green"], categories=["blue", "green", "red"])
    expected["d"] = [True, False, True]
    pd.testing.assert_frame_equal(got, expected)
    assert list(got.columns) == list(frame.columns)

    # non-integral ints and non-0/1 bools become float64; float32 stays float32
    values[:, 1] = [0.5, 1, 2]
    values[:, 3] = [0.25, 0, 1]
    values[:, 4] = [1.5, 2.5, 3.5]
    got = host.batch(rows, values, [1, 3, 4])
    assert got["b"].dtype == np.float64 and got["b"].tolist() == [0.5, 1, 2]
    assert got["d"].dtype == np.float64 and got["d"].tolist() == [0.25, 0, 1]
    assert got["e"].dtype == np.float32 and got["e"].tolist() == [1.5, 2.5, 3.5]
    assert got["c"].tolist() == frame["c"].iloc[rows].tolist()


def test_frame_bad_category_code_names_the_column(frame):
    ds = as_dataset(frame)
    host = HostData(frame, ds)
    values = np.zeros((1, 5))
    values[0, 2] = 3
    with pytest.raises(ValueError, match=r"column 'c' is categorical with 3 categories.*got 3"):
        host.batch(np.array([0]), values, [2])


def test_frame_nullable_dtypes():
    df = pd.DataFrame({"i": pd.array([1, 2, 3], dtype="Int64"), "x": [0.1, 0.2, 0.3]})
    ds = as_dataset(df)
    host = HostData(df, ds)
    rows = np.array([2, 0])
    pd.testing.assert_frame_equal(
        host.batch(rows, ds.X[rows], [0, 1]), df.iloc[rows].reset_index(drop=True)
    )
    # missing values (NaN in the coded matrix) decode to the column's own NA, not float64
    gaps = pd.DataFrame({"i": pd.array([1, None, 3], dtype="Int64"),
                         "b": pd.array([True, None, False], dtype="boolean")})
    ds = as_dataset(gaps, allow_missing=True)
    host = HostData(gaps, ds)
    rows = np.array([1, 0, 2])
    pd.testing.assert_frame_equal(host.batch(rows, ds.X[rows], [0, 1]),
                                  gaps.iloc[rows].reset_index(drop=True))


def test_frame_pyarrow_dtypes():
    """pandas' pyarrow-backed columns (numbers, booleans, text) read as their NumPy-backed
    twins do, and a host model's batches keep their dtypes."""
    pytest.importorskip("pyarrow")
    pa = pytest.importorskip("pyarrow")
    plain = pd.DataFrame({"x": [0.5, -1.0, 2.0], "b": [True, False, True],
                          "i": [3, 1, 2], "s": ["lo", "hi", "lo"], "d": ["lo", "hi", "lo"]})
    arrow = plain.convert_dtypes(dtype_backend="pyarrow").astype(
        {"d": pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))})  # levels lo, hi
    assert str(arrow["b"].dtype) == "bool[pyarrow]"
    ds, want = as_dataset(arrow), as_dataset(plain)
    np.testing.assert_array_equal(ds.X, want.X)
    assert ds.features == want.features
    host = HostData(arrow, ds)
    rows = np.array([2, 0])
    values = ds.X[rows].copy()
    values[:, [1, 4]] = [[0, 0], [1, 0]]  # booleans False, True; labels hi, hi
    got = host.batch(rows, values, [1, 4])
    assert got.dtypes.equals(arrow.dtypes) and got["b"].tolist() == [False, True]
    assert got["d"].tolist() == ["hi", "hi"]
    pd.testing.assert_frame_equal(got.drop(columns=["b", "d"]), arrow.iloc[rows].drop(
        columns=["b", "d"]).reset_index(drop=True))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_array_dtype_preserved(dtype):
    X = np.random.default_rng(1).normal(size=(30, 3)).astype(dtype)
    ds = as_dataset(X)
    host = HostData(X, ds)
    rows = np.array([4, 4, 29, 0])
    got = host.batch(rows, ds.X[rows], [0, 1, 2])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, X[rows])
    values = np.full((4, 3), 2.5)
    got = host.batch(rows, values, [1])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got[:, 1], 2.5)
    np.testing.assert_array_equal(got[:, [0, 2]], X[rows][:, [0, 2]])


def test_array_int_becomes_float_only_for_non_integral_values():
    X = np.arange(12).reshape(4, 3)
    ds = as_dataset(X)
    host = HostData(X, ds)
    rows = np.array([1, 3])
    got = host.batch(rows, np.full((2, 3), 5.0), [2])
    assert got.dtype == X.dtype and got.tolist() == [[3, 4, 5], [9, 10, 5]]
    got = host.batch(rows, np.full((2, 3), 5.5), [2])
    assert got.dtype == np.float64 and got.tolist() == [[3, 4, 5.5], [9, 10, 5.5]]


def test_batch_validates_shapes(frame):
    ds = as_dataset(frame)
    host = HostData(frame, ds)
    with pytest.raises(ValueError, match=r"values must have shape \(len\(rows\), n_columns\)"):
        host.batch(np.array([0, 1]), np.zeros((2, 2)), [0])
    with pytest.raises(ValueError, match="rows must be a 1-D integer array"):
        host.batch(np.array([0.0]), np.zeros((1, 5)), [0])
    with pytest.raises(ValueError, match="X_user has shape"):
        HostData(frame.iloc[:3], ds)


def test_probe_rows(frame):
    pd.testing.assert_frame_equal(probe_rows(frame), frame.iloc[:2].reset_index(drop=True))
    X = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(probe_rows(X, k=5), X)
    with pytest.raises(ValueError, match="k must be an int >= 1; got 0"):
        probe_rows(X, k=0)


def test_sklearn_pipeline_on_host_batch():
    compose = pytest.importorskip("sklearn.compose")
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(2)
    n = 60
    df = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.integers(0, 5, size=n),
            "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n)),
        }
    )
    y = df["a"] + 2 * df["b"] + df["c"].cat.codes + rng.normal(size=n) * 0.1
    model = Pipeline(
        [
            ("prep", compose.ColumnTransformer(
                [("num", StandardScaler(), ["a", "b"]), ("cat", OneHotEncoder(), ["c"])]
            )),
            ("lm", LinearRegression()),
        ]
    ).fit(df, y)
    ds = as_dataset(df)
    host = HostData(df, ds)
    rows = np.array([0, 10, 20, 59])
    values = ds.X[rows].copy()
    values[:, 0] = 0.75
    values[:, 2] = 2  # category "z"
    batch = host.batch(rows, values, [0, 2])
    equivalent = df.iloc[rows].reset_index(drop=True)
    equivalent["a"] = 0.75
    equivalent["c"] = pd.Categorical(["z"] * 4, categories=df["c"].cat.categories)
    got = call_host(model.predict, batch, "Pipeline.predict", n_outputs=1)
    assert got.shape == (4, 1) and got.dtype == np.float64
    np.testing.assert_array_equal(got[:, 0], model.predict(equivalent))


def test_call_host_shapes_and_errors():
    X = np.ones((3, 2))
    assert call_host(lambda A: A, X, "identity").shape == (3, 2)
    assert call_host(lambda A: A[:, 0].astype(np.float32), X, "first").dtype == np.float64
    with pytest.raises(ValueError, match=r"the model short returned shape \(2,\) for a batch of 3 "
                                         r"rows; expected \(3,\) or \(3, outputs\)"):
        call_host(lambda A: A[:2, 0], X, "short")
    with pytest.raises(ValueError, match=r"the model two returned 2 outputs per row .* but 1 "
                                         "were expected"):
        call_host(lambda A: A, X, "two", n_outputs=1)
    with pytest.raises(ValueError, match="the model labels returned ndarray values that are not "
                                         "numbers"):
        call_host(lambda A: np.array(["a", "b", "c"]), X, "labels")


def test_call_host_lets_model_errors_through():
    def boom(A):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="^boom$"):
        call_host(boom, np.ones((2, 2)), "boom_model")

    class Custom(Exception):
        pass

    def custom(A):
        raise Custom("mine")

    with pytest.raises(Custom, match="^mine$"):
        call_host(custom, np.ones((2, 2)), "custom")
