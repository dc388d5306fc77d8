"""Use cases over the store. Each function takes a Session; callers own the transaction."""
