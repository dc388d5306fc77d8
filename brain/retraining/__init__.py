"""The learned recommender inside ``brain serve``: the newest model loaded and retrained
on a schedule (``service``) from every role of the database's succeeded jobs (``runs``).
Above ``brain.replay`` (whose database run source it trains on) and
``brain.learned_sizing`` (the model)."""
