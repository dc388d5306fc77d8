"""Histories of runs, and their replay through Brain's loop: what the savings report
(``brain.savings``) runs inside ``brain serve`` and the backtest (``brain.lab.backtest``)
measures.

- ``trace``: the normalized run table, ``RunSource`` and the CSV loader (columns
  understood are listed there); ``db_source``: the same table from Brain's job summaries;
- ``resources``: the resources judged and their columns; ``runs``: what a recommender
  sees (the run it sizes, the runs before it); ``adapters``: registered optimizers as
  recommenders;
- ``series``: the samples of each run, attached to the run table;
- ``harness``: one run stepped through a policy (allocation, decisions at the master's
  cadence, OOM kills, restarts, progress lost);
- ``brain_policy``: Brain's default pipeline (create, running and OOM stages) on
  in-memory contexts; ``screen``: the samples its running stage can act on;
- ``site_runs``: a site's finished jobs as runs to replay, with their samples.
"""
