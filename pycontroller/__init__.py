"""pycontroller: client-go's controller machinery for Python.

The public names are re-exported here once their modules land; see DESIGN.md.
"""

from __future__ import annotations

__all__: list[str] = []
