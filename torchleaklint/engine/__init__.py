"""Discovery, per-file linting, fixing and writing."""
