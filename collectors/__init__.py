"""Collectors: read job load from outside sources (Prometheus) into Brain's store.

This package imports ``brain``; ``brain`` never imports it (entry points wire it in).
"""
