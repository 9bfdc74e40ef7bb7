"""The real libraries as non-private references for the ``no_noise`` row of Table 2
(Shi et al. 2021, Section 5: "This study uses Python", Table 2 "when the maximum depth of
the tree is 7").

The paper's no_noise row (Random forest 86.109 %, Adaboost 85.321 %, Xgboost 87.082 %) is
what the usual Python libraries give without noise; the paper names neither the library
nor its settings beyond the depth. These wrappers run them on exactly the rows and the
feature coding the DP estimators see, so the no_noise row can be compared with the
library as well as with our engine's non-private twins (:class:`~dpexp.papers.xgbdp.
estimators.NPXGBoostClassifier` and the comparators' twins):

* :class:`LibraryXGBoostClassifier` -- ``xgboost.XGBClassifier`` (optional package
  ``xgboost``; ``pip install xgboost-cpu`` installs the same module without the CUDA
  libraries);
* :class:`LibraryRandomForestClassifier` -- ``sklearn.ensemble.RandomForestClassifier``;
* :class:`LibraryAdaBoostClassifier` -- ``sklearn.ensemble.AdaBoostClassifier`` whose weak
  learner is a ``DecisionTreeClassifier(max_depth=max_depth)`` (the library default is a
  depth-1 stump).

Every hyperparameter left at ``None`` keeps the library's default; ``max_depth=7`` is the
paper's stated depth. ``encoding="label"`` feeds the dataset's ordinal codes of the
categorical columns (what every estimator of this package sees: Table 1 step 3,
"encoding non-numeric characters"), ``encoding="onehot"`` expands each categorical column
into one indicator per *declared* category (``n_categories``, public metadata; a code
outside the declared range gets no indicator). Not differentially private: these fit the
training data exactly, as the paper's no_noise row does.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

ENCODINGS = ("label", "onehot")
#: The worker count of every library fit: cells already run in parallel.
LIBRARY_THREADS = 1


def encode_features(X: np.ndarray, encoding: str, categorical_features=None,
                    n_categories=None) -> np.ndarray:
    """``X`` as the library sees it: ordinal codes as they are (``"label"``) or one
    indicator column per declared category of each categorical feature (``"onehot"``).

    ``categorical_features`` (boolean mask) and ``n_categories`` are the dataset's public
    schema; without them no feature is categorical and both encodings are the identity.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    if encoding == "label" or categorical_features is None:
        return X
    mask = np.asarray(categorical_features, dtype=bool)
    if mask.shape != (X.shape[1],):
        raise ValueError(f"categorical_features has {mask.size} entries for {X.shape[1]} features")
    if mask.any() and n_categories is None:
        raise ValueError("encoding='onehot' needs n_categories (the declared category count "
                         "of every categorical feature)")
    cols = []
    for j in range(X.shape[1]):
        if mask[j]:
            cols.append((X[:, j, None] == np.arange(int(n_categories[j]))[None, :]).astype(np.float64))
        else:
            cols.append(X[:, j, None])
    return np.hstack(cols)


def declared_binary_classes(y, classes) -> np.ndarray:
    """The two labels: the declared ``classes`` when given (they fix ``classes_`` even
    when a fold lacks one), else those of ``y``; a clear error unless there are two."""
    check_classification_targets(y)
    out = np.unique(np.asarray(y) if classes is None else np.asarray(classes))
    if out.size != 2:
        raise ValueError("Only binary classification is supported (Table 2 is binary): "
                         f"need exactly 2 classes, got {out.size} class(es) ({out.tolist()!r})")
    unknown = np.setdiff1d(np.unique(y), out)
    if unknown.size:
        raise ValueError(f"y has label(s) {unknown.tolist()!r} outside the declared classes "
                         f"{out.tolist()!r}")
    return out


