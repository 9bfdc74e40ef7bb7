"""Experiment specs, grid expansion, the cached parallel runner and the results table."""
