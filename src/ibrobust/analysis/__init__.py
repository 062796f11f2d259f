"""Analysis: lambda decomposition, cosine matrices, robust-accuracy tables and radii."""
