"""Boosting pieces shared by the paper packages: the fit skeleton of every boosted
estimator (:mod:`.base`), binary labels (:mod:`.labels`), GBDT engine pieces shared by
DPBoost, XGBoost-DP, InPrivate and the Gaussian BDT (:mod:`.gbdt`)."""
