"""Authorization servers the OAuth tests run as separate processes."""
