"""What the API, the console and ``/metrics`` show of job summaries: readers of
``brain.summaries`` (which never imports this package), writing nothing but the summary
of a related run that finished moments ago.

- ``jobs``: portraits: one job's (its nodes too), an owner's, and totals and rankings
  over the jobs that ended in a window;
- ``priorities``: a score and a priority class per user or group, from their totals;
- ``suggestions``: what a new run should request, by the create stage on related history;
- ``spend``: dollars over sets of jobs; ``trend``: hours, OOM kills and cost per ISO week;
- ``job_table``, ``overview``: the console's list of jobs and its first page's counts;
- ``metrics``: the waste gauges of ``/metrics``, per namespace, user and group.
"""
