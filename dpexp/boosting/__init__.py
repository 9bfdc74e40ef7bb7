"""Boosting helpers shared by the paper packages: binary labels (:mod:`.labels`), GBDT
engine pieces shared by DPBoost, XGBoost-DP, InPrivate and the Gaussian BDT
(:mod:`.gbdt`)."""
