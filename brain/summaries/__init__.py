"""Job summaries: what portraits, suggestions and history read, so raw samples can be
aged out. ``summarize_job`` computes and stores a job's summary; the history an
optimizer sees is built from these summaries by ``brain.history``.
"""

from brain.summaries.store import summarize_job

__all__ = ["summarize_job"]
