"""Database access: models, engine and migrations."""
