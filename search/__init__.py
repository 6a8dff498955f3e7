"""Search: from a loaded cache and a query to the answer (ranking, then packing)."""
