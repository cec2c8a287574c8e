"""Conversations: follow-ups over cited papers, and their saved history."""
