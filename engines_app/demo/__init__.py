"""Demo engines for the reference project; a site may leave them out."""
