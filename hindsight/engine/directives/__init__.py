"""Directives: standing instructions a bank's owner gives reflect and mental models (priority, an
active flag, tags that scope them), put into reflect's prompt highest priority first. Imports
banks, rules and errors."""
