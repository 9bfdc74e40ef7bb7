"""LightGBM at its library defaults, as a non-private reference of the leaderboard.

LightGBM's scikit-learn classes take ``verbose`` only through ``**kwargs``, which the
registry cannot set (it accepts the parameters a default instance reports). These
subclasses change two defaults and nothing else: ``verbose=-1`` (a fit prints nothing:
thousands of cells would flood the output) and ``n_jobs=1`` (cells already run in
parallel). Every other parameter is LightGBM's default.
"""

from __future__ import annotations

from lightgbm import LGBMClassifier, LGBMRegressor

#: The defaults these classes change (see the module docstring).
QUIET = {"verbose": -1, "n_jobs": 1}


class LightGBMDefaultClassifier(LGBMClassifier):
    """``lightgbm.LGBMClassifier`` at its defaults, silent and on one thread."""

    def __init__(self, **params):
        super().__init__(**{**QUIET, **params})


class LightGBMDefaultRegressor(LGBMRegressor):
    """``lightgbm.LGBMRegressor`` at its defaults, silent and on one thread."""

    def __init__(self, **params):
        super().__init__(**{**QUIET, **params})
