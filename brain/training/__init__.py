"""The learned recommender as a service: ``brain train``, and in ``brain serve`` the
newest model loaded and retrained on a schedule. Above ``brain.backtest`` (whose run
sources it trains on) and ``brain.recommending`` (the model)."""
