"""The pure domain: decay math, policies, tables, inputs, roles' plan: no I/O."""
