"""Paimon's `fm` global index family: an exact, partitioned FM index over a STRING column (substring search)."""
