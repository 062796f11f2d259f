"""Analysis: lambda decomposition, cosine matrices, margins, critical radii."""
