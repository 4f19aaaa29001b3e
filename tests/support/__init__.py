"""Helpers shared by test modules (importable as ``support``: pytest's ``pythonpath``
puts ``tests/`` on ``sys.path``; test modules themselves are not importable)."""
