"""Starting a session: preflight, identity, the request, enhancement, launch."""
