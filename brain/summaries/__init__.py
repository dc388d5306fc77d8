"""Job summaries: what portraits and history read, so raw samples can be aged out.

``summarize_job`` computes and stores a job's summary; ``related_history`` builds the
history an optimizer sees from summaries.
"""

from brain.summaries.history import related_history
from brain.summaries.store import summarize_job

__all__ = ["related_history", "summarize_job"]
