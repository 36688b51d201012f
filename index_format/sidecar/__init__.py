"""Range-bitmap sidecars next to bitmap global index files (spec section 5)."""
