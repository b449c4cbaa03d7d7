"""Notifying the outside world of a bank's events: webhooks."""
