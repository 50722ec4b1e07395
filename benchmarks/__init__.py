"""Side-by-side benchmark of the gateway, a bare-Django ceiling and peers."""
