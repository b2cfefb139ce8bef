"""Pure domain code: no AWS, no I/O, no environment."""
