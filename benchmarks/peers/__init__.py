"""Peer MCP servers, each run from its own throwaway virtualenv."""
