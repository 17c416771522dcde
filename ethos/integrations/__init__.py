"""Integrations with other projects, each behind an optional extra."""
