"""The services: sweep, LTP, recall, consolidation, the daemon, the engine that composes them."""
