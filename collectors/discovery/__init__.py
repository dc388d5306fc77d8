"""Discovery: every training job of the cluster, found in kube-state-metrics' series.

``kinds`` tells a training pod's job, kind and role from its labels and owner; ``pods``
gathers each pod's facts from the query answers; ``jobs`` turns pods into jobs (roles,
requests, status, times); ``naming`` gives a job its user and recurring group.
"""
