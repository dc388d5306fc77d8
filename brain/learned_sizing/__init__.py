"""Learned sizing: a calibrated forecast of each resource's next peak, and the size at a risk.

- ``features``: what a workload's history says (pure numpy);
- ``model``: the forecast, its fit and cross-conformal calibration (``PeakModel``);
- ``trees``: the fitted trees as numpy arrays, for predicting without scikit-learn;
- ``training``: examples from a history of runs, and ``train``;
- ``store``: versioned model files (``brain train`` writes, ``brain serve`` reads);
- ``risk_sizing``: from a forecast to a size and its stated risk.
"""
