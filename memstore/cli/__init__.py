"""CLI placeholder."""
