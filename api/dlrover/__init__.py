"""DLRover's gRPC ``brain.Brain`` service, served beside the REST API by ``brain serve``.

An unmodified DLRover job master (``optimizeMode: cluster`` with
``DLROVER_BRAIN_SERVICE_ADDR=host:port``) asks this service for resources and reports its
job to it. The messages are DLRover's own generated stubs (``dlrover.proto``), so both
ends share one definition byte for byte.
"""
