"""The services: sweep, LTP, recall, the lifecycle (merge, forget, purge, erase), the daemon,
the engine that composes them."""
