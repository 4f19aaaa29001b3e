"""The Network controller: seed 004's sample-crd controller, the smallest complete example.

``controller.py`` (wiring and sync) and ``__main__.py`` (the CLI); ``types.py`` is
generated from ``crds/network.yaml`` by ``python -m pycontroller.gen``. README.md maps
every line to the client-go step it comes from.
"""
