"""OAuth 2.1 resource server: JWT and introspected access tokens.

``backend.OAuthBackend`` is the Django auth backend; ``jwt`` and
``introspection`` check a token at one authorization server; ``jwks`` and
``fetch`` talk to the servers with a finite timeout; ``resource`` knows the
canonical resource URL of a mount and its RFC 9728 metadata URL.
"""
