"""Figures (matplotlib/seaborn); each function takes tidy DataFrames and returns a Figure."""
