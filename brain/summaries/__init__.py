"""Job summaries, computed and kept: per job, role and node, so raw samples can be aged
out. ``summarize_job`` computes and stores a job's summary; the history an optimizer
sees is built from these summaries by ``brain.history``, and ``brain.portraits``
presents them.

- ``compute`` (with ``usage``, ``series``, ``speed`` and ``hours``): a summary from a
  job's rows and raw samples; ``store``: summaries written, and which jobs need one;
- ``refresher``: running and stale jobs' summaries kept current inside ``brain serve``,
  then ``retention`` (raw samples of summarized jobs deleted);
- ``command``: ``brain summarize``.
"""

from brain.summaries.store import summarize_job

__all__ = ["summarize_job"]
