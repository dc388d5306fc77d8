"""The offline tools: commands that study Brain on recorded or simulated runs.

- ``backtest``: ``brain backtest``, how each recommender would have sized a history of
  runs, and ``--replay`` through Brain's loop;
- ``simulation``: ``brain simulate``, a simulated job and job master driving Brain;
- ``training``: ``brain train``, the learned recommender fitted on a history of runs.

``brain serve`` imports none of them (``tests/test_layering.py``). They build on the
core (``brain.replay``, ``brain.learned_sizing``, ``brain.optimizing``), which never
imports them; only ``brain.cli`` names their commands.
"""
