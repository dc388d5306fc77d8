"""DLRover's gRPC ``brain.Brain`` service, served beside the REST API by ``brain serve``.

An unmodified DLRover job master (``optimizeMode: cluster`` with
``DLROVER_BRAIN_SERVICE_ADDR=host:port``) asks this service for resources and reports its
job to it. The messages are DLRover's own generated stubs (``dlrover.proto``), so both
ends share one definition byte for byte.

This package is Brain's DLRover adapter: DLRover's protocol, naming, units and CRD live
here and nowhere else (docs/architecture.md maps its modules); the core it calls takes
and gives neutral data.
"""
