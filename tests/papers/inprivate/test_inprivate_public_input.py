"""Public input and randomness of InPrivate Digging (issue 16 items 2, 6, 7).

* the label set is declared (``classes``), never read from the training labels;
* the participants' shares are public (``1/N`` or ``records_per_participant /
  n_records``), never computed from the private number of records;
* the record partition comes from the structure stream (``random_state``), every
  mechanism draw from the noise stream (``noise_rng``);
* a fit that reads public input from the private data is marked not DP.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dpexp.papers.inprivate.audit import (
    SHARE_FLIPPED,
    SHARE_N,
    SHARE_RECORDS_PER_PARTICIPANT,
    SHARE_STRUCTURE_SEED,
    share_boundary_data,
)
from dpexp.papers.inprivate.estimators import (
    InPrivateClassifier,
    InPrivateNPClassifier,
    InPrivateRegressor,
)
from dpexp.papers.inprivate.formulas import (
    DataDependentShareWarning,
    assign_chunks,
    participant_share,
    round_shares,
)
from dpexp.privacy import record_ids
from dpexp.privacy.public import DataDependentClassesWarning, DataDependentDomainWarning
from dpexp.privacy.randomness import estimator_streams, secure_generator, seeded_noise

DOM = np.array([[-6.0, 6.0]] * 4)


@pytest.fixture(scope="module")
def data():
    return make_classification(400, 4, n_informative=2, n_redundant=0, random_state=0)


def _clf(**kw) -> InPrivateClassifier:
    base = dict(epsilon=1.0, n_participants=2, depth=3, feature_domain=DOM, classes=[0, 1],
                random_state=0)
    return InPrivateClassifier(**{**base, **kw})


# ----------------------------------------------------------------------------- classes


def test_declared_classes_survive_a_fold_without_a_class(data):
    X, y = data
    only0 = y == 0
    est = _clf().fit(X[only0], y[only0])
    assert est.classes_.tolist() == [0, 1]
    assert est.predict_proba(X[:5]).shape == (5, 2)
    assert set(est.predict(X)) <= {0, 1}
    assert est.accountant_.is_dp


def test_declared_classes_on_the_no_privacy_baseline(data):
    X, y = data
    est = InPrivateNPClassifier(n_participants=2, depth=3, feature_domain=DOM,
                                classes=["a", "b"], random_state=0)
    est.fit(X, np.where(y == 1, "b", "a"))
    assert est.classes_.tolist() == ["a", "b"]


def test_classes_from_the_labels_warn_and_are_not_dp(data):
    X, y = data
    with pytest.warns(DataDependentClassesWarning):
        est = _clf(classes=None).fit(X, y)
    assert not est.accountant_.is_dp
    assert any("classes" in r for r in est.accountant_.not_dp_reasons)


def test_label_outside_the_declared_classes_is_a_clear_error(data):
    X, y = data
    with pytest.raises(ValueError, match="outside the declared classes"):
        _clf(classes=[0, 2]).fit(X, y)


# ----------------------------------------------------------------------------- shares


def test_participant_share_is_public():
    assert participant_share(4) == 0.25
    assert participant_share(4, 100, 1000) == pytest.approx(0.1)
    assert participant_share(4, 900, 1000) == 0.25  # at most 1/N
    with pytest.raises(ValueError, match="n_records"):
        participant_share(4, 100)
    with pytest.raises(ValueError, match="n_records"):
        participant_share(4, 100, 0)


def test_share_boundary_seed_is_what_the_audit_says():
    """At the audit's structure seed a share ``6 / n`` drops exactly SHARE_FLIPPED when n
    goes from 7 to 8 (so the broken audit target has a four-record leak to find)."""
    rpp, n = SHARE_RECORDS_PER_PARTICIPANT, SHARE_N
    small, big = share_boundary_data()

    def owners(data, share: float) -> np.ndarray:
        rng = np.random.default_rng(estimator_streams(SHARE_STRUCTURE_SEED).structure)
        ids = record_ids(data.X, np.where(data.y == 1, 1.0, -1.0))  # as fit keys them
        return assign_chunks(ids, 1, share, round_shares(1), rng)[0]

    before, after = owners(small, rpp / n), owners(big, rpp / (n + 1))
    assert np.all(before == 0)
    assert np.flatnonzero(after[:n] < 0).tolist() == list(SHARE_FLIPPED)
    assert after[n] == 0  # the added record, a copy of a class-0 record, shares their chunk
    # declared n_records: the same share for both, so only the added record may differ
    assert np.array_equal(owners(big, rpp / n)[:n], before)


def _exact_leaf(d, **kw) -> float:
    """The exact (No-Priv) one-leaf model of the share-boundary data."""
    est = InPrivateNPClassifier(n_participants=1, depth=1, feature_domain=np.array([[0.0, 1.0]]),
                                classes=[0, 1], random_state=SHARE_STRUCTURE_SEED,
                                records_per_participant=SHARE_RECORDS_PER_PARTICIPANT, **kw)
    return float(est.fit(d.X, d.y).trees_[0].value[0, 0])


def test_adding_a_record_moves_no_other_record_between_chunks():
    """Regression (issue 16 item 6): with ``share = records_per_participant / n`` adding
    one record dropped four others from the chunk, and the exact leaf jumped from 1/7
    (4 records at +1, 3 at -1) to -1 (3 records at -1). With the declared ``n_records``
    only the added record (label -1) joins: (4 - 3 - 1) / 8 = 0."""
    d, d_plus = share_boundary_data()
    assert _exact_leaf(d, n_records=SHARE_N) == pytest.approx(1 / 7)
    assert _exact_leaf(d_plus, n_records=SHARE_N) == pytest.approx(0.0)
    # the pre-fix share, from each dataset's own size: four other records leave
    assert _exact_leaf(d_plus, n_records=SHARE_N + 1) == pytest.approx(-1.0)


def test_share_from_the_private_n_warns_and_is_not_dp(data):
    X, y = data
    with pytest.warns(DataDependentShareWarning):
        est = _clf(records_per_participant=50).fit(X, y)
    assert not est.accountant_.is_dp
    assert any("n_records" in r for r in est.accountant_.not_dp_reasons)
    declared = _clf(records_per_participant=50, n_records=400).fit(X, y)
    assert declared.accountant_.is_dp
    assert declared.diagnostics_["records_per_participant_expected"] == pytest.approx(50)


@pytest.mark.parametrize("bad", [0, -3])
def test_bad_n_records_is_a_clear_error(data, bad):
    X, y = data
    with pytest.raises(ValueError, match="n_records"):
        _clf(records_per_participant=50, n_records=bad).fit(X, y)


# ----------------------------------------------------------------------------- randomness


def _chunks(est, X, y, noise_rng) -> list[np.ndarray]:
    cfg = est._protocol_config(est._budget()[0], est._bin(X)[0])
    nodes, _ = est._make_nodes(X, np.where(y == 1, 1.0, -1.0), cfg,
                               estimator_streams(est.random_state, noise_rng), None)
    return [np.sort(nd.X[:, 0]) for nd in nodes]


def test_partition_comes_from_the_structure_stream_only(data):
    X, y = data
    est = _clf(n_participants=3)
    a = _chunks(est, X, y, None)
    b = _chunks(est, X, y, np.random.default_rng(123))
    c = _chunks(est, X, y, secure_generator())
    for u, v, w in zip(a, b, c, strict=True):
        assert np.array_equal(u, v) and np.array_equal(u, w)
    other = _chunks(_clf(n_participants=3, random_state=1), X, y, None)
    assert not all(np.array_equal(u, v) for u, v in zip(a, other, strict=True))


def test_noise_comes_from_noise_rng(data):
    X, y = data

    def leaves(est):
        return np.concatenate([t.value.ravel() for t in est.trees_])

    same1 = leaves(_clf(noise_rng=np.random.default_rng(7)).fit(X, y))
    same2 = leaves(_clf(noise_rng=np.random.default_rng(7)).fit(X, y))
    other = leaves(_clf(noise_rng=np.random.default_rng(8)).fit(X, y))
    default = leaves(_clf().fit(X, y))
    assert np.array_equal(same1, same2)
    assert not np.array_equal(same1, other)
    assert not np.array_equal(default, leaves(_clf().fit(X, y)))  # fresh noise by default
    seeded = [leaves(_clf(noise_rng=seeded_noise(0)).fit(X, y)) for _ in range(2)]
    assert np.array_equal(*seeded)  # reproducible: an explicit choice (issue #38)
    est = _clf(noise_rng=secure_generator()).fit(X, y)
    assert est.accountant_.epsilon_spent == pytest.approx(1.0)


def test_noise_rng_must_be_a_generator(data):
    X, y = data
    with pytest.raises(TypeError, match="noise_rng"):
        _clf(noise_rng=3).fit(X, y)


# ----------------------------------------------------------------------------- not-DP marks


def test_data_dependent_domains_and_downsampling_are_marked(data):
    X, y = data
    with pytest.warns(DataDependentDomainWarning):
        no_dom = _clf(feature_domain=None).fit(X, y)
    assert any("feature_domain" in r for r in no_dom.accountant_.not_dp_reasons)
    down = _clf(binning="downsample").fit(X, y)
    assert any("downsample" in r for r in down.accountant_.not_dp_reasons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataDependentDomainWarning)
        reg = InPrivateRegressor(epsilon=1.0, n_participants=2, depth=3, feature_domain=DOM,
                                 random_state=0).fit(X, y * 10.0)
    assert any("label_domain" in r for r in reg.accountant_.not_dp_reasons)
    ok = InPrivateRegressor(epsilon=1.0, n_participants=2, depth=3, feature_domain=DOM,
                            label_domain=(0.0, 10.0), random_state=0).fit(X, y * 10.0)
    assert ok.accountant_.is_dp and ok.accountant_.epsilon_spent == pytest.approx(1.0)
