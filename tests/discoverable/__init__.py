"""A tiny installed app whose ``engines`` module autodiscovery must find."""
