"""The terminal: commands, rendering, the chat prompt."""
