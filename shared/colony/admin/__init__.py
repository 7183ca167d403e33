"""The admin function's HTTP edge (``functions/admin``): erasure and retention for org admins."""
