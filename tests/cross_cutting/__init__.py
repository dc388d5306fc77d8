"""Suites that cut across the source tree rather than test one part of it: schemathesis
over the whole API, concurrent calls, pool pressure, the tenancy sweep over every
operation."""
