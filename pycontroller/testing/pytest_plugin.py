"""pytest plugin (entry point ``pytest11``): fixtures for the embedded API server."""

from __future__ import annotations