class _LibraryClassifier(ClassifierMixin, BaseEstimator):
    """Shared fit/predict: encode, fit the library model on ``y`` as 0/1, map back."""

    def _library_model(self):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _encode(self, X: np.ndarray) -> np.ndarray:
        return encode_features(X, self.encoding, self.categorical_features, self.n_categories)

    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite=True)
        self.classes_ = declared_binary_classes(y, self.classes)
        y01 = (y == self.classes_[-1]).astype(np.int64)
        Xe = self._encode(X)
        if np.unique(y01).size < 2:
            # a training fold with one declared class only: the libraries reject it
            self.model_, self.constant_ = None, float(y01[0])
        else:
            self.model_, self.constant_ = self._library_model().fit(Xe, y01), None
        self.n_encoded_features_ = int(Xe.shape[1])
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "classes_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.model_ is None:
            p1 = np.full(X.shape[0], self.constant_)
        else:
            p1 = self.model_.predict_proba(self._encode(X))[:, 1]
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X) -> np.ndarray:
        p1 = self.predict_proba(X)[:, 1]  # checks fitted first
        return self.classes_[(p1 > 0.5).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = False
        return tags


def _set(params: dict) -> dict:
    """The hyperparameters that override a library default (``None`` keeps it)."""
    return {k: v for k, v in params.items() if v is not None}


class LibraryXGBoostClassifier(_LibraryClassifier):
    """``xgboost.XGBClassifier`` (library defaults unless set; needs ``xgboost``).

    ``objective`` and ``max_bin`` exist for the engine-vs-library comparison (squared
    error as in the paper's Section 3.2, a coarser histogram as in our engine)."""

    def __init__(self, *, n_estimators=None, max_depth=None, learning_rate=None,
                 objective=None, max_bin=None, encoding="label", categorical_features=None,
                 n_categories=None, classes=None, random_state=None):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.objective = objective
        self.max_bin = max_bin
        self.encoding = encoding
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state

    def _library_model(self):
        import xgboost  # optional: AlgorithmInfo.requires makes the runner check it first

        params = _set({"n_estimators": self.n_estimators, "max_depth": self.max_depth,
                       "learning_rate": self.learning_rate, "objective": self.objective,
                       "max_bin": self.max_bin})
        return xgboost.XGBClassifier(**params, n_jobs=LIBRARY_THREADS,
                                     random_state=self.random_state)

    def predict_proba(self, X) -> np.ndarray:
        proba = super().predict_proba(X)
        # reg:squarederror predicts a score, not a probability: clip it into [0, 1]
        return np.clip(proba, 0.0, 1.0)


class LibraryRandomForestClassifier(_LibraryClassifier):
    """``sklearn.ensemble.RandomForestClassifier`` (library defaults unless set)."""

    def __init__(self, *, n_estimators=None, max_depth=None, encoding="label",
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.encoding = encoding
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state

    def _library_model(self):
        from sklearn.ensemble import RandomForestClassifier

        params = _set({"n_estimators": self.n_estimators, "max_depth": self.max_depth})
        return RandomForestClassifier(**params, n_jobs=LIBRARY_THREADS,
                                      random_state=self.random_state)


class LibraryAdaBoostClassifier(_LibraryClassifier):
    """``sklearn.ensemble.AdaBoostClassifier``; ``max_depth`` sets the depth of its
    decision-tree weak learner (``None``: the library's depth-1 stump)."""

    def __init__(self, *, n_estimators=None, max_depth=None, encoding="label",
                 categorical_features=None, n_categories=None, classes=None,
                 random_state=None):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.encoding = encoding
        self.categorical_features = categorical_features
        self.n_categories = n_categories
        self.classes = classes
        self.random_state = random_state

    def _library_model(self):
        from sklearn.ensemble import AdaBoostClassifier
        from sklearn.tree import DecisionTreeClassifier

        weak = None if self.max_depth is None else DecisionTreeClassifier(max_depth=self.max_depth)
        return AdaBoostClassifier(weak, **_set({"n_estimators": self.n_estimators}),
                                  random_state=self.random_state)
