"""The audit log: who read or changed which bank, when, with what outcome; never its content."""
