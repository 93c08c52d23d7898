"""The ``ragnb`` command: one module per command group, each parsing, calling the library and
printing."""
