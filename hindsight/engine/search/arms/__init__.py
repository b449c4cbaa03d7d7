"""Recall's arms, one module each: semantic, keyword, entity and temporal, and how an arm's
statement runs (running.py). Each returns the ids of its hits in rank order."""
