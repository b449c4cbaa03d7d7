"""Turning files into text blocks (readers) and blocks into search chunks (chunking)."""
