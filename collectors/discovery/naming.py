"""Who a discovered job belongs to and which recurring group it is a run of.

The user is a configured pod label (``BRAIN_DISCOVERY_USER_LABEL``), else the job's
namespace. The group is a configured pod label (``BRAIN_DISCOVERY_GROUP_LABEL``), else
the job's name without its run suffix, so the daily runs of one pipeline form one group:

- the name is cut at ``-``, ``_`` and ``.``;
- trailing parts are dropped while they are a number (``20261120``, ``0830``, ``3``), a
  run counter (``run3``, ``r3``) or the random suffix Kubernetes' ``generateName`` adds
  (five of ``bcdfghjklmnpqrstvwxz2456789`` with at least one digit);
- the first part always stays.

``ctr-train-20261120`` and ``ctr-train-20261121`` → ``ctr-train``;
``ctr-train-20261121-0830`` → ``ctr-train``; ``bert-ft-run3`` → ``bert-ft``;
``mnist-x7k2p`` → ``mnist``; ``resnet50``, ``llama-70b`` and ``gpt2-v2`` stay as they are.
The group key is ``<user>/<group>``, as for jobs registered without one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from brain.domain import default_group_key

_SEPARATOR = re.compile(r"([-_.])")
_GENERATED = r"(?=[a-z0-9]*[2456789])[bcdfghjklmnpqrstvwxz2456789]{5}"
_RUN_PART = re.compile(rf"^(\d+|run\d+|r\d+|{_GENERATED})$")


def run_group(name: str) -> str:
    """``name`` without its trailing run suffix (see the module's rule)."""
    parts = _SEPARATOR.split(name)  # [part, sep, part, sep, part, ...]
    while len(parts) >= 3 and _RUN_PART.match(parts[-1]):
        del parts[-2:]
    return "".join(parts)


def job_user(namespace: str, labels: Mapping[str, str], user_label: str) -> str:
    value = (labels.get(user_label) or "").strip() if user_label else ""
    return value or namespace


def job_group_key(user: str, name: str, labels: Mapping[str, str], group_label: str) -> str:
    value = (labels.get(group_label) or "").strip() if group_label else ""
    return value or default_group_key(user, run_group(name))
