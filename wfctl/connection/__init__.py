"""Where to connect and how: DSN precedence and masking (`dsn.py`), connections with
limits and read-only transactions (`db.py`), the embedded default server (`embedded.py`)."""
