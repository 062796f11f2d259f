"""Dataset generators and loaders (each deterministic given its seed)."""
