"""dpexp: reproduce the experiments of the papers on differentially private tree ensembles."""

__version__ = "0.1.0"
