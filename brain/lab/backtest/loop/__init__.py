"""Replay through Brain's loop: every run's usage series stepped as a job master runs it.

The series, the harness that steps a run and Brain's policy are ``brain.replay``'s,
shared with the savings report; here:

- ``baselines``: the request as given, one-shot rules, VPA-like, Autopilot-like;
- ``runner``, ``figures``, ``lineup``, ``report``, ``command``: the replay of a whole
  table, its figures, who is compared, the output and ``brain backtest --replay``.
"""
