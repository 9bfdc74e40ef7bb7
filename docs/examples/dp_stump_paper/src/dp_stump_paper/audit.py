"""The example method's end-to-end privacy audit: what ``dpexp audit --all`` runs for it.

The defaults path (dpexp's shared target, :func:`dpexp.audit.defaults_path.defaults_target`):
``make_estimator("dp_stump", ...)`` with epsilon 1, an int ``random_state`` and the
declared metadata, the estimator's own default noise; neighbours differ by a record in an
empty corner; the release is the exact bytes of ``predict_proba`` on a probe grid. Its
broken twin draws the noise from a stream keyed by ``random_state`` (the mistake of
deriving noise from a public seed) and must be flagged. The runner path needs no target of
its own: the estimator takes no ``n_records`` (``dpexp.audit.paths.exemption``).
"""

from dpexp.audit.defaults_path import defaults_targets

AUDIT_TARGETS = defaults_targets(("dp_stump",))
BROKEN_AUDIT_TARGETS = defaults_targets(("dp_stump",), broken=True)
