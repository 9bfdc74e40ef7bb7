"""SYNTHETIC weather data for the temperature example of Peinemann's Gaussian BDT slides.

The slides ("Temperature prediction") predict the temperature in 3 hours from three
features: sun in the last hour (yes/no), rain in the last hour (yes/no) and the current
temperature in Celsius. No data set is given, so :func:`weather_temperature` generates a
clearly labelled, seeded synthetic stand-in (it is *not* measured weather):

* ``temp_now`` ~ N(12, 8^2) clipped to the public domain [-20, 40] °C;
* ``rain_last_hour`` ~ Bernoulli(0.25); ``sun_last_hour`` ~ Bernoulli(0.6) without rain,
  Bernoulli(0.1) with rain;
* ``temp_in_3h = temp_now + 1.8 sun - 1.2 rain - 0.08 (temp_now - 12) + N(0, 1.5^2)``
  (sun warms, rain cools, mean reversion towards 12 °C), clipped to the public label
  domain [-25, 45] °C.

Columns (in order): ``sun_last_hour`` (categorical, codes 0/1), ``rain_last_hour``
(categorical, codes 0/1), ``temp_now`` (numeric); label ``temp_in_3h`` (regression).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEATURE_NAMES = ["sun_last_hour", "rain_last_hour", "temp_now"]
LABEL_NAME = "temp_in_3h"
FEATURE_DOMAIN = np.array([[0.0, 1.0], [0.0, 1.0], [-20.0, 40.0]])
CATEGORICAL = np.array([True, True, False])
N_CATEGORIES = np.array([2, 2, 0])
LABEL_DOMAIN = (-25.0, 45.0)


@dataclass
class WeatherData:
    """Generated rows plus the public metadata the estimators need."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    feature_domain: np.ndarray
    categorical_features: np.ndarray
    n_categories: np.ndarray
    label_domain: tuple[float, float]

    def public_metadata(self) -> dict:
        return {"feature_domain": self.feature_domain,
                "categorical_features": self.categorical_features,
                "n_categories": self.n_categories, "label_domain": self.label_domain}


def weather_temperature(n_samples: int = 10000, seed: int = 0) -> WeatherData:
    """``n_samples`` synthetic hourly observations (see the module docstring), seeded."""
    if int(n_samples) < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples!r}")
    rng = np.random.default_rng([int(seed), 20240611])
    n = int(n_samples)
    temp = np.clip(rng.normal(12.0, 8.0, n), *FEATURE_DOMAIN[2])
    rain = (rng.random(n) < 0.25).astype(np.float64)
    sun = (rng.random(n) < np.where(rain > 0, 0.1, 0.6)).astype(np.float64)
    future = temp + 1.8 * sun - 1.2 * rain - 0.08 * (temp - 12.0) + rng.normal(0.0, 1.5, n)
    X = np.column_stack([sun, rain, temp])
    return WeatherData(
        X=X, y=np.clip(future, *LABEL_DOMAIN), feature_names=list(FEATURE_NAMES),
        feature_domain=FEATURE_DOMAIN.copy(), categorical_features=CATEGORICAL.copy(),
        n_categories=N_CATEGORIES.copy(), label_domain=LABEL_DOMAIN,
    )
