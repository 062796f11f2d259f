"""Models: the fixed-second-layer two-layer ReLU net and the hand-built robust network."""
