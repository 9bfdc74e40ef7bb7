"""Fig. 8's diagnostic, in its two readings: a released label that is not a most frequent
label (``changed_majority_fraction``) and one that is not the arg-max of the counts, ties
going to the first class (``changed_argmax_fraction``, the reading the paper's values fit)."""

from __future__ import annotations

import numpy as np
import pytest

import dpexp.papers.fletcher.forest as forest_module
from dpexp.papers.fletcher.forest import FletcherForestClassifier


@pytest.fixture()
def recorded(monkeypatch):
    """Every (counts, released labels) pair the fit draws, tree by tree."""
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    real = forest_module.choose_labels

    def spy(counts, **kwargs):
        labels = real(counts, **kwargs)
        seen.append((counts.copy(), labels.copy()))
        return labels

    monkeypatch.setattr(forest_module, "choose_labels", spy)
    return seen


def test_both_readings_count_what_they_say(recorded):
    rng = np.random.default_rng(3)
    X = rng.random((600, 4))
    y = (X[:, 0] + 0.3 * rng.random(600) > 0.65).astype(int)
    clf = FletcherForestClassifier(epsilon=1.0, n_trees=20, leaf_rule="smooth_2017", classes=[0, 1],
                                   feature_domain=np.array([[0.0, 1.0]] * 4), random_state=0).fit(X, y)
    counts = np.concatenate([c for c, _ in recorded])
    labels = np.concatenate([lab for _, lab in recorded])
    released = counts[np.arange(labels.size), labels]
    top = counts.max(axis=1)
    tied = (counts == top[:, None]).sum(axis=1) > 1
    d = clf.diagnostics_
    assert d["changed_majority_fraction"] == pytest.approx(np.mean(released < top))
    assert d["changed_argmax_fraction"] == pytest.approx(np.mean(labels != counts.argmax(axis=1)))
    # the two differ exactly by the tied leaves that release a tied label other than the first
    extra = np.mean(tied & (released == top) & (labels != counts.argmax(axis=1)))
    assert d["changed_argmax_fraction"] - d["changed_majority_fraction"] == pytest.approx(extra)
    assert tied.any()  # small leaves tie: the case that separates the readings occurs here
