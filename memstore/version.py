"""The release, in a module of its own: ``memstore --version`` must not load the library."""

__version__ = "0.1.0"
