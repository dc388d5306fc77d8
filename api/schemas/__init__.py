"""Request and response bodies of the REST API (units in the field names)."""
