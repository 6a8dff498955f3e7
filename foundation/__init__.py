"""Foundation: modules every layer may use and that import nothing else of doc-index."""
