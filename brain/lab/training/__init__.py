"""``brain train``: the learned recommender fitted on a history of runs (a trace or the
database, read as the backtest reads it) and stored for ``brain serve`` to load."""
