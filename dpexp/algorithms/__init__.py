"""Algorithms: one module per paper's algorithm family, each a scikit-learn estimator."""
