"""Savings on a site's own history: Brain's default pipeline replayed on its finished jobs
(``report``, on the runs and samples ``brain.replay.site_runs`` reads);
``command`` is ``brain report savings``."""
