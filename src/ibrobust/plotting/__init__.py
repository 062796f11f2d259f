"""Figures (matplotlib; seaborn's style, palette and heatmap as matplotlib subsets in
plotting.style); each function takes tidy DataFrames and returns a Figure."""
