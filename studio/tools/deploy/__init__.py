"""SSH hosts, host-key checks, connections and deployment sync (no Qt)."""
