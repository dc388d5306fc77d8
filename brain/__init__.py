"""Brain: resource optimization for distributed ML training jobs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("brain")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
