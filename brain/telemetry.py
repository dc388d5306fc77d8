"""The service's own metrics, exposed on /metrics.

One registry per process object (not the global default) so that several apps in one
test process do not collide.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "brain_http_requests",
            "HTTP requests served, by method, route and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "brain_http_request_duration_seconds",
            "HTTP request latency by route.",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.ingested_points = Counter(
            "brain_ingested_points",
            "Sample points received, by source (api, prometheus) and outcome (stored, duplicate).",
            ["source", "outcome"],
            registry=self.registry,
        )
        self.collector_series = Counter(
            "brain_collector_series",
            "Prometheus series read by the collector, by outcome (matched, unmatched).",
            ["outcome"],
            registry=self.registry,
        )
        self.collector_errors = Counter(
            "brain_collector_errors",
            "Collector failures talking to Prometheus, by kind.",
            ["kind"],
            registry=self.registry,
        )
        self.grpc_requests = Counter(
            "brain_grpc_requests",
            "DLRover gRPC calls served, by method and outcome (ok, queued, no_plan, "
            "invalid, ignored, timeout, error).",
            ["method", "outcome"],
            registry=self.registry,
        )
        self.grpc_report_write_errors = Counter(
            "brain_grpc_report_write_errors",
            "Queued job-master reports (persist_metrics) that could not be stored.",
            registry=self.registry,
        )
        self.grpc_latency = Histogram(
            "brain_grpc_request_duration_seconds",
            "DLRover gRPC call latency by method.",
            ["method"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
        )
