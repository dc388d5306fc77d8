"""Replay through Brain's loop: every run's usage series stepped as a job master runs it.

- ``series``: the samples of each run, attached to the run table;
- ``harness``: one run stepped through a policy (allocation, decisions at the master's
  cadence, OOM kills, restarts, progress lost);
- ``brain_policy``: Brain's default pipeline (create, running and OOM stages) on
  in-memory contexts; ``screen``: the samples its running stage can act on;
- ``baselines``: the request as given, one-shot rules, VPA-like, Autopilot-like;
- ``runner``, ``figures``, ``lineup``, ``report``, ``command``: the replay of a whole
  table, its figures, who is compared, the output and ``brain backtest --replay``.
"""
