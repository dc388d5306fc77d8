"""Backtest: how would each recommender have sized a history of runs?

The runs are replayed in time order; each is sized by every recommender from the
earlier runs of its workload only, and the size is compared with what the run used.

The run table and its sources (``trace``, ``db_source``), the runs a recommender sees
and registered optimizers as recommenders are ``brain.replay``'s, shared with the
service.

- ``engine``: the replay; ``metrics``: the figures; ``runner``: both, plus knob sweeps;
- ``baselines``: the request as given and the simple rules; ``lineup``: which
  recommenders are compared;
- ``report``, ``chart``: output; ``command``: ``brain backtest``.

Run durations: Bitbrains runs (a ``day`` per run) are ``samples`` x 5 minutes, the
GenAI GPU runs (an ``hour`` per run) ``samples`` x 1 minute.
"""
